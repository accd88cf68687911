/**
 * `shardgate partitions BUCKET [--split KEY [--at K] | --merge KEY]`: a bucket's catalog partitions (POST
 * /_shardgate/admin/partitions, docs/PARTITIONS.md): each partition's key range, stored versions
 * and database size against the split thresholds (config `partitions`), and whether it is
 * splitting; with --split, the partition holding KEY is split on line first (at K, or its median
 * key); with --merge, it is merged on line into its lower neighbour. Exit 1 when a partition is over a threshold (the cron splits it; one that cannot split, a
 * single key's versions, stays over it).
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { bytes, printJson, table } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

/** The admin API's answer (worker/app/admin.ts partitions; worker/upkeep/split-partitions.ts). */
export interface Partitions {
  epoch: number;
  thresholds: {
    autoSplit: boolean;
    splitRows: number;
    splitBytes: number;
    splitRequestRate: number;
    warnFraction: number;
    autoMerge?: boolean;
    mergeAfterDays?: number;
  };
  partitions: {
    instance: string;
    low: string;
    high: string | null;
    versions: number;
    bytes: number;
    databaseBytes: number;
    splitting: string | null;
    merging?: string | null;
    requestsPerSecond: number;
    rowsFraction: number;
    bytesFraction: number;
    rateFraction: number;
    verdict: 'ok' | 'warn' | 'split';
  }[];
}

const HELP = `usage: shardgate partitions BUCKET [--split KEY [--at K] | --merge KEY] [--json] [gateway options]

Prints the bucket's catalog partitions: each one's key range, its stored versions, catalog
database size and calls a second (its 5-minute mean) against the split thresholds (config "partitions"), and a verdict: ok, warn (past
warnFraction of a threshold) or split (over one: the cron splits it on line). Exit 1 when a
partition is over a threshold.

  --split KEY                first split on line the partition holding KEY (the bucket keeps answering)
  --at K                     ... at K (default: that partition's median key)
  --merge KEY                first merge on line the partition holding KEY into its lower neighbour
                             (the cron merges neighbours small for days: config partitions.mergeAfterDays)

${GATEWAY_HELP}`;

const pct = (f: number) => `${(f * 100).toFixed(f < 0.01 ? 2 : 0)}%`;
const range = (p: Partitions['partitions'][number]) => `[${JSON.stringify(p.low)}, ${p.high === null ? 'end' : JSON.stringify(p.high)})`;

/** A split or merge under way in the partition: "split copying", "merge committing", "merge receiving" (a neighbour merging in), or "-". */
function moving(p: Partitions['partitions'][number]): string {
  if (p.splitting) return `split ${p.splitting}`;
  if (p.merging) return `merge ${p.merging}`;
  return '-';
}

export function partitionsText(bucket: string, r: Partitions): string {
  const t = r.thresholds;
  const rows = r.partitions.map((p) => [
    range(p),
    `${p.versions}`,
    `${pct(p.rowsFraction)}`,
    bytes(p.databaseBytes),
    `${pct(p.bytesFraction)}`,
    p.requestsPerSecond.toFixed(p.requestsPerSecond < 10 ? 1 : 0),
    `${pct(p.rateFraction)}`,
    moving(p),
    p.verdict,
  ]);
  return (
    [
      `${bucket}: ${r.partitions.length} partition${r.partitions.length === 1 ? '' : 's'} (map epoch ${r.epoch}); split at ${t.splitRows} versions, ${bytes(t.splitBytes)} of catalog or ${t.splitRequestRate} calls/s (5-minute mean), warn at ${pct(t.warnFraction)}${t.autoSplit ? '' : ' (automatic splits off)'}`,
      '',
      table([['RANGE', 'VERSIONS', 'OF ROWS', 'CATALOG', 'OF BYTES', 'CALLS/S', 'OF RATE', 'MOVING', 'VERDICT'], ...rows]),
    ].join('\n') + '\n'
  );
}

export const command: Command = {
  name: 'partitions',
  summary: "a bucket's catalog partitions against the split thresholds; split one on line",
  help: HELP,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...GATEWAY_OPTIONS, split: { type: 'string' }, at: { type: 'string' }, merge: { type: 'string' } },
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new CliError('partitions needs BUCKET');
    if (values.at !== undefined && values.split === undefined) throw new CliError('--at needs --split KEY');
    if (values.merge !== undefined && values.split !== undefined) throw new CliError('--split and --merge: one at a time');
    const bucket = positionals[0]!;
    const client = new GatewayClient(values);
    const r = (await client.admin('partitions', { bucket, split: values.split, splitAt: values.at, merge: values.merge })) as Partitions;
    if (values.json) printJson(r);
    else process.stdout.write(partitionsText(bucket, r));
    return r.partitions.some((p) => p.verdict === 'split') ? 1 : 0;
  },
};
