/**
 * The gateway's health for admin keys: the signed status document the status page reads
 * (`GET /_shardgate/status`, which needs the admin action): the checks with what to do, the
 * backends, the data and its redundancy, and each bucket's size, versions, quota used and a month's storage cost. A key without admin is refused
 * by the gateway, and the console does not offer the screen to it.
 */
import { h } from './dom.ts';
import { bytes, when } from './format.ts';
import { href } from './route.ts';
import type { Session } from './session.ts';

interface Status {
  version: string;
  health: 'ok' | 'warning' | 'critical';
  checks: { name: string; state: string; detail: string; action?: string }[];
  backends: {
    id: string;
    domain: string;
    state: string;
    fleetState: string;
    probe: { at: number; ok: boolean; ms: number } | null;
    recent: { requests: number; errorRate: number | null; latencyMs: { p50: number | null; p99: number | null } };
    lastError?: string | null;
  }[];
  data: {
    buckets: number;
    objects: number;
    bytes: number;
    storedBytes: number;
    overhead: number | null;
    degradedObjects: number;
    redundancy: { atRisk: number; lost: number };
    uploads: number;
  };
  buckets?: {
    bucket: string;
    objects: number;
    bytes: number;
    storedBytes: number;
    degradedObjects: number;
    versions?: number;
    quota?: { bytes: number | null; objects: number | null; usedBytes: number; usedObjects: number };
    monthlyStorageCost?: number | null;
  }[];
}

/** The larger share of a quota's limits in use, "62 % of 1.00 GiB"; empty without a quota (docs/QUOTAS.md). */
function quotaUsed(q: NonNullable<Status['buckets']>[number]['quota']): string {
  if (!q) return '';
  const parts = [
    q.bytes === null ? null : `${q.bytes ? Math.round((q.usedBytes / q.bytes) * 100) : 100} % of ${bytes(q.bytes)}`,
    q.objects === null ? null : `${q.objects ? Math.round((q.usedObjects / q.objects) * 100) : 100} % of ${q.objects} objects`,
  ];
  return parts.filter(Boolean).join(', ');
}

const ms = (v: number | null | undefined) => (v === null || v === undefined ? '' : `${Math.round(v)} ms`);

export async function healthView(s: Session): Promise<HTMLElement> {
  const status = (await (await s.s3.request('GET', new URL('/_shardgate/status?hours=1', s.s3.origin))).json()) as Status;
  const d = status.data;
  const card = (label: string, value: string) =>
    h('div', { className: 'card' }, h('div', { className: 'card-label' }, label), h('div', { className: 'card-value' }, value));
  return h(
    'section',
    { 'aria-labelledby': 'health-title' },
    h('h2', { id: 'health-title' }, 'Gateway health ', h('span', { className: `pill ${status.health}`, 'data-health': status.health }, status.health)),
    h('p', { className: 'hint' }, `shardgate ${status.version}; the full page with its charts: `, h('a', { href: '/_shardgate/ui' }, 'status page'), '.'),
    h(
      'ul',
      { className: 'checks', 'aria-label': 'Checks' },
      status.checks.map((c) =>
        h(
          'li',
          { className: c.state },
          h('strong', {}, `${c.name}: ${c.state}`),
          ` ${c.detail}`,
          c.action ? h('span', { className: 'hint' }, ` ${c.action}`) : null,
        ),
      ),
    ),
    h(
      'div',
      { className: 'cards' },
      card('Buckets', String(d.buckets)),
      card('Objects', String(d.objects)),
      card('Data', bytes(d.bytes)),
      card('On backends', bytes(d.storedBytes)),
      card('Overhead', d.overhead === null ? '' : `×${d.overhead.toFixed(2)}`),
      card('Degraded objects', String(d.degradedObjects)),
      card('Units at risk / lost', `${d.redundancy.atRisk} / ${d.redundancy.lost}`),
      card('Unfinished uploads', String(d.uploads)),
    ),
    h('h3', { id: 'backends-title' }, 'Backends'),
    h(
      'table',
      { className: 'list', 'aria-labelledby': 'backends-title' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Backend', 'Failure domain', 'State', 'In the fleet', 'Last probe', 'Requests (5 min)', 'Errors', 'p50', 'p99', 'Last error'].map((t) =>
            h('th', { scope: 'col' }, t),
          ),
        ),
      ),
      h(
        'tbody',
        {},
        status.backends.map((b) =>
          h(
            'tr',
            { 'data-state': b.state },
            h('td', {}, b.id),
            h('td', {}, b.domain),
            h('td', {}, b.state),
            h('td', {}, b.fleetState),
            h('td', {}, b.probe ? `${b.probe.ok ? 'ok' : 'failed'} ${ms(b.probe.ms)}, ${when(new Date(b.probe.at).toISOString())}` : 'none yet'),
            h('td', { className: 'num' }, String(b.recent.requests)),
            h('td', { className: 'num' }, b.recent.errorRate === null ? '' : `${(b.recent.errorRate * 100).toFixed(1)} %`),
            h('td', { className: 'num' }, ms(b.recent.latencyMs.p50)),
            h('td', { className: 'num' }, ms(b.recent.latencyMs.p99)),
            h('td', {}, b.lastError ?? ''),
          ),
        ),
      ),
    ),
    status.buckets &&
      h(
        'section',
        { 'aria-labelledby': 'bucket-sizes-title' },
        h('h3', { id: 'bucket-sizes-title' }, 'Buckets'),
        h(
          'table',
          { className: 'list', 'aria-labelledby': 'bucket-sizes-title' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Bucket', 'Objects', 'Versions', 'Data', 'On backends', 'Quota used', '$ a month', 'Degraded'].map((t) => h('th', { scope: 'col' }, t)),
            ),
          ),
          h(
            'tbody',
            {},
            status.buckets.map((b) =>
              h(
                'tr',
                {},
                h('td', {}, h('a', { href: href('objects', { bucket: b.bucket }) }, b.bucket)),
                h('td', { className: 'num' }, String(b.objects)),
                h('td', { className: 'num' }, b.versions === undefined ? '' : String(b.versions)),
                h('td', { className: 'num' }, bytes(b.bytes)),
                h('td', { className: 'num' }, bytes(b.storedBytes)),
                h('td', { className: 'num', 'data-quota-used': b.bucket }, quotaUsed(b.quota)),
                h('td', { className: 'num' }, b.monthlyStorageCost === undefined || b.monthlyStorageCost === null ? '' : b.monthlyStorageCost.toFixed(2)),
                h('td', { className: 'num' }, String(b.degradedObjects)),
              ),
            ),
          ),
        ),
      ),
  );
}
