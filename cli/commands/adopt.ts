/**
 * `shardgate adopt`: moving an existing bucket (a bucket with a `sources` entry in the config)
 * into shardgate in the background (issue 41, docs/ADOPTION.md "Background backfill"):
 *   shardgate adopt BUCKET               POST /_shardgate/admin/adopt: start (or resume) the
 *                                        backfill, one run now; the queue chain (or, without a
 *                                        queue, the cron) goes on with it
 *   shardgate adopt BUCKET --run         the same, call after call, until a pass is complete
 *                                        (without a queue: with one, the chain already runs back to back)
 *   shardgate adopt [BUCKET] --status    POST adopt-status: phase, counters, egress and its price,
 *                                        rate, time left, whether the move is complete
 *   shardgate adopt BUCKET --estimate    POST adopt-estimate (page after page): what the move reads
 *                                        and costs, before it starts
 *   shardgate adopt BUCKET --pause       POST adopt-pause
 *   shardgate adopt BUCKET --detach [--force]  POST adopt-detach: the source is never read again
 *                                        (refused, with the reason, until the move is complete)
 */
import { parseArgs } from 'node:util';
import { CliError, type Command } from '../command.ts';
import { ago, bytes, duration, printJson, table } from '../format.ts';
import { GATEWAY_HELP, GATEWAY_OPTIONS, GatewayClient } from '../gateway-client.ts';
import type { BackfillProgress } from '../../worker/model/adopt-backfill.ts';

const HELP = `usage: shardgate adopt BUCKET [--run [--batch N]] [--json] [gateway options]
       shardgate adopt [BUCKET] --status [--json]
       shardgate adopt BUCKET --estimate [--json]
       shardgate adopt BUCKET --pause | --detach [--force]

A bucket whose config names a source (an existing S3 bucket: "sources" in SHARDGATE_CONFIG) is
served from the source until its objects are adopted. This command moves the rest in: it starts
the background backfill, which walks the source's listing from a checkpoint and adopts every
object not yet held, reading each object once. With the gateway's queue bound it then runs back
to back as a chain of queue links until the pass is complete; without one the cron goes on with
it (20 objects a run) and --run drives it now (beside a running chain a run does nothing and says
so: one driver at a time).
Writes and deletes through shardgate always win. A source object changed after its adoption is
adopted again until the source is detached.

  --run            adopt now, call after call, until a pass over the source is complete
  --batch N        with --run: objects per call, 1 to 1000 (default 40)
  --status         progress: objects, bytes, source egress and its price, rate, time left
  --estimate       the bill before the move: objects, bytes, egress and request cost at the
                   source's prices, storage under the bucket's policy (walks the listing, no GET)
  --pause          pause the backfill (its checkpoint is kept; adopt BUCKET resumes)
  --detach         stop reading the source for good; refused until a pass ended clean
  --force          with --detach: detach anyway (objects not adopted are lost to clients)

${GATEWAY_HELP}`;

interface Estimate {
  objects: number;
  bytes: number;
  largest: number;
  multipart: number;
  pages: number;
  next: string | null;
  requests: { gets: number; taggings: number; heads?: number; lists: number };
  egress: { bytes: number; perGB: number | null; cost: number | null; prices: string | null };
  storage: { policy: string; bytes: number; perMonth: number | null };
  source: string;
}

const usd = (n: number | null) => (n === null ? 'unpriced (set sources.<bucket>.prices)' : `$${n.toFixed(n < 1 ? 4 : 2)}`);

export const command: Command = {
  name: 'adopt',
  summary: 'move a bucket with a source into shardgate: backfill, progress, estimate, detach',
  help: HELP,
  async run(argv) {
    const { values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: {
        ...GATEWAY_OPTIONS,
        run: { type: 'boolean' },
        batch: { type: 'string' },
        status: { type: 'boolean' },
        estimate: { type: 'boolean' },
        pause: { type: 'boolean' },
        detach: { type: 'boolean' },
        force: { type: 'boolean' },
      },
    });
    const bucket = positionals[0];
    const client = new GatewayClient(values);
    const show = async () => {
      const answer = (await client.admin('adopt-status', { bucket })) as { buckets: BackfillProgress[] };
      if (values.json) printJson(answer);
      else process.stdout.write(progressText(answer.buckets));
      return 0;
    };
    if (values.status) return show();
    if (!bucket) throw new CliError('name the bucket: shardgate adopt BUCKET (shardgate adopt --help)');
    if (values.estimate) {
      const total = await estimate(client, bucket);
      if (values.json) printJson(total);
      else process.stdout.write(estimateText(bucket, total));
      return 0;
    }
    if (values.pause) {
      await client.admin('adopt-pause', { bucket });
      return show();
    }
    if (values.detach) {
      const answer = (await client.admin('adopt-detach', { bucket, ...(values.force ? { force: '1' } : {}) })) as { forced: boolean; reason: string | null };
      if (values.json) printJson(answer);
      else
        process.stdout.write(
          answer.forced ? `source of ${bucket} detached (forced: ${answer.reason})\n` : `source of ${bucket} detached: the move is complete\n`,
        );
      return 0;
    }
    let last: { report: { passesCompleted: number; stopped: boolean; idle?: string; failed: number; adopted: number; readopted: number } };
    let adopted = 0;
    do {
      last = (await client.admin('adopt', { bucket, max: values.batch })) as typeof last;
      adopted += last.report.adopted + last.report.readopted;
      if (values.run && !values.json) process.stderr.write(`adopted ${adopted} object(s) so far\n`);
    } while (values.run && !last.report.passesCompleted && !last.report.idle && last.report.stopped);
    return show();
  },
};

