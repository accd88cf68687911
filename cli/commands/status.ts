/**
 * `shardgate status`: the gateway's health at a glance (GET /_shardgate/status, signed when a key
 * is given; without one, the public part: no bucket names or error messages).
 */
import { parseArgs } from 'node:util';
import type { Command } from '../command.ts';
import { ago, bytes, duration, percent, printJson, table } from '../format.ts';
import { EVENT_HEADER, eventRows, GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient, type StatusLike } from '../gateway-client.ts';
import { redundancyRows, type PolicyRedundancy } from '../../worker/catalog/redundancy.ts';

const HELP = `usage: shardgate status [--hours N] [--json] [gateway options]

The gateway's health: every backend (state, latency, errors, what it stores), the data (objects,
degraded objects, repair and collector backlogs, scrub progress) and, when signed, every bucket.
Works without a key too (health and totals only).

  --hours N                  how much history --json carries (default 1, at most 24)

${GATEWAY_HELP}`;

/** The version and how long the answering isolate has run ("version unknown" from an older gateway). */
export function buildLine(s: Pick<StatusLike, 'version' | 'isolate'>): string {
  const up = s.isolate?.uptimeSeconds;
  return `version ${s.version ?? 'unknown'}${up === undefined ? '' : `, up ${duration(up)} (the isolate that answered)`}`;
}

/** "6 (whole)", "5", "4 (exactly k)", "below k (lost)": a rung of a policy's ladder, worded as on the status page. */
function shardsLeftLabel(left: string, policy: string): string {
  if (left === 'below_k') return 'below k (lost)';
  const [k, m] = policy.split('+').map(Number);
  return Number(left) === k! + m! ? `${left} (whole)` : Number(left) === k && m! > 0 ? `${left} (exactly k)` : left;
}

/** Units and bytes per policy by shards left: the gateway's, then each bucket's when signed. */
export function redundancyTable(s: StatusLike): string | null {
  const scopes: [string, Record<string, PolicyRedundancy>][] = [
    ['(all)', s.data.redundancy?.byPolicy ?? {}],
    ...(s.buckets ?? []).map((b): [string, Record<string, PolicyRedundancy>] => [b.bucket, b.redundancy?.byPolicy ?? {}]),
  ];
  const rows = scopes.flatMap(([scope, byPolicy]) =>
    redundancyRows(byPolicy).map((r) => [scope, r.policy, shardsLeftLabel(r.shardsLeft, r.policy), String(r.units), bytes(r.bytes)]),
  );
  return rows.length ? table([['BUCKET', 'POLICY', 'SHARDS LEFT', 'UNITS', 'BYTES'], ...rows]) : null;
}

/** "3.2 MiB of 10.0 MiB (32%), 4 of 100 objects", or "-" without a quota (docs/QUOTAS.md). */
/** A bucket's catalog partitions: how many, the largest's versions and catalog size, splits and merges in progress (shardgate partitions BUCKET: each one). */
export function partitionsCell(p: NonNullable<StatusLike['buckets']>[number]['partitions']): string {
  if (!p?.length) return '-';
  const largest = p.reduce((a, b) => (b.versions > a.versions ? b : a));
  const splitting = p.filter((x) => x.splitting !== null).length;
  // A merge is counted once, by the partition going into its neighbour (the neighbour is 'receiving').
  const merging = p.filter((x) => x.merging === 'copying' || x.merging === 'committing').length;
  const moving = [splitting ? `${splitting} splitting` : '', merging ? `${merging} merging` : ''].filter(Boolean);
  return `${p.length} (largest ${largest.versions} versions, ${bytes(largest.databaseBytes)})${moving.map((m) => `, ${m}`).join('')}`;
}

export function quotaCell(q: NonNullable<StatusLike['buckets']>[number]['quota']): string {
  if (!q) return '-';
  const part = (used: string, limit: string, ratio: number) => `${used} of ${limit} (${Math.round(ratio * 100)}%)`;
  return [
    q.bytes === null ? null : part(bytes(q.usedBytes), bytes(q.bytes), q.bytes ? q.usedBytes / q.bytes : 1),
    q.objects === null ? null : part(`${q.usedObjects}`, `${q.objects} objects`, q.objects ? q.usedObjects / q.objects : 1),
  ]
    .filter((x) => x !== null)
    .join(', ');
}

