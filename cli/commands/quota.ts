/**
 * `shardgate quota BUCKET [--bytes N|--objects N|--clear|--rebalance]`: a bucket's quota and usage
 * (POST /_shardgate/admin/quota, worker/app/quota-routes.ts; docs/QUOTAS.md). Without an option it
 * prints them; `--bytes` and `--objects` set a limit (`none` removes that one; sizes take KiB, MiB,
 * GiB, TiB suffixes, powers of 1024, or KB, MB, GB, TB, powers of 1000), `--clear` removes the quota,
 * `--rebalance` cuts a split bucket's shares again from its usage now. Needs a key with the admin action.
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { bytes, printJson, table } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';
import type { BucketUsage } from '../../worker/catalog/quota.ts';

/** The admin API's answer (worker/upkeep/bucket-usage.ts BucketUsageReport). */
export interface BucketUsageReport extends BucketUsage {
  bucket: string;
  quotaUsed: { bytes: number; objects: number };
  quotaRatio: { bytes: number | null; objects: number | null };
  traffic: { since: string; requests: number; putRequests: number; getRequests: number; deleteRequests: number; egressBytes: number } | null;
  cost: { storagePerMonth: number; egress: number; requests: number; total: number; unpricedBackends: string[] } | null;
  /** Absent from an older gateway. */
  rebalanceAdvised?: boolean;
}

const HELP = `usage: shardgate quota BUCKET [--bytes N|none] [--objects N|none] [--clear] [--rebalance] [--json] [gateway options]

A bucket's quota and usage. Without an option, prints them; with one, changes the quota first.
The quota counts every version (delete markers hold nothing) and the parts of multipart uploads
in flight; a write that would grow a figure past its limit is refused 403 QuotaExceeded before
anything is stored, in every isolate from the next request on. Deletes always pass.

  --bytes N                  limit the bytes (N: 5000000, 500MiB, 2GB, 1TiB...; none: no bytes limit)
  --objects N                limit the versions holding data (none: no objects limit)
  --clear                    remove the quota
  --rebalance                a split bucket: cut each partition's share again from its usage now

${GATEWAY_HELP}`;

const UNITS: Record<string, number> = { '': 1, B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KIB: 2 ** 10, MIB: 2 ** 20, GIB: 2 ** 30, TIB: 2 ** 40 };

/** "500MiB" -> 524288000; "none" stays "none"; anything else is a CliError. */
export function parseSize(text: string, what: string): string {
  if (text === 'none') return text;
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  const unit = m ? UNITS[m[2]!.toUpperCase()] : undefined;
  if (!m || unit === undefined) throw new CliError(`${what}: a number, optionally with KB, MB, GB, TB, KiB, MiB, GiB or TiB (or none), not "${text}"`);
  const n = Number(m[1]) * unit;
  if (!Number.isSafeInteger(Math.round(n))) throw new CliError(`${what}: too large`);
  return String(Math.round(n));
}

export function quotaText(r: BucketUsageReport): string {
  const q = r.quota;
  const limit = (used: number, max: number | null | undefined, show: (n: number) => string) =>
    max === null || max === undefined ? `${show(used)} (no limit)` : `${show(used)} of ${show(max)} (${max ? Math.round((used / max) * 100) : 100}%)`;
  const lines = [
    `${r.bucket}: ${q ? `quota set ${new Date(q.setAt).toISOString()}` : 'no quota'}`,
    `  bytes    ${limit(r.quotaUsed.bytes, q?.bytes, bytes)}: ${bytes(r.bytes)} in versions + ${bytes(r.multipartBytes)} in ${r.uploads} upload(s) in flight`,
    `  objects  ${limit(r.quotaUsed.objects, q?.objects, String)}: versions holding data (${r.currentObjects} current; ${r.versions} version rows, ${r.deleteMarkers} delete markers)`,
    `  stored   ${bytes(r.storedBytes)} of shard files on the backends, ${bytes(r.inlineBytes)} inline in the catalog`,
  ];
  if (q?.shares)
    lines.push(
      '',
      table([
        ['PARTITION FROM', 'BYTES', 'BYTES SHARE', 'OBJECTS', 'OBJECTS SHARE'],
        ...(r.partitions ?? []).map((p) => [
          p.low === '' ? '(start)' : JSON.stringify(p.low),
          bytes(p.bytes),
          q.shares?.[p.low]?.bytes == null ? '-' : bytes(q.shares[p.low]!.bytes),
          String(p.objects),
          q.shares?.[p.low]?.objects == null ? '-' : String(q.shares[p.low]!.objects),
        ]),
      ]),
    );
  if (r.rebalanceAdvised)
    lines.push(
      "  advice   a partition has used 90% of its share while the bucket has room: writes there will be refused early; 'shardgate quota BUCKET --rebalance' shares the room out again",
    );
  if (r.traffic)
    lines.push(
      `  traffic  since ${r.traffic.since}: ${r.traffic.requests} backend requests (${r.traffic.putRequests} PUT-class, ${r.traffic.getRequests} GET-class, ${r.traffic.deleteRequests} DELETE), egress ${bytes(r.traffic.egressBytes)}`,
    );
  if (r.cost)
    lines.push(
      `  cost     ~$${r.cost.storagePerMonth.toFixed(2)} a month of storage at the size now; $${(r.cost.egress + r.cost.requests).toFixed(2)} of traffic so far${r.cost.unpricedBackends.length ? ` (unpriced: ${r.cost.unpricedBackends.join(', ')})` : ''}`,
    );
  return lines.join('\n') + '\n';
}

export const command: Command = {
  name: 'quota',
  summary: "a bucket's quota (bytes, objects) and usage; set, clear or rebalance it",
  help: HELP,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      options: {
        ...GATEWAY_OPTIONS,
        bytes: { type: 'string' },
        objects: { type: 'string' },
        clear: { type: 'boolean' },
        rebalance: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new CliError('quota needs BUCKET');
    const changes = [values.bytes !== undefined || values.objects !== undefined, values.clear, values.rebalance].filter(Boolean).length;
    if (changes > 1) throw new CliError('quota: give --bytes/--objects, --clear or --rebalance, not several');
    const client = new GatewayClient(values);
    const r = (await client.admin('quota', {
      bucket: positionals[0],
      bytes: values.bytes === undefined ? undefined : parseSize(values.bytes, '--bytes'),
      objects: values.objects === undefined ? undefined : parseSize(values.objects, '--objects'),
      clear: values.clear ? '1' : undefined,
      rebalance: values.rebalance ? '1' : undefined,
    })) as BucketUsageReport;
    if (values.json) printJson(r);
    else process.stdout.write(quotaText(r));
    return 0;
  },
};
