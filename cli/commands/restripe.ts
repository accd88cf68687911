/**
 * `shardgate restripe`: rewriting a bucket's stored versions under the policy the config now
 * gives it (issue 26; docs/OPERATING.md "Changing the fleet"). The cron does it by itself; this
 * command shows or drives the progress:
 *   shardgate restripe [BUCKET]          POST /_shardgate/admin/restripe-status: units and bytes
 *                                        left, rewritten, rate, time remaining, the pass's counts
 *   shardgate restripe --run [BUCKET]    POST /_shardgate/admin/restripe until nothing is left (or
 *                                        a run rewrites nothing: exit 1 with why)
 */
import { parseArgs } from 'node:util';
import type { Command } from '../command.ts';
import { bytes, duration, printJson, table } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';

const HELP = `usage: shardgate restripe [BUCKET] [--json] [gateway options]
       shardgate restripe --run [BUCKET] [--batch N] [--json] [gateway options]

A bucket moved to another policy in the config (its "buckets" entry, or "defaultPolicy") keeps
its stored versions as they were written; the cron rewrites them under the new policy in the
background, version by version, and new writes use it at once. Without --run: what is left in
every bucket being re-striped, the rate and the time remaining; --run rewrites now, batch by
batch, instead of waiting for the cron.

  --run                      rewrite now until nothing is left
  --batch N                  with --run: versions per call, 1 to 1000 (default 20)

${GATEWAY_HELP}`;

interface Counts {
  scanned: number;
  rewritten: number;
  conflicts: number;
  blocked: number;
  failed: number;
}

interface Progress {
  bucket: string;
  policy: string;
  target: string;
  left: { units: number; bytes: number; upperBound: boolean };
  rewritten: { versions: number; bytes: number };
  bytesPerSecond: number | null;
  secondsRemaining: number | null;
  passes: number;
  inPass: boolean;
  pass: Counts;
  blocked: number;
  done: boolean;
  lastError: { at: number; key: string; versionId: string; message: string } | null;
}

interface RunReport extends Counts {
  problems: { bucket: string; key: string; error: string }[];
  stopped: boolean;
  progress: Progress[];
}

export const command: Command = {
  name: 'restripe',
  summary: "rewrite a bucket's versions under its policy now: progress, or now (--run)",
  help: HELP,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: { ...GATEWAY_OPTIONS, run: { type: 'boolean' }, batch: { type: 'string' } },
    });
    const client = new GatewayClient(values);
    const bucket = positionals[0];
    if (values.run) {
      let rewritten = 0;
      for (;;) {
        const r = (await client.admin('restripe', { bucket, max: values.batch })) as RunReport;
        rewritten += r.rewritten;
        const shown = r.progress.filter((p) => !bucket || p.bucket === bucket);
        if (!values.json) process.stderr.write(`rewritten ${rewritten}; left ${shown.reduce((n, p) => n + p.left.units, 0)} unit(s)\n`);
        if (shown.every((p) => p.done) && !r.stopped) break;
        if (r.rewritten === 0 && r.conflicts === 0 && !r.stopped) {
          process.stdout.write(
            `nothing rewritten this run: ${r.failed} failed, ${r.blocked} blocked${r.problems[0] ? ` (${r.problems[0].key}: ${r.problems[0].error})` : ''}\n`,
          );
          return 1;
        }
      }
    }
    const answer = (await client.admin('restripe-status')) as { buckets: Progress[] };
    const shown = answer.buckets.filter((p) => !bucket || p.bucket === bucket);
    if (values.json) printJson({ buckets: shown });
    else process.stdout.write(progressText(shown));
    return 0;
  },
};

export function progressText(buckets: Progress[]): string {
  if (!buckets.length) return 'every bucket is stored as its policy says: nothing to re-stripe\n';
  const rows = [['bucket', 'policy', 'units left', 'bytes left', 'rewritten', 'rate', 'remaining', 'this pass']];
  for (const p of buckets) {
    rows.push([
      p.bucket,
      p.policy,
      `${p.left.units}${p.left.upperBound ? ' (at most)' : ''}`,
      bytes(p.left.bytes),
      `${p.rewritten.versions} (${bytes(p.rewritten.bytes)})`,
      p.bytesPerSecond === null ? '-' : `${bytes(p.bytesPerSecond)}/s`,
      p.done ? 'done' : p.secondsRemaining === null ? '-' : duration(Math.ceil(p.secondsRemaining)),
      p.inPass ? `${p.pass.scanned} scanned, ${p.pass.conflicts} lost to clients, ${p.pass.failed} failed` : '-',
    ]);
  }
  const notes = buckets.flatMap((p) => [
    ...(p.blocked
      ? [`${p.bucket}: ${p.blocked} version(s) cannot be re-striped by the gateway (SSE-C: the client's key is needed); they stay readable as they are`]
      : []),
    ...(p.lastError ? [`${p.bucket}: last problem ${new Date(p.lastError.at).toISOString()} ${p.lastError.key}: ${p.lastError.message}`] : []),
  ]);
  return [table(rows), ...notes, ''].join('\n');
}