export function render(s: StatusLike): string {
  const d = s.data;
  const lines = [
    `shardgate: ${s.health.toUpperCase()}   ${buildLine(s)}   coder ${s.coder.kernel}${s.signed ? '' : '   (unsigned: give a key to see buckets and errors)'}`,
    '',
    table([
      ['BACKEND', 'DOMAIN', 'STATE', 'P50', 'P99', 'ERRORS', 'LAST OK', 'STORED', 'SHARDS'],
      ...s.backends.map((b) => [
        // A draining or retired backend's SHARDS are what the mover has left (shardgate drain).
        b.fleetState && b.fleetState !== 'active' ? `${b.id} (${b.fleetState})` : b.id,
        b.domain,
        b.maintenance ? `${b.state} (maintenance)` : b.state,
        b.recent.latencyMs.p50 === null ? '-' : `${b.recent.latencyMs.p50} ms`,
        b.recent.latencyMs.p99 === null ? '-' : `${b.recent.latencyMs.p99} ms`,
        percent(b.recent.errorRate),
        ago(b.lastOkAt, s.now),
        bytes(b.storedBytes),
        String(b.storedShards),
      ]),
    ]),
  ];
  for (const b of s.backends) if (b.state === 'down' && !b.maintenance && b.lastError) lines.push(`  ${b.id}: ${b.lastError}`);
  const failing = (s.checks ?? []).filter((c) => c.state !== 'ok');
  if (failing.length) {
    lines.push('');
    for (const c of failing) lines.push(`${c.state.toUpperCase()} ${c.name}: ${c.detail}${c.action ? `\n  what to do: ${c.action}` : ''}`);
  }
  // The deployment review's warnings and what its probes found (a bucket's source, a KMS key's Vault): signed only.
  const warnings = s.deployment?.warnings ?? [];
  if (warnings.length) lines.push('', ...warnings.map((w) => `WARNING deployment: ${w}`));
  else if (s.deployment?.warningCount) lines.push('', `${s.deployment.warningCount} deployment warning(s): give a key to see them`);
  lines.push(
    '',
    `objects ${d.objects} (${bytes(d.bytes)}) in ${d.buckets} bucket(s); stored ${bytes(d.storedBytes)}, overhead ${d.overhead === null ? '-' : d.overhead.toFixed(2) + 'x'} (replication: ${d.replicationOverhead}x)`,
    `degraded objects ${d.degradedObjects} (units ${d.degradedUnits}, missing shards ${d.missingShards}, stuck ${d.repairStuck ?? 0}; at exactly k shards ${d.redundancy?.atRisk ?? 0}${d.redundancy?.atRiskBytes === undefined ? '' : ` (${bytes(d.redundancy.atRiskBytes)})`}, below k ${d.redundancy?.lost ?? 0}${d.redundancy?.lostBytes === undefined ? '' : ` (${bytes(d.redundancy.lostBytes)})`}); repairs done ${s.upkeep.repairsDone}, failed ${s.upkeep.repairsFailed}`,
    `collector backlog ${d.garbage.due} due of ${d.garbage.queued} queued; reservations ${d.reservations.held} held, ${d.reservations.expired} orphaned; uploads in progress ${d.uploads}`,
    `scrub (${d.scrub.mode}): ${d.scrub.checked} of ${d.scrub.units} units checked in the current passes (${percent(d.scrub.coverage)}); oldest unchecked ${d.scrub.oldestUnchecked ? `${d.scrub.oldestUnchecked.key === undefined ? '' : `${d.scrub.oldestUnchecked.bucket}/${d.scrub.oldestUnchecked.key} `}since ${ago(d.scrub.oldestUnchecked.since, s.now)}` : '-'}; oldest complete pass ${ago(d.scrub.oldestPassCompletedAt, s.now)}`,
  );
  // Per storage class (issue 44); absent from an older gateway's status.
  const classes = Object.entries(d.classes ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  if (classes.length > 1 || (classes.length === 1 && classes[0]![0] !== 'STANDARD'))
    lines.push(`by storage class: ${classes.map(([c, u]) => `${c} ${u.objects} version(s), ${bytes(u.bytes)} (stored ${bytes(u.storedBytes)})`).join('; ')}`);
  const rs = d.restripe;
  if (rs && (rs.buckets || rs.leftUnits)) {
    lines.push(
      `re-stripe: ${rs.buckets} bucket(s) moving to their policy now, ${rs.leftUnits} unit(s) (${bytes(rs.leftBytes)}) left, ${rs.rewrittenVersions} version(s) (${bytes(rs.rewrittenBytes)}) rewritten; ${rs.bytesPerSecond === null ? 'no rate yet' : `${bytes(rs.bytesPerSecond)}/s`}${rs.secondsRemaining === null ? '' : `, about ${duration(Math.ceil(rs.secondsRemaining))} left`} (shardgate restripe)`,
    );
  }
  const short = Object.entries(d.redundancy?.byMissing ?? {}).sort(([a], [b]) => Number(a) - Number(b));
  if (short.length)
    lines.push(
      `units by shards missing (recorded, or on a backend unreachable now): ${short.map(([n, units]) => `${n} missing ${units}`).join(', ')} (of ${d.scrub.units} units; the rest whole)`,
    );
  const r = s.upkeep.rates;
  if (r) {
    const left = (sec: number | null, work: boolean) =>
      !work ? 'nothing left' : sec === null ? 'no progress in the last 5 minutes' : `about ${duration(sec)} left at that rate`;
    // The rate of the current run of work (from when it began), not of the whole window: active-rate.ts.
    const over = (since: number | null | undefined, left: number | null) =>
      since && left !== 0 ? ` over the last ${duration(Math.max(1, Math.round((s.now - since) / 1000)))}` : '';
    lines.push(
      `repair ${r.repairUnitsPerMinute} units/min${over(r.repairActiveSince, r.repairSecondsLeft)} (${left(r.repairSecondsLeft, r.repairSecondsLeft !== 0)}); scrub ${r.scrubUnitsPerMinute} units/min${over(r.scrubActiveSince, r.scrubSecondsLeft)} (${left(r.scrubSecondsLeft, r.scrubSecondsLeft !== 0)})`,
    );
  }
  const ops = Object.entries(s.s3?.recent ?? {}).sort(([, a], [, b]) => b.requests - a.requests);
  if (ops.length) {
    const ms = (x: number | null) => (x === null ? '-' : `${x} ms`);
    lines.push(
      `S3 latency, last 5 minutes, to the response headers: ${ops
        .slice(0, 6)
        .map(([op, l]) => `${op} ${l.requests}x p50 ${ms(l.p50Ms)} p99 ${ms(l.p99Ms)}`)
        .join('; ')}${ops.length > 6 ? `; ${ops.length - 6} more operation(s)` : ''}`,
    );
  }
  const cb = s.isolate?.codingBudget;
  if (cb) {
    lines.push(
      `coding budget (the isolate that answered): ${bytes(cb.heldBytes)} of ${bytes(cb.capacityBytes)} held by ${cb.holders} request(s), ${cb.waiters} waiting${cb.oldestHeldMs === null ? '' : `, oldest held ${Math.round(cb.oldestHeldMs / 1000)} s`}${cb.reclaimed ? `; ${cb.reclaimed} lease(s) RECLAIMED from ended requests (a bug: see the log)` : ''}`,
    );
  }
  const ladder = redundancyTable(s);
  if (ladder) lines.push('', 'redundancy: units and their bytes by shards left, per policy (k+m)', ladder);
  if (s.buckets?.length) {
    lines.push(
      '',
      table([
        ['BUCKET', 'OBJECTS', 'VERSIONS', 'BYTES', 'STORED', 'QUOTA', '$/MONTH', 'REQUESTS', 'EGRESS', 'DEGRADED', 'SCRUB', 'LAST PASS', 'PARTITIONS'],
        ...s.buckets.map((b) => [
          b.bucket,
          String(b.objects),
          b.versions === undefined ? '-' : `${b.versions} (${b.deleteMarkers ?? 0} markers)`,
          bytes(b.bytes) + (b.multipartBytes ? ` +${bytes(b.multipartBytes)} parts` : ''),
          bytes(b.storedBytes),
          quotaCell(b.quota),
          b.monthlyStorageCost === undefined || b.monthlyStorageCost === null ? '-' : b.monthlyStorageCost.toFixed(2),
          b.clientTraffic ? String(b.clientTraffic.requests) : '-',
          b.clientTraffic ? bytes(b.clientTraffic.bytesOut) : '-',
          String(b.degradedObjects),
          percent(b.scrubCoverage),
          ago(b.scrub.lastPassCompletedAt, s.now),
          partitionsCell(b.partitions),
        ]),
      ]),
    );
    const events = eventRows(s.buckets);
    if (events.length)
      lines.push('', 'event notifications per bucket and destination (shardgate events BUCKET: the last events)', table([EVENT_HEADER, ...events]));
  }
  return lines.join('\n');
}

export const command: Command = {
  name: 'status',
  summary: 'backends, data health, backlogs and scrub progress of a running gateway',
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS, hours: { type: 'string' } }, strict: true });
    const client = new GatewayClient(values, process.env, false);
    const s = await client.status(values.hours === undefined ? 1 : Number(values.hours));
    if (values.json) printJson(s);
    else process.stdout.write(render(s) + '\n');
    return 0;
  },
};
