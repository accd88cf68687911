/**
 * `shardgate collect`: runs the garbage collector now (POST /_shardgate/admin/collect), once, or
 * with --all until nothing due is left.
 */
import { parseArgs } from 'node:util';
import type { Command } from '../command.ts';
import { printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';
import { Progress } from '../progress.ts';

const HELP = `usage: shardgate collect [--all] [--json] [gateway options]

Deletes the shards of superseded, deleted and orphaned units whose grace delay has passed (what
the cron does every few minutes). One pass makes a bounded number of backend calls.

  --all                      repeat passes until one collects nothing

${GATEWAY_HELP}`;

export const command: Command = {
  name: 'collect',
  summary: 'run the garbage collector now (--all: until its backlog is empty)',
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS, all: { type: 'boolean' } }, strict: true });
    const client = new GatewayClient(values);
    const due = values.all ? (await client.status()).data.garbage.due : 0;
    const progress = new Progress('collect', !values.json && Boolean(process.stderr.isTTY));
    let collected = 0,
      passes = 0;
    for (;;) {
      const r = (await client.admin('collect')) as { collected: number };
      collected += r.collected;
      passes++;
      progress.update(collected, Math.max(due, collected), `${collected} units`);
      if (!values.all || r.collected === 0) break;
    }
    progress.end();
    if (values.json) printJson({ collected, passes });
    else process.stdout.write(`collected ${collected} unit(s) in ${passes} pass(es)\n`);
    return 0;
  },
};
