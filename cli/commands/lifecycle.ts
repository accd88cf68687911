/**
 * `shardgate lifecycle`: runs the lifecycle job now (POST /_shardgate/admin/lifecycle): one slice
 * of every bucket with lifecycle rules, or with --all slices until every such bucket has
 * completed a pass since the command started.
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { printJson } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

const HELP = `usage: shardgate lifecycle [--all] [--json] [gateway options]

Applies the buckets' lifecycle rules now, as the cron does, from where the job stopped in each
bucket: expires current versions, deletes noncurrent versions and expired delete markers, aborts
incomplete multipart uploads, each through the same delete paths as a client's DeleteObject.

  --all                      go on until every bucket with rules has ended a pass

${GATEWAY_HELP}`;

interface LifecycleAnswer {
  buckets: number;
  examined: number;
  expired: number;
  noncurrentDeleted: number;
  markersRemoved: number;
  uploadsAborted: number;
  failed: number;
  passesCompleted: number;
  completed: string[];
  errors: { bucket: string; message: string }[];
}

export const command: Command = {
  name: 'lifecycle',
  summary: 'apply lifecycle rules now (--all: a full pass of every bucket with rules)',
  help: HELP,
  async run(argv) {
    const { values } = parseArgs({ args: argv, options: { ...GATEWAY_OPTIONS, all: { type: 'boolean' } }, strict: true });
    const client = new GatewayClient(values);
    const total = { examined: 0, expired: 0, noncurrentDeleted: 0, markersRemoved: 0, uploadsAborted: 0, failed: 0, runs: 0 };
    const completed = new Set<string>();
    for (;;) {
      const r = (await client.admin('lifecycle')) as LifecycleAnswer;
      for (const k of ['examined', 'expired', 'noncurrentDeleted', 'markersRemoved', 'uploadsAborted', 'failed'] as const) total[k] += r[k];
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
        `lifecycle: ${total.examined} version(s) examined in ${total.runs} run(s): ${total.expired} expired, ${total.noncurrentDeleted} noncurrent deleted, ${total.markersRemoved} delete marker(s) removed, ${total.uploadsAborted} upload(s) aborted, ${total.failed} failed\n`,
      );
    return total.failed > 0 ? 1 : 0;
  },
};
