/**
 * One object: what HeadObject says of it (size, type, ETag, checksums, encryption, user metadata,
 * Object Lock), its tags (edited here), legal hold and retention (changed here in a bucket with
 * Object Lock, where the key may), copy and rename (up to S3's 5 GiB for one CopyObject), a share link (a presigned GET URL with the expiry the user picks, at most
 * S3's 7 days), and its versions and delete markers, any older version of which can be downloaded,
 * restored (copied over the current one: a new version, the old ones kept) or deleted for good.
 */
import { h, fill, uid } from './dom.ts';
import { bytes, errorText, when } from './format.ts';
import { breadcrumbs, download } from './objects.ts';
import { go } from './route.ts';
import type { VersionEntry, VersionPage } from './s3.ts';
import type { Session } from './session.ts';

/** Headers shown as the object's properties, in this order. */
const PROPERTIES: [string, string][] = [
  ['content-type', 'Content type'],
  ['etag', 'ETag'],
  ['last-modified', 'Last modified'],
  ['x-amz-version-id', 'Version ID'],
  ['x-amz-storage-class', 'Storage class'],
  ['x-amz-checksum-crc32', 'Checksum CRC32'],
  ['x-amz-checksum-crc32c', 'Checksum CRC32C'],
  ['x-amz-checksum-crc64nvme', 'Checksum CRC64NVME'],
  ['x-amz-checksum-sha1', 'Checksum SHA-1'],
  ['x-amz-checksum-sha256', 'Checksum SHA-256'],
  ['x-amz-checksum-type', 'Checksum type'],
  ['x-amz-server-side-encryption', 'Server-side encryption'],
  ['x-amz-server-side-encryption-customer-algorithm', 'Customer-key encryption (SSE-C)'],
  ['x-amz-object-lock-mode', 'Object Lock mode'],
  ['x-amz-object-lock-retain-until-date', 'Retained until'],
  ['x-amz-object-lock-legal-hold', 'Legal hold'],
  ['cache-control', 'Cache-Control'],
  ['content-disposition', 'Content-Disposition'],
  ['content-encoding', 'Content-Encoding'],
  ['content-language', 'Content-Language'],
  ['expires', 'Expires'],
  ['x-amz-website-redirect-location', 'Redirect'],
];

const EXPIRIES: [number, string][] = [
  [15 * 60, '15 minutes'],
  [3600, '1 hour'],
  [24 * 3600, '1 day'],
  [7 * 24 * 3600, '7 days (the most S3 allows)'],
];

function properties(head: Headers, bucket: string, key: string): HTMLElement {
  const rows: HTMLElement[] = [
    h('dt', {}, 'Size'),
    h('dd', { 'data-prop': 'size' }, `${bytes(Number(head.get('content-length')))} (${head.get('content-length')} bytes)`),
  ];
  for (const [name, label] of PROPERTIES) {
    const v = head.get(name);
    // `identity` is the gateway keeping the platform from compressing the answer (app.ts), not the object's.
    if (v !== null && !(name === 'content-encoding' && v === 'identity'))
      rows.push(h('dt', {}, label), h('dd', { 'data-prop': name }, name === 'last-modified' ? when(new Date(v).toISOString()) : v));
  }
  if (head.get('x-amz-server-side-encryption') === null && head.get('x-amz-server-side-encryption-customer-algorithm') === null)
    rows.push(h('dt', {}, 'Server-side encryption'), h('dd', { 'data-prop': 'encryption' }, 'none reported'));
  const meta: HTMLElement[] = [];
  head.forEach((v, k) => {
    if (k.startsWith('x-amz-meta-')) meta.push(h('dt', {}, k.slice('x-amz-meta-'.length)), h('dd', {}, v));
  });
  return h(
    'section',
    { 'aria-labelledby': 'props-title' },
    h('h3', { id: 'props-title' }, 'Properties'),
    h('dl', { className: 'props', 'aria-label': `Properties of ${bucket}/${key}` }, rows),
    h('h3', { id: 'meta-title' }, 'User metadata'),
    meta.length ? h('dl', { className: 'props', 'aria-labelledby': 'meta-title' }, meta) : h('p', {}, 'None.'),
  );
}

