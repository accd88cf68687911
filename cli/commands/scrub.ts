/**
 * `shardgate scrub`: runs the scrubber now (POST /_shardgate/admin/scrub): one slice of every
 * bucket, or with --all slices until every bucket has completed a pass since the command started,
 * with a progress bar of units checked.
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';
import { Progress } from '../progress.ts';

const HELP = `usage: shardgate scrub [--mode heads|verify] [--all] [--json] [gateway options]

Checks the shards of stored objects and queues repairs for damaged ones, as the cron does, from
where the scrubber stopped in each bucket. 'heads' asks each backend for each shard's size
(cheap, finds lost and truncated shards); 'verify' reads and checks every block (finds bit rot,
reads all stored bytes: egress on paid backends). Default: the configured mode.

  --mode heads|verify        how to check
  --all                      go on until every bucket has been checked from start to end

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
    const { values } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS, mode: { type: 'string' }, all: { type: 'boolean' } }, strict: true });
    if (values.mode !== undefined && values.mode !== 'heads' && values.mode !== 'verify') throw new CliError('--mode is heads or verify');
    const client = new GatewayClient(values);
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
    else process.stdout.write(`scrubbed ${total.units} unit(s), ${total.shards} shard(s) in ${total.runs} run(s): ${total.damaged} damaged (queued for repair)\n`);
    return total.damaged > 0 ? 1 : 0;
  },
};
