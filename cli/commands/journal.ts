/**
 * `shardgate journal`: stores the catalog journal's due segments now (POST
 * /_shardgate/admin/journal), as the cron does every minute: run it before planned maintenance,
 * or to see that the journal reaches the backends.
 */
import { parseArgs } from 'node:util';
import type { Command } from '../command.ts';
import { bytes, printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

const HELP = `usage: shardgate journal [--json] [gateway options]

Stores every catalog instance's due journal segments on the backends now (what the cron does every
minute): the catalog's changes, erasure-coded like data, from which \`shardgate rescue\` restores
inline objects, versions and bucket settings if the catalog is ever lost (docs/OPERATING.md,
"Losing the catalog"). Exit 1 when some instance's segment could not be stored.

${GATEWAY_HELP}`;

/** The admin answer (worker/upkeep/journal.ts JournalReport; cli/ keeps its own copy of the shape). */
interface JournalAnswer {
  instances: number;
  segments: number;
  records: number;
  bytes: number;
  failed: { instance: string; error: string }[];
  unfinished: boolean;
}

export const command: Command = {
  name: 'journal',
  summary: "store the catalog journal's due segments on the backends now",
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS }, strict: true });
    const r = (await new GatewayClient(values).admin('journal')) as JournalAnswer;
    if (values.json) printJson(r);
    else {
      process.stdout.write(`journal: ${r.segments} segment(s), ${r.records} record(s), ${bytes(r.bytes)} stored for ${r.instances} catalog instance(s)${r.unfinished ? ' (stopped at its time limit: run again)' : ''}\n`);
      for (const f of r.failed) process.stdout.write(`FAILED  ${f.instance}: ${f.error}\n`);
    }
    return r.failed.length ? 1 : 0;
  },
};
