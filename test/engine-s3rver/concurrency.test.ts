/**
 * Many requests in one isolate: 128 concurrent 4 MiB PUTs, then 128 concurrent GETs of them,
 * through the gateway in workerd over six s3rver processes (4+2). Every request must succeed
 * with the right bytes (a busy pool is not a broken one: no 503 from a healthy set of
 * backends), and the gateway's workerd may grow by less than 128 MiB, an isolate's whole memory
 * limit: the isolate's coding budget (engine/coding-budget.ts, 48 MiB) queues what does not fit
 * instead of buffering it. Measured on a 2-core machine: 64-83 MiB alone or beside other test
 * files; 102 MiB once in CI (garbage not yet collected and allocator slack vary from run to run).
 * Without the budget the GETs fail outright (the isolate runs out of memory; tried with a 1 GiB
 * budget), so the bound is not what catches a broken budget; it catches growth past the limit.
 * Memory is the workerd process's RSS (it also holds the catalog's Durable Object, SQLite and the
 * sockets), above its level after a warm-up burst of 128 concurrent 1 MiB PUTs and GETs: the first
 * burst an isolate serves at that concurrency grows the process (V8, workerd and the allocator
 * sizing up), and that is not the data path (see WARM_SIZE for why 1 MiB; with it: 43-53 MiB for
 * the PUTs, 78-82 for the GETs, 2026-12-05). The isolate
 * itself (heap + ArrayBuffers + wasm) cannot be sampled here: the DevTools link makes 4 MiB
 * bodies crawl.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { createHash } from 'node:crypto';
import { Agent } from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { listenerOf, rssBytes, rssSampler, workerdPids } from '../support/proc.ts';
import { bodyBytes } from './bytes.ts';
import { disposeServers, gatewayConfig, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const MiB = 1024 * 1024;
const COUNT = 128;
const SIZE = 4 * MiB;
/** The warm-up burst's bodies: as large as one read buffer of a request body (auth/body-stream.ts). */
const WARM_SIZE = 1 * MiB;
const MAX_GROWTH_BYTES = 128 * MiB;
const BUCKET = 'busy';

let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;

beforeAll(async () => {
  servers = await startServers(6);
  // Memory is measured here: poison mode (which copies every chunk it lends) off.
  gateway = await startGateway(gatewayConfig(servers, { timeoutMs: 60_000 }), { poison: false });
}, 180_000);

afterAll(async () => {
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
}, 120_000);

test(`${COUNT} concurrent ${SIZE / MiB} MiB PUTs, then GETs: all succeed, workerd grows by less than ${MAX_GROWTH_BYTES / MiB} MiB`, async () => {
  // The Worker's own socket: wrangler's dev proxy in front of it holds a few upstream connections,
  // which requests queued in the coding budget (their bodies unread) would tie up.
  const endpoint = (await gateway!.directUrl()).origin;
  // One connection pool per phase: workerd closes a connection after 5 s without a request (KJ's
  // pipelineTimeout), and Node may hand out a pooled socket in the instant it closes (ECONNRESET
  // before the request reaches the Worker). The SDK's default retries hide that from users; this
  // test makes one attempt per request so that any failure of the gateway shows.
  const clientForPhase = (extra: { maxAttempts?: number } = {}) =>
    gateway!.client({
      ...extra,
      endpoint,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: new NodeHttpHandler({ httpAgent: new Agent({ keepAlive: true, maxSockets: COUNT * 2 }), requestTimeout: 300_000 }),
    });
  // The expected digests first: hashing 512 MiB takes seconds, and done between the warm-up and
  // the PUTs it left the warm-up's pooled sockets idle into workerd's 5 s close (every PUT then
  // raced a closing socket: EPIPE/ECONNRESET with no answer, on a slow machine all 128 of them).
  const keys = Array.from({ length: COUNT }, (_, i) => `obj-${i}`);
  const digests = new Map(keys.map((k) => [k, createHash('md5').update(bodyBytes(k, SIZE)).digest('hex')]));
  // The warm-up may retry (it is not measured): its burst of 1 MiB bodies queues in the coding
  // budget long enough to meet workerd's 5 s close of an idle pooled socket now and then.
  let s3 = clientForPhase({ maxAttempts: 3 });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  const pids = workerdPids();
  const proxy = listenerOf(Number(gateway!.url.port), pids);
  const gw = pids.find((p) => p !== proxy)!;
  // Warm-up: isolate, coder and connections in place, and a first burst of COUNT requests of
  // WARM_SIZE bodies. Until a request body was read into a buffer of its own size (issue 42), every
  // request, a 2 KiB one too, allocated a 1 MiB read buffer, and the burst of 2 KiB PUTs used here
  // then grew the process by ~85 MiB of them, which the 4 MiB phase reused: the warm-up sized the
  // process for that concurrency only by accident. With 2 KiB bodies now the same 4 MiB phase
  // measured 120-138 MiB above that leaner level, at the same peak RSS as before (~275 MiB).
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'warm', Body: bodyBytes('warm', SIZE) }));
  await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'warm' }))).Body!.transformToByteArray();
  await Promise.all(
    Array.from({ length: COUNT }, (_, i) => s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `small-${i}`, Body: bodyBytes('s', WARM_SIZE) }))),
  );
  await Promise.all(
    Array.from({ length: COUNT }, async (_, i) => (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: `small-${i}` }))).Body!.transformToByteArray()),
  );
  await new Promise((r) => setTimeout(r, 1000));
  const idle = rssBytes(gw)!;

  s3.destroy();
  s3 = clientForPhase();
  let sampler = rssSampler(gw, 50);
  const puts = await Promise.allSettled(keys.map((k) => s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: k, Body: bodyBytes(k, SIZE) }))));
  const putPeak = sampler.stop().peak;
  const putFailures = puts.flatMap((r, i) => (r.status === 'rejected' ? [`${keys[i]}: ${(r.reason as Error).name} ${(r.reason as Error).message}`] : []));
  expect(putFailures, 'every PUT succeeds').toEqual([]);

  s3.destroy();
  s3 = clientForPhase();
  sampler = rssSampler(gw, 50);
  const gets = await Promise.allSettled(
    keys.map(async (k) => {
      const res = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: k }));
      const h = createHash('md5');
      for await (const chunk of res.Body as AsyncIterable<Uint8Array>) h.update(chunk);
      return h.digest('hex');
    }),
  );
  const getPeak = sampler.stop().peak;
  const getFailures = gets.flatMap((r, i) =>
    r.status === 'rejected'
      ? [`${keys[i]}: ${(r.reason as Error).name} ${(r.reason as Error).message}`]
      : r.value !== digests.get(keys[i]!)
        ? [`${keys[i]}: wrong bytes`]
        : [],
  );
  expect(getFailures, 'every GET succeeds with the right bytes').toEqual([]);

  const mib = (n: number) => Math.round((n / MiB) * 10) / 10;
  console.log(
    'concurrency figures',
    JSON.stringify({ count: COUNT, sizeMiB: SIZE / MiB, idleMiB: mib(idle), putGrowthMiB: mib(putPeak - idle), getGrowthMiB: mib(getPeak - idle) }),
  );
  expect(putPeak - idle, 'workerd RSS growth during the PUTs').toBeLessThan(MAX_GROWTH_BYTES);
  expect(getPeak - idle, 'workerd RSS growth during the GETs').toBeLessThan(MAX_GROWTH_BYTES);
}, 900_000);