/** The whole listing's estimate, call after call (each walks up to 200 pages). */
async function estimate(client: GatewayClient, bucket: string): Promise<Estimate> {
  let after: string | undefined;
  let total: Estimate | null = null;
  for (;;) {
    const e = (await client.admin('adopt-estimate', { bucket, after })) as Estimate;
    if (!total) total = e;
    else {
      total.objects += e.objects;
      total.bytes += e.bytes;
      total.largest = Math.max(total.largest, e.largest);
      total.multipart += e.multipart;
      total.pages += e.pages;
      total.requests.gets += e.requests.gets;
      total.requests.taggings += e.requests.taggings;
      total.requests.heads = (total.requests.heads ?? 0) + (e.requests.heads ?? 0);
      total.requests.lists += e.requests.lists;
      total.egress.bytes += e.egress.bytes;
      total.egress.cost = total.egress.cost === null || e.egress.cost === null ? null : total.egress.cost + e.egress.cost;
      total.storage.bytes += e.storage.bytes;
      total.storage.perMonth = total.storage.perMonth === null || e.storage.perMonth === null ? null : total.storage.perMonth + e.storage.perMonth;
    }
    total.next = e.next;
    if (e.next === null) return total;
    after = e.next;
    process.stderr.write(`listed ${total.objects} object(s) so far\n`);
  }
}

export function estimateText(bucket: string, e: Estimate): string {
  return [
    `moving ${e.source} into ${bucket}:`,
    `  objects        ${e.objects} (${e.multipart} multipart, largest ${bytes(e.largest)})`,
    `  bytes          ${bytes(e.bytes)}`,
    `  source reads   ${e.requests.gets} GET, up to ${e.requests.taggings} GetObjectTagging, ${e.requests.heads ?? 0} HEAD (multipart parts), ${e.requests.lists} LIST`,
    `  source egress  ${bytes(e.egress.bytes)} at ${e.egress.perGB === null ? '?' : `$${e.egress.perGB}/GB`} (${e.egress.prices ?? 'no prices'})`,
    `  move cost      ${usd(e.egress.cost)} (egress and requests, read once; client misses read ahead of the backfill, not twice)`,
    `  stored         ${bytes(e.storage.bytes)} on the backends under policy ${e.storage.policy}, ${e.storage.perMonth === null ? 'unpriced' : `$${e.storage.perMonth.toFixed(2)}/month`}`,
    '',
  ].join('\n');
}

export function progressText(buckets: BackfillProgress[]): string {
  if (!buckets.length) return 'no bucket of this gateway has a source\n';
  const rows = [['bucket', 'phase', 'complete', 'this pass', 'adopted', 'egress', 'cost', 'rate', 'left']];
  for (const p of buckets) {
    rows.push([
      p.bucket,
      p.phase,
      p.complete ? `yes (${ago(p.completedAt)})` : 'no',
      `${p.pass.listed} walked${p.pass.failed ? `, ${p.pass.failed} failed` : ''}${p.pass.changed ? `, ${p.pass.changed} changed` : ''}`,
      `${p.totals.adopted} (${bytes(p.totals.bytes)})`,
      bytes(p.egress.bytes),
      p.egress.cost === null ? '-' : `$${p.egress.cost.toFixed(4)}`,
      p.bytesPerSecond === null ? '-' : `${bytes(p.bytesPerSecond)}/s`,
      p.secondsRemaining === null ? (p.bytesLeft === null ? '-' : bytes(p.bytesLeft)) : duration(Math.ceil(p.secondsRemaining)),
    ]);
  }
  const notes = buckets.flatMap((p) => [
    `${p.bucket}: source ${p.source}${p.last ? `; last pass: ${p.last.listed} listed, ${p.last.adopted} adopted, ${p.last.readopted} adopted again, ${p.last.held} held, ${p.last.deleted} deleted through shardgate` : ''}`,
    ...(p.lastError ? [`${p.bucket}: last problem ${new Date(p.lastError.at).toISOString()} ${p.lastError.key}: ${p.lastError.message}`] : []),
  ]);
  return [table(rows), ...notes, ''].join('\n');
}
