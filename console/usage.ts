/**
 * A bucket's usage and quota (docs/QUOTAS.md), at the top of its settings: what it holds (bytes
 * over every version, objects, versions, delete markers, multipart uploads in flight, bytes on the
 * backends), its quota and how much of it is used, the backend traffic counted for it and an
 * estimated monthly cost. It reads and sets them through the admin API (`POST
 * /_shardgate/admin/quota`), which only a key with the admin action may call. Any other key reads
 * the figures read-only from the console's own `GET /_shardgate/console/usage` when its scope
 * may list the whole bucket and the bucket has no policy (app/quota-routes.ts says why); else it
 * is shown the gateway's refusal.
 * A limit is typed as bytes with an optional unit (500MiB, 2GB, 1TiB) or a count; empty: no limit.
 * Each is checked before anything is sent; what the gateway then refuses is shown with its error.
 */
import { h, uid } from './dom.ts';
import { bytes, errorText } from './format.ts';
import { config, type Session } from './session.ts';

interface UsageReport {
  bytes: number;
  objects: number;
  versions: number;
  deleteMarkers: number;
  currentObjects: number;
  storedBytes: number;
  inlineBytes: number;
  uploads: number;
  multipartBytes: number;
  quota: { bytes: number | null; objects: number | null; setAt: number; shares?: Record<string, unknown> } | null;
  /** The storage policy the config gives the bucket, and its data's units by shards left per k+m (admin keys only). */
  policy?: { name: string; codec: string; k: number; m: number; small: { mode: string; threshold: number; replicas: number }; backends?: string[] } | null;
  redundancy?: Record<string, { k: number; m: number; byShardsLeft: { shardsLeft: number; units: number }[]; belowK: { units: number } }>;
  quotaUsed: { bytes: number; objects: number };
  traffic: { since: string; requests: number; egressBytes: number } | null;
  clientTraffic?: { since: string; requests: number; bytesIn: number; egressBytes: number } | null;
  cost: { storagePerMonth: number; egress: number; requests: number; unpricedBackends: string[] } | null;
}

const UNITS: Record<string, number> = { '': 1, B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KIB: 2 ** 10, MIB: 2 ** 20, GIB: 2 ** 30, TIB: 2 ** 40 };

/** "500MiB" -> "524288000"; "" -> "none"; null when it is neither a size nor a count. */
export function limitOf(text: string, sized: boolean): string | null {
  const t = text.trim();
  if (t === '') return 'none';
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(t);
  const unit = m ? UNITS[m[2]!.toUpperCase()] : undefined;
  if (!m || unit === undefined || (!sized && unit !== 1)) return null;
  const n = Math.round(Number(m[1]) * unit);
  return Number.isSafeInteger(n) ? String(n) : null;
}

async function quotaCall(s: Session, bucket: string, query: Record<string, string> = {}): Promise<UsageReport> {
  const url = new URL('/_shardgate/admin/quota', s.s3.origin);
  url.searchParams.set('bucket', bucket);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  return (await (await s.s3.request('POST', url)).json()) as UsageReport;
}

function figures(r: UsageReport): HTMLElement {
  const row = (label: string, value: string, name: string) => [h('dt', {}, label), h('dd', { 'data-usage': name }, value)];
  return h(
    'dl',
    { className: 'props usage' },
    row('Quota: bytes', share(r.quotaUsed.bytes, r.quota?.bytes, bytes), 'quota-bytes'),
    row('Quota: objects', share(r.quotaUsed.objects, r.quota?.objects, String), 'quota-objects'),
    row('Bytes stored (every version)', bytes(r.bytes), 'bytes'),
    row('Multipart uploads in flight', `${r.uploads} (${bytes(r.multipartBytes)})`, 'multipart'),
    row('Objects (versions holding data)', `${r.objects} (${r.currentObjects} current)`, 'objects'),
    row('Versions, delete markers', `${r.versions}, ${r.deleteMarkers}`, 'versions'),
    row('On the backends', `${bytes(r.storedBytes)} of shard files, ${bytes(r.inlineBytes)} inline`, 'stored'),
    r.policy &&
      row(
        'Storage policy',
        `${r.policy.name}: ${r.policy.codec} ${r.policy.k}+${r.policy.m}${r.policy.backends ? ` over ${r.policy.backends.join(', ')}` : ''}; objects under ${bytes(r.policy.small.threshold)} ${r.policy.small.mode === 'inline' ? 'inline' : `in ${r.policy.small.replicas} replicas`}`,
        'policy',
      ),
    r.redundancy &&
      row(
        'Redundancy (units by shards left)',
        Object.entries(r.redundancy)
          .map(
            ([name, p]) =>
              `${name}: ${p.byShardsLeft.map((s) => `${s.units} with ${s.shardsLeft}`).join(', ')}${p.belowK.units ? `, ${p.belowK.units} UNREADABLE` : ''}`,
          )
          .join('; ') || 'no coded units',
        'redundancy',
      ),
    r.clientTraffic &&
      row(
        'Requests from clients',
        `${r.clientTraffic.requests} requests, ${bytes(r.clientTraffic.bytesIn)} in, ${bytes(r.clientTraffic.egressBytes)} egress since ${r.clientTraffic.since}`,
        'clients',
      ),
    r.traffic && row('Backend traffic', `${r.traffic.requests} requests, ${bytes(r.traffic.egressBytes)} egress since ${r.traffic.since}`, 'traffic'),
    r.cost &&
      row(
        'Estimated cost',
        `$${r.cost.storagePerMonth.toFixed(2)} a month of storage; $${(r.cost.egress + r.cost.requests).toFixed(2)} of traffic so far${r.cost.unpricedBackends.length ? ` (unpriced: ${r.cost.unpricedBackends.join(', ')})` : ''}`,
        'cost',
      ),
  );
}

