/**
 * `shardgate scrub`: runs the scrubber now (POST /_shardgate/admin/scrub): one slice of every
 * bucket, or with --all slices until every bucket has completed a pass since the command started,
 * with a progress bar of units checked; with --bucket (and --prefix) every unit of that bucket
 * (under the prefix), page by page until done, naming the damaged objects (upkeep/scrub-selection.ts).
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';
import { Progress } from '../progress.ts';

const HELP = `usage: shardgate scrub [--mode heads|verify] [--all] [--json] [gateway options]
       shardgate scrub --bucket NAME [--prefix P] [--mode heads|verify] [--json] [gateway options]

Checks the shards of stored objects and queues repairs for damaged ones, as the cron does, from
where the scrubber stopped in each bucket. 'heads' asks each backend for each shard's size
(cheap, finds lost and truncated shards); 'verify' reads and checks every block (finds bit rot,
reads all stored bytes: egress on paid backends). Default: the configured mode.

  --mode heads|verify        how to check
  --all                      go on until every bucket has been checked from start to end
  --bucket NAME              check every object of this bucket now, from start to end (the
                             cron's scrub position and coverage are left alone)
  --prefix P                 with --bucket: only keys that start with P

${GATEWAY_HELP}`;

interface ScrubAnswer {
  units: number;
  shards: number;
  damaged: number;
}

export const command: Command = {
  name: 'scrub',
  summary: 'check stored shards now (--all: a full pass of every bucket)',
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      options: { ...GATEWAY_OPTIONS, mode: { type: 'string' }, all: { type: 'boolean' }, bucket: { type: 'string' }, prefix: { type: 'string' } },
      strict: true,
    });
    if (values.mode !== undefined && values.mode !== 'heads' && values.mode !== 'verify') throw new CliError('--mode is heads or verify');
    if (values.prefix !== undefined && values.bucket === undefined) throw new CliError('--prefix goes with --bucket');
    if (values.all && values.bucket !== undefined) throw new CliError('--all scrubs every bucket; --bucket one, whole: not both');
    const client = new GatewayClient(values);
    if (values.bucket !== undefined) return scrubSelection(client, values.bucket, values.prefix, values.mode, Boolean(values.json));
    const started = (await client.status()).now;
    const total = { units: 0, shards: 0, damaged: 0, runs: 0 };
    const progress = new Progress('scrub', !values.json && Boolean(process.stderr.isTTY));
    for (;;) {
      const r = (await client.admin('scrub', { mode: values.mode })) as ScrubAnswer;
      total.units += r.units;
      total.shards += r.shards;
      total.damaged += r.damaged;
      total.runs++;
      if (!values.all) break;
      const s = await client.status();
      const buckets = s.buckets ?? [];
      const done = buckets.filter((b) => (b.scrub.lastPassCompletedAt ?? 0) >= started);
      const units = buckets.reduce((n, b) => n + b.scrub.units, 0);
      const checked = buckets.reduce((n, b) => n + b.scrub.checked, 0);
      progress.update(checked, units, `${done.length}/${buckets.length} buckets, ${total.damaged} damaged shards`);
      if (done.length === buckets.length) break;
      if (total.runs > 100_000) throw new CliError('the scrub does not finish: more than 100000 runs');
    }
    progress.end();
    if (values.json) printJson(total);
    else
      process.stdout.write(`scrubbed ${total.units} unit(s), ${total.shards} shard(s) in ${total.runs} run(s): ${total.damaged} damaged (queued for repair)\n`);
    return total.damaged > 0 ? 1 : 0;
  },
};

interface SelectionAnswer extends ScrubAnswer {
  damage: { key: string; unitId: string; shards: number[] }[];
  unreachable: number;
  next: string | null;
}

/** Every unit of `bucket` under `prefix`, a page per call until the gateway says done. */
async function scrubSelection(client: GatewayClient, bucket: string, prefix: string | undefined, mode: string | undefined, json: boolean): Promise<number> {
  const total = { bucket, prefix: prefix ?? '', units: 0, shards: 0, damaged: 0, unreachable: 0, damage: [] as SelectionAnswer['damage'], calls: 0 };
  let after: string | undefined;
  for (;;) {
    const r = (await client.admin('scrub', { bucket, prefix, mode, after })) as SelectionAnswer;
    total.units += r.units;
    total.shards += r.shards;
    total.damaged += r.damaged;
    total.unreachable += r.unreachable;
    total.damage.push(...r.damage);
    total.calls++;
    if (r.next === null) break;
    after = r.next;
  }
  if (json) printJson(total);
  else {
    const where = `${bucket}${prefix ? `/${prefix}*` : ''}`;
    process.stdout.write(
      `scrubbed ${where}: ${total.units} unit(s), ${total.shards} shard(s); ${total.damaged} damaged (queued for repair)${total.unreachable ? `, ${total.unreachable} on backends that did not answer (not checked)` : ''}\n`,
    );
    for (const d of total.damage.slice(0, 50)) process.stdout.write(`  ${bucket}/${d.key} unit ${d.unitId}: shard(s) ${d.shards.join(', ')}\n`);
  }
  return total.damaged > 0 ? 1 : 0;
}
