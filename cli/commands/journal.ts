/**
 * `shardgate journal`: stores the catalog journal's due segments now (POST
 * /_shardgate/admin/journal), as the cron does every minute: run it before planned maintenance,
 * or to see that the journal reaches the backends.
 */
import { parseArgs } from 'node:util';
import type { Command } from '../command.ts';
import { bytes, printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

const HELP = `usage: shardgate journal [--upkeep] [--json] [gateway options]

Stores every catalog instance's due journal segments on the backends now (what the cron does every
minute): the catalog's changes, erasure-coded like data, from which \`shardgate rescue\` restores
inline objects, versions and bucket settings if the catalog is ever lost (docs/OPERATING.md,
"Losing the catalog"). Exit 1 when some instance's segment could not be stored, or some
instance's journal is paused because the catalog was found lost (shardgate rebuild --lost).

  --upkeep                   instead: one run of the journal's own upkeep, as the cron runs it:
                             its segments scrubbed, damaged shards rebuilt, segments on draining
                             or retired backends or written at a narrower code while backends
                             were down rewritten at the policy's code. Exit 1 when some could not be.

${GATEWAY_HELP}`;

/** The admin answer (worker/upkeep/journal.ts JournalReport; cli/ keeps its own copy of the shape). */
interface JournalAnswer {
  instances: number;
  segments: number;
  records: number;
  bytes: number;
  failed: { instance: string; error: string }[];
  unfinished: boolean;
  /** Instances not written: the backends hold a newer journal of them (the catalog was lost). */
  paused?: number;
  /** Why nothing was stored this run (a catalog-loss look not finished or failed). */
  held?: string;
}

/** The admin answer of journal-upkeep (worker/upkeep/journal-upkeep.ts JournalUpkeepReport). */
interface UpkeepAnswer {
  segments: number;
  units: number;
  shards: number;
  damaged: number;
  repaired: number;
  moved: number;
  restriped: number;
  failed: { instance: string; segment: number; error: string }[];
  unfinished: boolean;
}

export const command: Command = {
  name: 'journal',
  summary: "store the catalog journal's due segments on the backends now",
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS, upkeep: { type: 'boolean' } }, strict: true });
    if (values.upkeep) {
      const u = (await new GatewayClient(values).admin('journal-upkeep')) as UpkeepAnswer;
      if (values.json) printJson(u);
      else {
        process.stdout.write(
          `journal upkeep: ${u.segments} segment(s), ${u.units} unit(s) checked (${u.shards} shards): ${u.damaged} damaged, ${u.repaired} rebuilt; ${u.moved} moved off leaving backends, ${u.restriped} re-striped to the policy's code${u.unfinished ? ' (stopped at its limit: run again)' : ''}\n`,
        );
        for (const f of u.failed) process.stdout.write(`FAILED  ${f.instance} segment ${f.segment}: ${f.error}\n`);
      }
      return u.failed.length ? 1 : 0;
    }
    const r = (await new GatewayClient(values).admin('journal')) as JournalAnswer;
    if (values.json) printJson(r);
    else {
      process.stdout.write(
        `journal: ${r.segments} segment(s), ${r.records} record(s), ${bytes(r.bytes)} stored for ${r.instances} catalog instance(s)${r.unfinished ? ' (stopped at its time limit: run again)' : ''}\n`,
      );
      for (const f of r.failed) process.stdout.write(`FAILED  ${f.instance}: ${f.error}\n`);
      if (r.held) process.stdout.write(`HELD    ${r.held}\n`);
      if (r.paused)
        process.stdout.write(
          `PAUSED  ${r.paused} catalog instance(s): the backends hold a newer journal of them (the catalog was lost); shardgate rebuild --lost names them\n`,
        );
    }
    return r.failed.length || r.paused || r.held ? 1 : 0;
  },
};