function shareBox(s: Session, bucket: string, key: string): HTMLElement {
  const select = h(
    'select',
    { id: uid('expiry') },
    EXPIRIES.map(([sec, label]) => h('option', { value: sec, selected: sec === 3600 }, label)),
  );
  const out = h('input', { id: uid('share-url'), readonly: true, className: 'share-url', 'aria-label': 'Share link', hidden: true });
  const note = h('p', { className: 'hint', role: 'status' });
  return h(
    'section',
    { 'aria-labelledby': 'share-title' },
    h('h3', { id: 'share-title' }, 'Share link'),
    h('p', { className: 'hint' }, 'A presigned URL: anyone holding it may download this object until it expires, with the rights of your key.'),
    h('label', { for: select.id }, 'Expires after'),
    select,
    h(
      'button',
      {
        type: 'button',
        onclick: async () => {
          const seconds = Number(select.value);
          out.value = await s.s3.presignGet(bucket, key, seconds);
          out.hidden = false;
          out.select();
          note.textContent = `Valid until ${when(new Date(Date.now() + seconds * 1000).toISOString())}.`;
          try {
            await navigator.clipboard.writeText(out.value);
            note.textContent += ' Copied to the clipboard.';
          } catch {}
        },
      },
      'Create link',
    ),
    out,
    note,
  );
}

/** S3's limits on an object's tags. */
const MAX_TAGS = 10;

function tagsEditor(s: Session, bucket: string, key: string, tags: [string, string][] | null): HTMLElement {
  const section = h('section', { 'aria-labelledby': 'tags-title' }, h('h3', { id: 'tags-title' }, 'Tags'));
  if (tags === null) {
    section.append(h('p', {}, 'Not readable with this key.'));
    return section;
  }
  const rows = h('div', { className: 'tag-rows' });
  const note = h('p', { className: 'hint', role: 'status' });
  const addRow = (k = '', v = '') => {
    const n = rows.children.length + 1;
    const keyInput = h('input', { 'aria-label': `Tag ${n} key`, value: k, maxlength: 128, className: 'tag-key', spellcheck: 'false' });
    const valueInput = h('input', { 'aria-label': `Tag ${n} value`, value: v, maxlength: 256, className: 'tag-value', spellcheck: 'false' });
    const row: HTMLElement = h(
      'div',
      { className: 'toolbar' },
      keyInput,
      valueInput,
      h('button', { type: 'button', 'aria-label': `Remove tag ${n}`, onclick: () => row.remove() }, 'Remove'),
    );
    rows.append(row);
  };
  for (const [k, v] of tags) addRow(k, v);
  if (!tags.length) note.textContent = 'No tags.';
  const read = (): [string, string][] =>
    [...rows.children].map((r) => [(r.querySelector('.tag-key') as HTMLInputElement).value.trim(), (r.querySelector('.tag-value') as HTMLInputElement).value]);
  const save = async () => {
    const list = read().filter(([k, v]) => k || v);
    const keys = list.map(([k]) => k);
    const problem =
      list.length > MAX_TAGS
        ? `at most ${MAX_TAGS} tags`
        : keys.some((k) => !k)
          ? 'every tag needs a key'
          : new Set(keys).size !== keys.length
            ? 'two tags have the same key'
            : null;
    if (problem) return void (note.textContent = `Not sent: ${problem}.`);
    try {
      await s.s3.putTags(bucket, key, list);
      note.textContent = list.length ? 'Saved.' : 'Saved: no tags.';
    } catch (err) {
      note.textContent = `Refused: ${errorText(err)}`;
    }
  };
  section.append(
    rows,
    h(
      'div',
      { className: 'toolbar' },
      h(
        'button',
        { type: 'button', onclick: () => (rows.children.length < MAX_TAGS ? addRow() : void (note.textContent = `At most ${MAX_TAGS} tags.`)) },
        'Add tag',
      ),
      h('button', { type: 'button', onclick: () => void save() }, 'Save tags'),
    ),
    note,
  );
  return section;
}

