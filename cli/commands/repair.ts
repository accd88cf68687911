/**
 * `shardgate repair`: repairs now every unit the catalog lists as degraded (shards missed by a
 * write), calling POST /_shardgate/admin/repair until nothing is left or a pass repairs nothing
 * (a backend still down): then exit 1 with what failed. With --list it repairs nothing and prints
 * the repair worklist (POST /_shardgate/admin/worklist): attempts, next try, last error.
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { printJson, table } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';
import { Progress } from '../progress.ts';

const HELP = `usage: shardgate repair [--bucket NAME] [--prefix P] [--batch N] [--json] [gateway options]
       shardgate repair --list [--stuck] [--bucket NAME] [--prefix P] [--json] [gateway options]

Rebuilds the shards that writes missed (a backend was down when the object was written) from the
other shards, now, instead of waiting for the repair queue's retries. Each call repairs a batch;
the command goes on until no degraded unit is left. Units whose backend is still unreachable
fail and stay degraded: bring the backend back and run it again.

  --bucket NAME              only this bucket (default: every bucket)
  --prefix P                 only keys that start with P (in every bucket swept)
  --batch N                  units per call, 1 to 100 (default 20)
  --list                     repair nothing: print the repair worklist (every degraded unit,
                             its failed attempts, when it is next tried, its last error)
  --stuck                    with --list: only units tried 8 times or more (the dead letters)

${GATEWAY_HELP}`;

interface SweepAnswer {
  attempted: number;
  repaired: number;
  failed: { bucket: string; key: string; unitId: string; error: string }[];
  remaining: number;
}

export const command: Command = {
  name: 'repair',
  summary: 'repair every degraded object now (shards missed by writes)',
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        ...GATEWAY_OPTIONS,
        bucket: { type: 'string' },
        prefix: { type: 'string' },
        batch: { type: 'string' },
        list: { type: 'boolean' },
        stuck: { type: 'boolean' },
      },
    });
    const client = new GatewayClient(values);
    if (values.stuck && !values.list) throw new CliError('--stuck goes with --list');
    if (values.list) return listWorklist(client, values.bucket, values.prefix, Boolean(values.stuck), Boolean(values.json));
    const progress = new Progress('repair', !values.json && Boolean(process.stderr.isTTY));
    let repaired = 0,
      start: number | null = null;
    let last: SweepAnswer;
    for (;;) {
      last = (await client.admin('repair', { bucket: values.bucket, prefix: values.prefix, limit: values.batch })) as SweepAnswer;
      repaired += last.repaired;
      start ??= last.remaining + last.repaired;
      progress.update(repaired, start, `${repaired} repaired, ${last.remaining} left`);
      if (last.remaining === 0 || last.repaired === 0) break;
    }
    progress.end();
    const result = { repaired, remaining: last.remaining, failed: last.failed };
    if (values.json) printJson(result);
    else {
      process.stdout.write(`repaired ${repaired} unit(s); ${last.remaining} still degraded\n`);
      for (const f of last.failed.slice(0, 20)) process.stdout.write(`  ${f.bucket}/${f.key} unit ${f.unitId}: ${f.error}\n`);
    }
    return last.remaining === 0 ? 0 : 1;
  },
};

export interface WorklistAnswer {
  units: { bucket: string; key: string; unitId: string; missing: number[]; since: string; attempts: number; nextAttemptAt?: string; lastError?: string }[];
  truncated: boolean;
}

async function listWorklist(client: GatewayClient, bucket: string | undefined, prefix: string | undefined, stuck: boolean, json: boolean): Promise<number> {
  const answer = (await client.admin('worklist', { bucket, prefix, stuck: stuck ? '1' : undefined, limit: '1000' })) as WorklistAnswer;
  if (json) {
    printJson(answer);
    return 0;
  }
  process.stdout.write(worklistText(answer, stuck));
  return 0;
}

/** The worklist as a table, one unit a row (what `repair --list` prints). */
export function worklistText(answer: WorklistAnswer, stuck: boolean): string {
  if (answer.units.length === 0) return `no ${stuck ? 'stuck ' : ''}degraded units\n`;
  const rows = answer.units.map((u) => [
    `${u.bucket}/${u.key}`,
    u.unitId,
    missingShards(u.missing),
    String(u.attempts),
    u.nextAttemptAt ?? 'now',
    u.lastError ?? '',
  ]);
  return `${table([['object', 'unit', 'missing shards', 'attempts', 'next try', 'last error'], ...rows])}\n${answer.truncated ? '(first 1000 only)\n' : ''}`;
}

/**
 * How many shards a unit misses, then which: "1 (#0)", "2 (#1, #4)". The indexes alone read
 * wrong: shard 0 missing printed as "0" looks like nothing missing.
 */
export function missingShards(missing: readonly number[]): string {
  return `${missing.length} (${missing.map((i) => `#${i}`).join(', ')})`;
}
