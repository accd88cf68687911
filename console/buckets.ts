/** The first screen: the buckets the key sees, where a key scoped to prefixes may start, a new bucket. */
import { h } from './dom.ts';
import { errorText, when } from './format.ts';
import { go, href } from './route.ts';
import { startingPoints, type Session } from './session.ts';

export async function bucketsView(s: Session): Promise<HTMLElement> {
  const buckets = await s.s3.listBuckets();
  const scoped = startingPoints(s).filter((p) => p.prefix);
  const name = h('input', { id: 'new-bucket', required: true, pattern: '[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]', spellcheck: 'false' });
  const problem = h('p', { className: 'error', role: 'alert' });
  return h(
    'section',
    { 'aria-labelledby': 'buckets-title' },
    h('h2', { id: 'buckets-title' }, 'Buckets'),
    buckets.length
      ? h(
          'table',
          { className: 'list', 'aria-labelledby': 'buckets-title' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Created'), h('th', { scope: 'col' }, 'Settings'))),
          h(
            'tbody',
            {},
            buckets.map((b) =>
              h(
                'tr',
                {},
                h('td', {}, h('a', { href: href('objects', { bucket: b.name }) }, b.name)),
                h('td', {}, when(b.created)),
                h('td', {}, h('a', { href: href('settings', { bucket: b.name }), 'aria-label': `Settings of ${b.name}` }, 'Settings')),
              ),
            ),
          ),
        )
      : h('p', {}, 'This key sees no bucket.'),
    scoped.length > 0 &&
      h(
        'section',
        { 'aria-labelledby': 'scope-title' },
        h('h3', { id: 'scope-title' }, 'Your key may list'),
        h(
          'ul',
          {},
          scoped.map((p) => h('li', {}, h('a', { href: href('objects', { bucket: p.bucket, prefix: p.prefix }) }, `${p.bucket}/${p.prefix}`))),
        ),
      ),
    h(
      'form',
      {
        className: 'inline',
        'aria-label': 'Create a bucket',
        onsubmit: async (e: SubmitEvent) => {
          e.preventDefault();
          try {
            await s.s3.createBucket(name.value.trim());
            go('objects', { bucket: name.value.trim() });
          } catch (err) {
            problem.textContent = errorText(err);
          }
        },
      },
      h('label', { for: 'new-bucket' }, 'New bucket'),
      name,
      h('button', { type: 'submit' }, 'Create'),
      problem,
    ),
  );
}
