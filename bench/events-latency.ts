/**
 * npm run bench:events [-- --puts N] [-- --down-seconds S] [-- --cpu [--undelivered | --queue]] [-- --records-per-post N]
 *
 * Bucket event notifications on the local gateway (`npm start`'s Worker in workerd, its own state
 * dir): N PUTs to a bucket with a rule for a webhook on this machine, one after the other; for
 * each, commit to webhook = the time the webhook received the event minus its eventTime (the
 * commit's instant, the same clock), and the PUT's own time. Prints p50 and p95 of both. With
 * --down-seconds S, the webhook answers 503 for S seconds first (writes go on), then every event
 * must arrive once it is back: prints how long the backlog took to drain and whether each key's
 * events arrived in order. With --cpu instead: workerd's CPU (utime+stime of its process) per PUT
 * into a bucket with a rule announcing it (its delivery included: it runs in the same workerd)
 * and into one without, interleaved in batches, for an inline (1 KiB) and a coded (64 KiB)
 * object, and their ratio; with --undelivered the webhook is down and retried only after an
 * hour, so what is measured is the commit's own cost (the outbox rows in its transaction); with
 * --queue the destination is the local Queue binding instead of the webhook (its events go in
 * one sendBatch per alarm run, where a webhook costs a POST each): each batch of PUTs is followed
 * by a pause for the alarm's delivery, the same pause after the bucket without a rule, and every
 * event is checked delivered at the end (the outbox's figures); --records-per-post N gives the
 * webhook that setting (up to N events' records per POST). It measures one machine: figures, not a target.
 */