/** A key without the admin action: the figures read-only, if the gateway gives them to it (console.ts `usage`). */
async function readOnly(s: Session, bucket: string, box: HTMLElement): Promise<HTMLElement> {
  const url = new URL(`${config.base}/usage`, s.s3.origin);
  url.searchParams.set('bucket', bucket);
  try {
    const r = (await (await s.s3.request('GET', url)).json()) as UsageReport;
    const row = (label: string, value: string, name: string) => [h('dt', {}, label), h('dd', { 'data-usage': name }, value)];
    box.append(
      h(
        'dl',
        { className: 'props usage' },
        row('Quota: bytes', share(r.quotaUsed.bytes, r.quota?.bytes, bytes), 'quota-bytes'),
        row('Quota: objects', share(r.quotaUsed.objects, r.quota?.objects, String), 'quota-objects'),
        row('Bytes stored (every version)', bytes(r.bytes), 'bytes'),
        row('Multipart uploads in flight', `${r.uploads} (${bytes(r.multipartBytes)})`, 'multipart'),
        row('Objects (versions holding data)', `${r.objects} (${r.currentObjects} current)`, 'objects'),
        row('Versions, delete markers', `${r.versions}, ${r.deleteMarkers}`, 'versions'),
      ),
      h('p', { className: 'hint' }, 'Read-only: a key with the admin action sets the quota.'),
    );
  } catch (err) {
    box.append(h('p', { className: 'hint', 'data-usage-refused': '' }, `Not shown to this key: ${errorText(err)}`));
  }
  return box;
}

const share = (used: number, limit: number | null | undefined, show: (n: number) => string) =>
  limit === null || limit === undefined ? `${show(used)} (no limit)` : `${show(used)} of ${show(limit)} (${limit ? Math.round((used / limit) * 100) : 100}%)`;

export async function usageBox(s: Session, bucket: string): Promise<HTMLElement> {
  const box = h(
    'section',
    { className: 'document', 'aria-labelledby': 'usage-title', 'data-panel': 'usage' },
    h('h3', { id: 'usage-title' }, 'Usage and quota'),
  );
  if (!s.admin) return readOnly(s, bucket, box);
  const note = h('p', { role: 'status', className: 'hint', 'data-quota-note': '' });
  const shown = h('div', {});
  const bytesInput = h('input', { id: uid('quota-bytes'), spellcheck: 'false', placeholder: 'no limit', 'data-quota': 'bytes' });
  const objectsInput = h('input', { id: uid('quota-objects'), spellcheck: 'false', placeholder: 'no limit', inputmode: 'numeric', 'data-quota': 'objects' });
  const show = (r: UsageReport) => {
    shown.replaceChildren(figures(r));
    bytesInput.value = r.quota?.bytes === null || r.quota?.bytes === undefined ? '' : String(r.quota.bytes);
    objectsInput.value = r.quota?.objects === null || r.quota?.objects === undefined ? '' : String(r.quota.objects);
  };
  const send = async (query: Record<string, string>, done: string) => {
    try {
      show(await quotaCall(s, bucket, query));
      note.textContent = done;
    } catch (err) {
      note.textContent = `Refused: ${errorText(err)}`;
    }
  };
  try {
    show(await quotaCall(s, bucket));
  } catch (err) {
    note.textContent = `Not readable: ${errorText(err)}`;
  }
  const form = h(
    'form',
    {
      'aria-label': 'Quota',
      onsubmit: (e: SubmitEvent) => {
        e.preventDefault();
        const b = limitOf(bytesInput.value, true);
        const o = limitOf(objectsInput.value, false);
        if (b === null)
          return void ((note.textContent = 'Not sent: bytes is a number with an optional KB, MB, GB, TB, KiB, MiB, GiB or TiB, or empty.'), bytesInput.focus());
        if (o === null) return void ((note.textContent = 'Not sent: objects is a whole number, or empty.'), objectsInput.focus());
        void send({ bytes: b, objects: o }, 'Saved: writes past it are refused from the next request on.');
      },
    },
    h(
      'fieldset',
      { className: 'inline' },
      h('legend', {}, 'Quota (empty: no limit)'),
      h('label', { for: bytesInput.id }, 'Bytes (e.g. 500MiB)'),
      bytesInput,
      h('label', { for: objectsInput.id }, 'Objects'),
      objectsInput,
    ),
    h(
      'div',
      { className: 'toolbar' },
      h('button', { type: 'submit' }, 'Save quota'),
      h(
        'button',
        {
          type: 'button',
          onclick: () => {
            if (confirm(`Remove the quota of ${bucket}?`)) void send({ clear: '1' }, 'Removed: no quota.');
          },
        },
        'Remove quota',
      ),
    ),
  );
  box.append(shown, form, note);
  return box;
}
