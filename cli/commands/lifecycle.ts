/**
 * `shardgate lifecycle`: runs the lifecycle job now (POST /_shardgate/admin/lifecycle): one slice
 * of every bucket with lifecycle rules, or with --all slices until every such bucket has
 * completed a pass since the command started.
 * `shardgate lifecycle --estimate BUCKET [--days N,...]`: the bill of the bucket's transitions
 * before they run (POST /_shardgate/admin/lifecycle-estimate, upkeep/transition-estimate.ts).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { bytes, printJson, table } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

const HELP = `usage: shardgate lifecycle [--all] [--json] [gateway options]
       shardgate lifecycle --estimate BUCKET [--days N[,M...]] [--rules FILE] [--json] [gateway options]

Applies the buckets' lifecycle rules now, as the cron does, from where the job stopped in each
bucket: expires current versions, deletes noncurrent versions and expired delete markers, aborts
incomplete multipart uploads, each through the same delete paths as a client's DeleteObject, and
moves versions to their rules' storage classes (a bounded number of rewrites per run).

  --all                      go on until every bucket with rules has ended a pass
  --estimate BUCKET          moves nothing: the bill of BUCKET's transition rules, now and (--days)
                             N, M... lifecycle days from now: versions and bytes each rule moves,
                             GETs, PUTs, DELETEs and egress per backend at the configured prices,
                             and the monthly storage bill's change once moved
  --days N[,M...]            with --estimate: the later horizons, in days (default 30)
  --rules FILE               with --estimate: price these rules instead of the bucket's, before
                             setting them (a LifecycleConfiguration XML document, as
                             PutBucketLifecycleConfiguration takes; a rule whose Days have passed
                             already moves data at the first run after it is set)

${GATEWAY_HELP}`;

interface LifecycleAnswer {
  buckets: number;
  examined: number;
  expired: number;
  noncurrentDeleted: number;
  markersRemoved: number;
  uploadsAborted: number;
  failed: number;
  /** Absent from a gateway older than transitions. */
  transitioned?: number;
  transitionedBytes?: number;
  transitionsBlocked?: number;
  passesCompleted: number;
  completed: string[];
  errors: { bucket: string; message: string }[];
}

export const command: Command = {
  name: 'lifecycle',
  summary: 'apply lifecycle rules now (--all: a full pass of every bucket with rules)',
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: { ...GATEWAY_OPTIONS, all: { type: 'boolean' }, estimate: { type: 'string' }, days: { type: 'string' }, rules: { type: 'string' } },
      strict: true,
    });
    // What cannot be meant is refused before the gateway (or its credentials) is looked for.
    if ((values.days !== undefined || values.rules !== undefined) && values.estimate === undefined)
      throw new CliError(`--${values.days !== undefined ? 'days' : 'rules'} goes with --estimate BUCKET`);
    if (values.estimate !== undefined) {
      if (values.all) throw new CliError('--estimate moves nothing: it does not go with --all');
      const days = values.days ?? '30';
      if (!/^\d+(,\d+)*$/.test(days)) throw new CliError(`--days: whole numbers of days separated by commas, not '${days}'`);
      const rules = values.rules === undefined ? undefined : readRules(values.rules);
      const e = (await new GatewayClient(values).admin('lifecycle-estimate', { bucket: values.estimate, days, rules })) as Estimate;
      if (values.json) printJson(e);
      else process.stdout.write(estimateText(e));
      return 0;
    }
    const total = {
      examined: 0,
      expired: 0,
      noncurrentDeleted: 0,
      markersRemoved: 0,
      uploadsAborted: 0,
      transitioned: 0,
      transitionedBytes: 0,
      transitionsBlocked: 0,
      failed: 0,
      runs: 0,
    };
    const client = new GatewayClient(values);
    const completed = new Set<string>();
    for (;;) {
      const r = (await client.admin('lifecycle')) as LifecycleAnswer;
      for (const k of [
        'examined',
        'expired',
        'noncurrentDeleted',
        'markersRemoved',
        'uploadsAborted',
        'transitioned',
        'transitionedBytes',
        'transitionsBlocked',
        'failed',
      ] as const)
        total[k] += r[k] ?? 0;
      total.runs++;
      for (const e of r.errors) process.stderr.write(`lifecycle: bucket ${e.bucket}: ${e.message}\n`);
      total.failed += r.errors.length;
      if (!values.all) break;
      // Each bucket's pass ends in its own run: go on until every bucket with rules has ended one.
      for (const b of r.completed) completed.add(b);
      if (completed.size >= r.buckets) break;
      if (total.runs > 100_000) throw new CliError('the lifecycle pass does not finish: more than 100000 runs');
    }
    if (values.json) printJson(total);
    else
      process.stdout.write(
        `lifecycle: ${total.examined} version(s) examined in ${total.runs} run(s): ${total.expired} expired, ${total.noncurrentDeleted} noncurrent deleted, ${total.markersRemoved} delete marker(s) removed, ${total.uploadsAborted} upload(s) aborted, ${total.transitioned} transitioned (${bytes(total.transitionedBytes)}; ${total.transitionsBlocked} blocked), ${total.failed} failed\n`,
      );
    return total.failed > 0 ? 1 : 0;
  },
};