/** Legal hold and retention of the current version, in a bucket with Object Lock (changes need the key's legal-hold / retention actions). */
function lockBox(s: Session, bucket: string, key: string, head: Headers, refresh: () => void): HTMLElement {
  const note = h('p', { className: 'hint', role: 'status' });
  const hold = head.get('x-amz-object-lock-legal-hold') === 'ON';
  const versionId = head.get('x-amz-version-id') ?? undefined;
  const mode = h(
    'select',
    { id: uid('lock-mode') },
    ['GOVERNANCE', 'COMPLIANCE'].map((m) => h('option', { value: m, selected: head.get('x-amz-object-lock-mode') === m }, m)),
  );
  const until = h('input', { id: uid('lock-until'), type: 'date', required: true });
  const current = head.get('x-amz-object-lock-retain-until-date');
  if (current) until.value = current.slice(0, 10);
  const bypass = h('input', { id: uid('lock-bypass'), type: 'checkbox' });
  const act = async (what: () => Promise<void>, done: string) => {
    try {
      await what();
      note.textContent = done;
      refresh();
    } catch (err) {
      note.textContent = `Refused: ${errorText(err)}`;
    }
  };
  return h(
    'section',
    { 'aria-labelledby': 'lock-title' },
    h('h3', { id: 'lock-title' }, 'Object Lock'),
    h(
      'div',
      { className: 'toolbar' },
      h('span', {}, `Legal hold: ${hold ? 'on' : 'off'}`),
      h(
        'button',
        { type: 'button', onclick: () => void act(() => s.s3.putLegalHold(bucket, key, !hold, versionId), hold ? 'Legal hold lifted.' : 'Legal hold set.') },
        hold ? 'Lift legal hold' : 'Set legal hold',
      ),
    ),
    h(
      'div',
      { className: 'toolbar' },
      h('label', { for: mode.id }, 'Retention'),
      mode,
      h('label', { for: until.id }, 'until'),
      until,
      h('span', { className: 'check' }, bypass, h('label', { for: bypass.id }, 'bypass governance')),
      h(
        'button',
        {
          type: 'button',
          onclick: () => {
            const date = new Date(`${until.value}T00:00:00Z`);
            if (!until.value || Number.isNaN(date.getTime()) || date.getTime() <= Date.now())
              return void (note.textContent = 'Not sent: pick a date in the future.');
            void act(
              () => s.s3.putRetention(bucket, key, mode.value as 'GOVERNANCE' | 'COMPLIANCE', date, { versionId, bypass: bypass.checked }),
              'Retention saved.',
            );
          },
        },
        'Save retention',
      ),
    ),
    note,
  );
}

/** Copy to another key (or bucket), or rename: a copy, then a delete of the source (S3 has no rename). */
function copyBox(s: Session, bucket: string, key: string, problem: HTMLElement): HTMLElement {
  const targetBucket = h('input', { id: uid('copy-bucket'), value: bucket, spellcheck: 'false', required: true });
  const targetKey = h('input', { id: uid('copy-key'), value: key, spellcheck: 'false', required: true, className: 'wide' });
  const note = h('p', { className: 'hint', role: 'status' });
  const run = async (rename: boolean) => {
    const to = { bucket: targetBucket.value.trim(), key: targetKey.value };
    fill(problem, '');
    if (!to.bucket || !to.key) return void (note.textContent = 'Give a bucket and a key.');
    if (to.bucket === bucket && to.key === key) return void (note.textContent = 'That is this object: give another key.');
    try {
      if ((await s.s3.exists(to.bucket, to.key)) && !confirm(`${to.bucket}/${to.key} exists: replace it?`)) return;
      await s.s3.copyObject({ bucket, key }, to);
      if (rename) {
        const failed = await s.s3.deleteObjects(bucket, [{ key }]);
        if (failed.length) return void fill(problem, `Copied, but the source was not deleted: ${failed[0]!.code}: ${failed[0]!.message}`);
        return go('object', to);
      }
      note.textContent = `Copied to ${to.bucket}/${to.key}.`;
    } catch (err) {
      fill(problem, errorText(err));
    }
  };
  return h(
    'section',
    { 'aria-labelledby': 'copy-title' },
    h('h3', { id: 'copy-title' }, 'Copy or rename'),
    h('div', { className: 'toolbar' }, h('label', { for: targetBucket.id }, 'To bucket'), targetBucket, h('label', { for: targetKey.id }, 'key'), targetKey),
    h(
      'div',
      { className: 'toolbar' },
      h('button', { type: 'button', onclick: () => void run(false) }, 'Copy'),
      h('button', { type: 'button', onclick: () => void run(true) }, 'Rename'),
    ),
    note,
  );
}