import { AwsClient } from 'aws4fetch';
import { CreateBucketCommand, PutBucketNotificationConfigurationCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { devConfigSource } from '../dev/dev-config.ts';
import { startLocalGateway } from '../dev/local-gateway.ts';
import { cpuSeconds, descendants, listenerOf } from '../test/support/proc.ts';

const { values } = parseArgs({
  options: {
    puts: { type: 'string', default: '200' },
    'down-seconds': { type: 'string', default: '0' },
    cpu: { type: 'boolean' },
    undelivered: { type: 'boolean' },
    queue: { type: 'boolean' },
    'records-per-post': { type: 'string', default: '1' },
  },
});
const PUTS = Number(values.puts);
const DOWN_MS = Number(values['down-seconds']) * 1000;
/** How long after a batch of PUTs the Queue's delivery is given to run (the alarm fires at the commit). */
const QUEUE_PAUSE_MS = 400;

let down = DOWN_MS > 0 || values.undelivered === true;
/** POSTs the webhook acknowledged. */
let posts = 0;
const arrivals: { key: string; sequencer: string; lagMs: number; at: number }[] = [];
const receiver = createServer(async (req, res) => {
  const body = JSON.parse(Buffer.concat(await req.toArray()).toString('utf8')) as {
    Records?: { eventTime: string; s3: { object: { key: string; sequencer: string } } }[];
  };
  if (down) return void res.writeHead(503).end();
  posts++;
  const now = Date.now();
  for (const r of body.Records ?? []) arrivals.push({ key: r.s3.object.key, sequencer: r.s3.object.sequencer, lagMs: now - Date.parse(r.eventTime), at: now });
  res.writeHead(200).end();
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;

const config = JSON.parse(devConfigSource()) as Record<string, unknown>;
config.notifications = {
  destinations: {
    bench: values.queue ? { queue: 'EVENTS_QUEUE' } : { webhook: hook, secretValue: 'bench', recordsPerPost: Number(values['records-per-post']) },
  },
  ...(values.undelivered ? { backoffMs: 3_600_000, maxBackoffMs: 3_600_000 } : { backoffMs: 200, maxBackoffMs: 2000 }),
  maxAttempts: 100,
};
const stateDir = mkdtempSync(join(tmpdir(), 'shardgate-bench-events-'));
const before = new Set(descendants(process.pid).map((p) => p.pid));
const gateway = await startLocalGateway({
  port: 0, // any free port
  cronSeconds: 0, // no cron: delivery runs from the catalog's alarm alone
  stateDir,
  log: () => {},
  bindings: { SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify(config) } },
});
const s3 = new S3Client({
  endpoint: gateway.url.origin,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' },
});

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

try {
  await s3.send(new CreateBucketCommand({ Bucket: 'bench-events' }));
  await s3.send(
    new PutBucketNotificationConfigurationCommand({
      Bucket: 'bench-events',
      NotificationConfiguration: { QueueConfigurations: [{ QueueArn: 'arn:shardgate:sqs:::bench', Events: ['s3:ObjectCreated:*'] }] },
    }),
  );
  if (values.cpu) {
    await s3.send(new CreateBucketCommand({ Bucket: 'bench-quiet' }));
    const workerd = descendants(process.pid)
      .filter((p) => p.comm === 'workerd' && !before.has(p.pid))
      .map((p) => p.pid);
    const pid = listenerOf(Number(gateway.url.port), workerd) ?? workerd[workerd.length - 1]!;
    for (const size of [1024, 64 * 1024]) {
      const spent = { 'bench-events': 0, 'bench-quiet': 0 };
      let expected = arrivals.length;
      const postsBefore = posts;
      const arrivalsBefore = arrivals.length;
      const body = new Uint8Array(size).fill(7);
      for (let round = 0; round < 10; round++)
        for (const bucket of round % 2 ? (['bench-events', 'bench-quiet'] as const) : (['bench-quiet', 'bench-events'] as const)) {
          const t = cpuSeconds(pid);
          for (let i = 0; i < PUTS / 10; i++) await s3.send(new PutObjectCommand({ Bucket: bucket, Key: `k${i}`, Body: body }));
          if (values.queue)
            await new Promise((r) => setTimeout(r, QUEUE_PAUSE_MS)); // the alarm's sendBatch (both buckets wait alike)
          else if (bucket === 'bench-events' && !values.undelivered) {
            expected += PUTS / 10;
            while (arrivals.length < expected) await new Promise((r) => setTimeout(r, 5)); // delivered: its CPU counted
          }
          spent[bucket] += cpuSeconds(pid) - t;
        }
      if (values.queue) await expectQueueDelivered();
      // Each bucket got PUTS PUTs: 10 batches of PUTS / 10.
      const per = (b: keyof typeof spent) => (spent[b] / PUTS) * 1000;
      const how = values.undelivered
        ? 'not delivered: the commit alone'
        : values.queue
          ? 'delivery to a Queue included'
          : `delivery to a webhook included, ${arrivals.length - arrivalsBefore} events in ${posts - postsBefore} POSTs`;
      console.log(
        `${size / 1024} KiB PUT, workerd CPU per PUT: with a rule ${per('bench-events').toFixed(2)} ms (${how}), without ${per('bench-quiet').toFixed(2)} ms: ${(per('bench-events') / per('bench-quiet')).toFixed(2)}x`,
      );
    }
  } else await latency();
} finally {
  s3.destroy();
  await gateway.close();
  receiver.close();
  rmSync(stateDir, { recursive: true, force: true });
}

/** Every event of the bucket handed to the Queue: the outbox's figures, read through the admin API. */
async function expectQueueDelivered(): Promise<void> {
  const signer = new AwsClient({ accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret', service: 's3', region: 'us-east-1' });
  for (const deadline = Date.now() + 30_000; ; ) {
    const res = await signer.fetch(new URL('/_shardgate/admin/events?bucket=bench-events&limit=1', gateway.url).toString(), {
      method: 'POST',
      headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
    });
    const { destinations } = (await res.json()) as { destinations: { destination: string; backlog: number; delivered: number }[] };
    const bench = destinations.find((d) => d.destination === 'bench');
    if (bench && bench.backlog === 0) return;
    if (Date.now() > deadline) throw new Error(`the Queue destination still has ${bench?.backlog} events waiting`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function latency(): Promise<void> {
  const upAt = Date.now() + DOWN_MS;
  const putMs: number[] = [];
  for (let i = 0; i < PUTS; i++) {
    const t = Date.now();
    await s3.send(new PutObjectCommand({ Bucket: 'bench-events', Key: `k${i % 10}`, Body: `body ${i}` }));
    putMs.push(Date.now() - t);
  }
  if (DOWN_MS) {
    while (Date.now() < upAt) await new Promise((r) => setTimeout(r, 50));
    down = false;
  }
  const deadline = Date.now() + 60_000 + DOWN_MS;
  while (arrivals.length < PUTS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const inOrder = [...new Set(arrivals.map((a) => a.key))].every((key) => {
    const seq = arrivals.filter((a) => a.key === key).map((a) => a.sequencer);
    return seq.every((s, i) => i === 0 || s > seq[i - 1]!);
  });
  console.log(`events: ${arrivals.length} of ${PUTS} PUTs announced; each key's events in order: ${inOrder}`);
  console.log(`PUT (client round trip): p50 ${pct(putMs, 50)} ms, p95 ${pct(putMs, 95)} ms`);
  if (!DOWN_MS) {
    const lag = arrivals.map((a) => a.lagMs);
    console.log(`commit to webhook: p50 ${pct(lag, 50)} ms, p95 ${pct(lag, 95)} ms`);
  } else console.log(`webhook down ${DOWN_MS / 1000} s: the backlog drained ${Math.max(...arrivals.map((a) => a.at)) - upAt} ms after it came back`);
  if (arrivals.length < PUTS) process.exitCode = 1;
}