interface Horizon {
  afterDays: number;
  at: string;
  rules: { ruleId: string; storageClass: string; versions: number; bytes: number }[];
  versions: number;
  bytes: number;
  reclassed: number;
  blocked: number;
  byBackend: Record<
    string,
    {
      usage: { getRequests: number; putRequests: number; deleteRequests: number; bytesIn: number; bytesOut: number };
      storedDelta: number;
      cost: { total: number } | null;
    }
  >;
  total: { gets: number; puts: number; deletes: number; egressBytes: number; ingressBytes: number; cost: number };
  storagePerMonthChange: number;
}

/** A LifecycleConfiguration document from a file; it travels in the signed query string, so it is kept short. */
function readRules(file: string): string {
  let xml: string;
  try {
    xml = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`--rules: cannot read ${file}: ${(err as Error).message}`);
  }
  if (xml.length > 6000) throw new CliError(`--rules: ${file} is ${xml.length} characters; at most 6000 go in a request's query`);
  return xml;
}

interface Estimate {
  bucket: string;
  rules?: 'stored' | 'given';
  horizons: Horizon[];
  versionsWalked: number;
  complete: boolean;
  unpriced: string[];
  measured: { since: string; usage: { getRequests: number; putRequests: number; bytesOut: number }; cost: { total: number } | null } | null;
}

const signed = (n: number) => `${n < 0 ? '-' : '+'}$${Math.abs(n).toFixed(4)}`;
const signedBytes = (n: number) => `${n < 0 ? '-' : '+'}${bytes(Math.abs(n))}`;

/** The estimate as text: per horizon, what each rule moves, then the requests per backend and their price. */
export function estimateText(e: Estimate): string {
  const out: string[] = [
    `lifecycle transitions of ${e.bucket}${e.rules === 'given' ? ' under the rules given (not set)' : ''}: ${e.versionsWalked} version(s) walked${e.complete ? '' : ' (partial: the walk stopped at its limit)'}`,
  ];
  for (const h of e.horizons) {
    out.push('');
    const when = h.afterDays === 0 ? 'due now' : `due by ${h.afterDays} day(s) from now (${h.at.slice(0, 10)}), if nothing runs before`;
    out.push(
      `${when}: ${h.versions} version(s), ${bytes(h.bytes)}${h.reclassed ? ` (${h.reclassed} only change class)` : ''}${h.blocked ? `; ${h.blocked} blocked (SSE-C, retention, class not configured)` : ''}`,
    );
    if (!h.versions) continue;
    const rules = [['rule', 'to class', 'versions', 'bytes']];
    for (const r of h.rules) rules.push([r.ruleId || '(no id)', r.storageClass, String(r.versions), bytes(r.bytes)]);
    out.push(table(rules));
    const rows = [['backend', 'GETs', 'PUTs', 'DELETEs', 'egress', 'written', 'stored after', 'move cost (USD)']];
    for (const [id, l] of Object.entries(h.byBackend))
      rows.push([
        id,
        String(l.usage.getRequests),
        String(l.usage.putRequests),
        String(l.usage.deleteRequests),
        bytes(l.usage.bytesOut),
        bytes(l.usage.bytesIn),
        signedBytes(l.storedDelta),
        l.cost ? l.cost.total.toFixed(4) : 'unpriced',
      ]);
    rows.push([
      'total',
      String(h.total.gets),
      String(h.total.puts),
      String(h.total.deletes),
      bytes(h.total.egressBytes),
      bytes(h.total.ingressBytes),
      '',
      h.total.cost.toFixed(4),
    ]);
    out.push(table(rows));
    out.push(`storage bill once moved: ${signed(h.storagePerMonthChange)} per month`);
  }
  if (e.unpriced.length) out.push('', `unpriced backends (counted, not priced): ${e.unpriced.join(', ')}`);
  const m = e.measured;
  if (m && m.usage.getRequests + m.usage.putRequests > 0)
    out.push(
      '',
      `transitions so far, since ${m.since}: ${m.usage.getRequests} GETs, ${m.usage.putRequests} PUTs, ${bytes(m.usage.bytesOut)} egress${m.cost ? `, $${m.cost.total.toFixed(4)}` : ''} (the old shards' DELETEs are the collector's)`,
    );
  return `${out.join('\n')}\n`;
}
