/**
 * A bucket's settings: its usage and quota first (usage.ts, admin keys), then each setting read from S3 and written back as S3's own document: versioning (a
 * choice); lifecycle rules (XML, with a form that adds a simple expiration rule), CORS, the bucket
 * policy (JSON), default encryption, Object Lock defaults, access logging and the bucket's tags.
 * Each document is checked before it is sent (well-formed XML with the right root element, JSON
 * with a Statement list); what S3 then refuses is shown with S3's own code and message.
 */
import { h, fill, uid } from './dom.ts';
import { errorText } from './format.ts';
import { breadcrumbs } from './objects.ts';
import { S3RequestError, type BucketDocument } from './s3.ts';
import type { Session } from './session.ts';
import { childText, parseXml, prettyXml, xmlProblem } from './xml.ts';
import { usageBox } from './usage.ts';

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

/** The documents of the settings screen beyond versioning, in S3's own format. */
type EditableDocument = Exclude<BucketDocument, 'versioning'>;

interface DocumentKind {
  title: string;
  /** The XML document's root element; absent: JSON (the policy). */
  root?: string;
  /** S3 has a Delete call for it. */
  removable: boolean;
  /** How to switch it off when S3 has no Delete call. */
  offHint?: string;
}

const DOCUMENTS: Record<EditableDocument, DocumentKind> = {
  lifecycle: { title: 'Lifecycle rules', root: 'LifecycleConfiguration', removable: true },
  cors: { title: 'CORS rules', root: 'CORSConfiguration', removable: true },
  policy: { title: 'Bucket policy', removable: true },
  encryption: { title: 'Default encryption', root: 'ServerSideEncryptionConfiguration', removable: true },
  'object-lock': {
    title: 'Object Lock defaults',
    root: 'ObjectLockConfiguration',
    removable: false,
    offHint: 'Object Lock cannot be switched off once on (as on S3).',
  },
  logging: { title: 'Access logging', root: 'BucketLoggingStatus', removable: false, offHint: 'To stop logging, save an empty <BucketLoggingStatus/>.' },
  tagging: { title: 'Bucket tags', root: 'Tagging', removable: true },
  // Event notifications (docs/NOTIFICATIONS.md): S3 has no Delete call for them.
  notification: {
    title: 'Event notifications',
    root: 'NotificationConfiguration',
    removable: false,
    offHint: 'To stop every notification, save an empty <NotificationConfiguration/>.',
  },
};

function check(which: EditableDocument, text: string): string | null {
  const root = DOCUMENTS[which].root;
  if (!root) {
    try {
      const p = JSON.parse(text);
      return p && typeof p === 'object' && Array.isArray(p.Statement) ? null : 'a policy is a JSON object with a Statement list';
    } catch (err) {
      return `not JSON: ${(err as Error).message}`;
    }
  }
  const problem = xmlProblem(text);
  if (problem) return `not well-formed XML: ${problem}`;
  const found = parseXml(text).documentElement.localName;
  return found === root ? null : `the document's root element must be ${root}, not ${found}`;
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function documentBox(s: Session, bucket: string, which: EditableDocument, current: string | null, readProblem?: string): HTMLElement {
  const kind = DOCUMENTS[which];
  const id = uid(which);
  const area = h('textarea', { id, rows: 8, spellcheck: 'false', className: 'doc', 'data-document': which });
  area.value = current === null ? '' : kind.root ? prettyXml(current) : prettyJson(current);
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
    if (!confirm(`Remove the ${kind.title.toLowerCase()} of ${bucket}?`)) return;
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
    h('h3', { id: `${id}-title` }, kind.title),
    h('label', { for: id }, kind.root ? `${kind.title} (S3's XML)` : `${kind.title} (JSON)`),
    area,
    which === 'lifecycle' && expirationForm(area),
    h(
      'div',
      { className: 'toolbar' },
      h('button', { type: 'button', onclick: () => void save() }, 'Save'),
      kind.removable && h('button', { type: 'button', onclick: () => void remove() }, 'Remove'),
      kind.offHint && h('span', { className: 'hint' }, kind.offHint),
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
  const editable = Object.keys(DOCUMENTS) as EditableDocument[];
  const [usage, [versioning, ...documents]] = await Promise.all([
    usageBox(s, bucket),
    Promise.all((['versioning', ...editable] as const).map((w) => read(s, bucket, w))),
  ]);
  const view = h('section', { className: 'settings-view', 'aria-labelledby': 'settings-title' });
  fill(
    view,
    breadcrumbs(bucket, '', 'settings'),
    h('h2', { id: 'settings-title' }, `Settings of ${bucket}`),
    usage,
    versioningBox(s, bucket, versioning.text, versioning.problem),
    editable.map((which, i) => documentBox(s, bucket, which, documents[i]!.text, documents[i]!.problem)),
  );
  return view;
}