function versionsBox(s: Session, bucket: string, key: string, refresh: () => void): HTMLElement {
  const table = h('table', { className: 'list versions', 'aria-labelledby': 'versions-title' });
  const problem = h('p', { className: 'error', role: 'alert' });
  const more = h('button', { type: 'button', hidden: true }, 'More versions');
  let next: VersionPage['next'] = null;
  const shown: VersionEntry[] = [];

  const row = (v: VersionEntry) =>
    h(
      'tr',
      { 'data-version': v.versionId, className: v.deleteMarker ? 'marker' : '' },
      h('td', { className: 'mono' }, v.versionId),
      h('td', {}, when(v.modified)),
      h('td', { className: 'num' }, v.deleteMarker ? '' : bytes(v.size)),
      h('td', {}, v.deleteMarker ? 'delete marker' : 'version', v.isLatest ? ' (current)' : ''),
      h(
        'td',
        {},
        !v.deleteMarker &&
          h(
            'button',
            { type: 'button', 'aria-label': `Download version ${v.versionId}`, onclick: () => void download(s, bucket, key, v.versionId) },
            'Download',
          ),
        !v.deleteMarker &&
          !v.isLatest &&
          h(
            'button',
            {
              type: 'button',
              'aria-label': `Restore version ${v.versionId}`,
              onclick: async () => {
                if (!confirm(`Copy version ${v.versionId} over the current one? The current version is kept as an older one.`)) return;
                try {
                  await s.s3.restoreVersion(bucket, key, v.versionId);
                  refresh();
                } catch (err) {
                  fill(problem, errorText(err));
                }
              },
            },
            'Restore',
          ),
        h(
          'button',
          {
            type: 'button',
            className: 'danger',
            'aria-label': `Delete version ${v.versionId} for good`,
            onclick: async () => {
              if (!confirm(`Delete version ${v.versionId} for good? This cannot be undone.`)) return;
              try {
                const failed = await s.s3.deleteObjects(bucket, [{ key, versionId: v.versionId }]);
                if (failed.length) fill(problem, `${failed[0]!.code}: ${failed[0]!.message}`);
                else refresh();
              } catch (err) {
                fill(problem, errorText(err));
              }
            },
          },
          'Delete',
        ),
      ),
    );

  const load = async () => {
    try {
      // Versions of `key` only: the listing by prefix also holds longer keys, and pages may end mid-way.
      const page = await s.s3.listVersions(bucket, key, next ?? undefined);
      shown.push(...page.versions.filter((v) => v.key === key));
      next = page.next && page.next.keyMarker === key ? page.next : null;
      more.hidden = !next;
      fill(
        table,
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Version ID', 'Last modified', 'Size', 'Kind', 'Actions'].map((t) => h('th', { scope: 'col' }, t)),
          ),
        ),
        h(
          'tbody',
          {},
          shown.length ? shown.map(row) : h('tr', {}, h('td', { colspan: 5 }, 'No version (the bucket was never versioned, or the key is gone).')),
        ),
      );
    } catch (err) {
      fill(problem, errorText(err));
    }
  };
  more.addEventListener('click', () => void load());
  void load();
  return h('section', { 'aria-labelledby': 'versions-title' }, h('h3', { id: 'versions-title' }, 'Versions'), problem, table, more);
}

export async function objectView(s: Session, bucket: string, key: string): Promise<HTMLElement> {
  const prefix = key.slice(0, key.lastIndexOf('/') + 1);
  const view = h('section', { className: 'object-view', 'aria-labelledby': 'object-title' });
  const refresh = async () => {
    const problem = h('p', { className: 'error', role: 'alert' });
    let head: Headers | null = null;
    let tags: [string, string][] | null = null;
    try {
      head = await s.s3.headObject(bucket, key);
    } catch (err) {
      fill(problem, `${errorText(err)} (its versions, if any, are below: restore one to bring it back)`);
    }
    if (head) tags = await s.s3.getTags(bucket, key).catch(() => null);
    // Object Lock controls only where the bucket has it (its configuration says Enabled).
    const lock = head ? await s.s3.getDocument(bucket, 'object-lock').catch(() => null) : null;
    const lockEnabled = lock !== null && /<ObjectLockEnabled>Enabled<\/ObjectLockEnabled>/.test(lock);
    fill(
      view,
      breadcrumbs(bucket, prefix, key.slice(prefix.length)),
      h('h2', { id: 'object-title' }, key),
      problem,
      head &&
        h(
          'div',
          { className: 'toolbar', role: 'toolbar', 'aria-label': 'Object' },
          h('button', { type: 'button', onclick: () => void download(s, bucket, key) }, 'Download'),
          h(
            'button',
            {
              type: 'button',
              className: 'danger',
              onclick: async () => {
                if (!confirm(`Delete ${key}? In a versioned bucket this adds a delete marker.`)) return;
                try {
                  const failed = await s.s3.deleteObjects(bucket, [{ key }]);
                  if (failed.length) fill(problem, `${failed[0]!.code}: ${failed[0]!.message}`);
                  else go('objects', { bucket, prefix });
                } catch (err) {
                  fill(problem, errorText(err));
                }
              },
            },
            'Delete',
          ),
        ),
      h(
        'div',
        { className: 'columns' },
        head && properties(head, bucket, key),
        h(
          'div',
          {},
          head && tagsEditor(s, bucket, key, tags),
          head && lockEnabled && lockBox(s, bucket, key, head, () => void refresh()),
          head && shareBox(s, bucket, key),
          head && copyBox(s, bucket, key, problem),
        ),
      ),
      versionsBox(s, bucket, key, () => void refresh()),
    );
  };
  await refresh();
  return view;
}
