/**
 * A bucket's settings, each read from S3 and written back as S3's own document: versioning (a
 * choice), lifecycle rules and CORS (XML, with a form that writes a simple expiration rule), the
 * bucket policy (JSON). Each document is checked before it is sent (well-formed XML, valid JSON);
 * what S3 then refuses is shown with S3's own code and message.
 */
import { h, fill, uid } from './dom.ts';
import { errorText } from './format.ts';
import { breadcrumbs } from './objects.ts';
import { S3RequestError, type BucketDocument } from './s3.ts';
import type { Session } from './session.ts';
import { childText, parseXml, prettyXml, xmlProblem } from './xml.ts';

function versioningBox(s: Session, bucket: string, current: string | null, problem?: string): HTMLElement {
  const status = current === null ? '' : childText(parseXml(current).documentElement, 'Status');
  const note = h('p', { role: 'status', className: 'hint' }, problem ?? `Now: ${status || 'never enabled'}.`);
  const choice = (value: string, label: string) => {
    const id = uid('versioning');
    return h(
      'div',
      { className: 'check' },
      h('input', { type: 'radio', name: 'versioning', id, value, checked: status === value }),
      h('label', { for: id }, label),
    );
  };
  const form = h(
    'form',
    {
      'aria-labelledby': 'versioning-title',
      onsubmit: async (e: SubmitEvent) => {
        e.preventDefault();
        const value = form.querySelector<HTMLInputElement>('input[name=versioning]:checked')?.value;
        if (!value) return void (note.textContent = 'Choose Enabled or Suspended.');
        try {
          await s.s3.putDocument(
            bucket,
            'versioning',
            `<?xml version="1.0" encoding="UTF-8"?><VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>${value}</Status></VersioningConfiguration>`,
          );
          note.textContent = `Saved: ${value}.`;
        } catch (err) {
          note.textContent = `Refused: ${errorText(err)}`;
        }
      },
    },
    h('h3', { id: 'versioning-title' }, 'Versioning'),
    choice('Enabled', 'Enabled: every write keeps the previous version'),
    choice('Suspended', 'Suspended: new writes replace the null version'),
    h('button', { type: 'submit' }, 'Save versioning'),
    note,
  );
  return form;
}

function check(which: BucketDocument, text: string): string | null {
  if (which === 'policy') {
    try {
      const p = JSON.parse(text);
      return p && typeof p === 'object' && Array.isArray(p.Statement) ? null : 'a policy is a JSON object with a Statement list';
    } catch (err) {
      return `not JSON: ${(err as Error).message}`;
    }
  }
  const problem = xmlProblem(text);
  if (problem) return `not well-formed XML: ${problem}`;
  const root = parseXml(text).documentElement.localName;
  const expected = which === 'lifecycle' ? 'LifecycleConfiguration' : 'CORSConfiguration';
  return root === expected ? null : `the document's root element must be ${expected}, not ${root}`;
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

const TITLES: Record<Exclude<BucketDocument, 'versioning'>, string> = {
  lifecycle: 'Lifecycle rules',
  cors: 'CORS rules',
  policy: 'Bucket policy',
};

function documentBox(s: Session, bucket: string, which: Exclude<BucketDocument, 'versioning'>, current: string | null, readProblem?: string): HTMLElement {
  const id = uid(which);
  const area = h('textarea', { id, rows: 10, spellcheck: 'false', className: 'doc', 'data-document': which });
  area.value = current === null ? '' : which === 'policy' ? prettyJson(current) : prettyXml(current);
  const note = h('p', { role: 'status', className: 'hint' }, readProblem ?? (current === null ? 'None set.' : ''));
  const save = async () => {
    const problem = check(which, area.value);
    if (problem) return void (note.textContent = `Not sent: ${problem}`);
    try {
      await s.s3.putDocument(bucket, which, area.value);
      note.textContent = 'Saved.';
    } catch (err) {
      note.textContent = `Refused: ${errorText(err)}`;
    }
  };
  const remove = async () => {
    if (!confirm(`Remove the ${TITLES[which].toLowerCase()} of ${bucket}?`)) return;
    try {
      await s.s3.deleteDocument(bucket, which);
      area.value = '';
      note.textContent = 'Removed.';
    } catch (err) {
      note.textContent = `Refused: ${errorText(err)}`;
    }
  };
  return h(
    'section',
    { 'aria-labelledby': `${id}-title`, className: 'document' },
    h('h3', { id: `${id}-title` }, TITLES[which]),
    h('label', { for: id }, which === 'policy' ? 'Policy (JSON)' : `${TITLES[which]} (S3's XML)`),
    area,
    which === 'lifecycle' && expirationForm(area),
    h(
      'div',
      { className: 'toolbar' },
      h('button', { type: 'button', onclick: () => void save() }, 'Save'),
      h('button', { type: 'button', onclick: () => void remove() }, 'Remove'),
    ),
    note,
  );
}

/** Writes one expiration rule into the lifecycle document (added to the rules already there). */
function expirationForm(area: HTMLTextAreaElement): HTMLElement {
  const prefix = h('input', { id: uid('rule-prefix'), spellcheck: 'false' });
  const days = h('input', { id: uid('rule-days'), type: 'number', min: 1, value: 30, required: true });
  const esc = (v: string) => v.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  return h(
    'fieldset',
    { className: 'inline' },
    h('legend', {}, 'Add an expiration rule'),
    h('label', { for: prefix.id }, 'Keys starting with'),
    prefix,
    h('label', { for: days.id }, 'expire after (days)'),
    days,
    h(
      'button',
      {
        type: 'button',
        onclick: () => {
          const n = Number(days.value);
          if (!Number.isInteger(n) || n < 1) return days.focus();
          const rule = `<Rule><ID>expire-${esc(prefix.value) || 'all'}-${n}d</ID><Filter><Prefix>${esc(prefix.value)}</Prefix></Filter><Status>Enabled</Status><Expiration><Days>${n}</Days></Expiration></Rule>`;
          const text = area.value.trim();
          area.value = prettyXml(
            text.includes('</LifecycleConfiguration>')
              ? text.replace('</LifecycleConfiguration>', `${rule}</LifecycleConfiguration>`)
              : `<?xml version="1.0" encoding="UTF-8"?><LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${rule}</LifecycleConfiguration>`,
          );
        },
      },
      'Add rule',
    ),
  );
}

async function read(s: Session, bucket: string, which: BucketDocument): Promise<{ text: string | null; problem?: string }> {
  try {
    return { text: await s.s3.getDocument(bucket, which) };
  } catch (err) {
    return {
      text: null,
      problem: `Not readable: ${errorText(err)}${err instanceof S3RequestError && err.status === 403 ? ' (this key may not read it)' : ''}`,
    };
  }
}

export async function settingsView(s: Session, bucket: string): Promise<HTMLElement> {
  const [versioning, lifecycle, cors, policy] = await Promise.all((['versioning', 'lifecycle', 'cors', 'policy'] as const).map((w) => read(s, bucket, w)));
  const view = h('section', { className: 'settings-view', 'aria-labelledby': 'settings-title' });
  fill(
    view,
    breadcrumbs(bucket, '', 'settings'),
    h('h2', { id: 'settings-title' }, `Settings of ${bucket}`),
    versioningBox(s, bucket, versioning.text, versioning.problem),
    documentBox(s, bucket, 'lifecycle', lifecycle.text, lifecycle.problem),
    documentBox(s, bucket, 'cors', cors.text, cors.problem),
    documentBox(s, bucket, 'policy', policy.text, policy.problem),
  );
  return view;
}
