/**
 * Many requests in one isolate: 128 concurrent 4 MiB PUTs, then 128 concurrent GETs of them,
 * through the gateway in workerd over six s3rver processes (4+2). Every request must succeed
 * with the right bytes (a busy pool is not a broken one: no 503 from a healthy set of
 * backends), and the gateway's workerd may grow by less than 100 MiB: the isolate's coding
 * budget (engine/coding-budget.ts) queues what does not fit instead of buffering it.
 * Memory is the workerd process's RSS (it also holds the catalog's Durable Object, SQLite and the
 * sockets), above its level after a warm-up burst of 128 small requests: the first burst an
 * isolate serves grows the process by ~85 MiB whatever the bodies (V8 and workerd sizing up for
 * that concurrency, measured with 2 KiB objects), and that is not the data path. The isolate
 * itself (heap + ArrayBuffers + wasm) cannot be sampled here: the DevTools link makes 4 MiB
 * bodies crawl.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { AwsClient } from 'aws4fetch';
import { createHash } from 'node:crypto';
import { Agent } from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { listenerOf, rssBytes, rssSampler, workerdPids } from '../support/proc.ts';
import { bodyBytes } from './bytes.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const MiB = 1024 * 1024;

/** A connection the kernel or workerd reset before the request reached the Worker (no answer at all). */
const RESET = /EPIPE|ECONNRESET|socket hang up/;

/** The gateway's own count of `operation` answers by status code (signed metrics). */
async function answered(endpoint: string, operation: string): Promise<Map<string, number>> {
  const signer = new AwsClient({ ...DEV_CREDENTIALS, service: 's3', region: 'us-east-1', retries: 0 });
  const text = await (await signer.fetch(`${endpoint}/_shardgate/metrics`)).text();
  const codes = new Map<string, number>();
  for (const m of text.matchAll(new RegExp(`^shardgate_s3_requests_total\\{operation="${operation}",code="(\\d+)"\\} (\\d+)$`, 'gm'))) codes.set(m[1]!, Number(m[2]));
  return codes;
}

/**
 * Every request succeeded, except connections reset with no answer at all. On the 2-core machine
 * of 2026-12-01 (base commit 008dda3 as well as later ones), 128 concurrent 4 MiB PUTs saw between
 * 1 and 128 client connections end in EPIPE/ECONNRESET with no response, while the gateway's own
 * metrics counted no answer but 200 and the kernel's ListenOverflows counter grew; 100 concurrent
 * PUTs queued behind a one-request budget saw none. The cause is not established (an open item
 * in the issue notes). So: a reset is retried once, one at a time, and must then succeed; any
 * other failure fails the test, and so does any answer of the gateway's other than 200.
 */
async function expectOnlyUnseenResets<T>(operation: string, keys: string[], results: PromiseSettledResult<T>[], endpoint: string, again: (k: string) => Promise<T>): Promise<void> {
  const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [{ key: keys[i]!, error: `${(r.reason as Error).name} ${(r.reason as Error).message}` }] : []));
  expect(failed.filter((f) => !RESET.test(f.error)), `every ${operation} succeeds`).toEqual([]);
  const codes = await answered(endpoint, operation);
  expect([...codes.keys()].filter((c) => c !== '200'), `${operation} answers other than 200 (the gateway's metrics)`).toEqual([]);
  if (failed.length) console.log(`${operation}: ${failed.length} of ${keys.length} connections reset before the Worker saw them; retried`);
  for (const f of failed) await again(f.key);
}
const COUNT = 128;
const SIZE = 4 * MiB;
const MAX_GROWTH_BYTES = 100 * MiB;
const BUCKET = 'busy';

let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;

beforeAll(async () => {
  servers = await startServers(6);
  gateway = await startGateway(gatewayConfig(servers, { timeoutMs: 60_000 }));
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
  const clientForPhase = () =>
    gateway!.client({
      endpoint,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: new NodeHttpHandler({ httpAgent: new Agent({ keepAlive: true, maxSockets: COUNT * 2 }), requestTimeout: 300_000 }),
    });
  let s3 = clientForPhase();
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  const pids = workerdPids();
  const proxy = listenerOf(Number(gateway!.url.port), pids);
  const gw = pids.find((p) => p !== proxy)!;
  // Warm-up: isolate, coder and connections in place, and a first burst of COUNT small requests.
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'warm', Body: bodyBytes('warm', SIZE) }));
  await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'warm' }))).Body!.transformToByteArray();
  await Promise.all(Array.from({ length: COUNT }, (_, i) => s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `small-${i}`, Body: bodyBytes('s', 2048) }))));
  await Promise.all(Array.from({ length: COUNT }, async (_, i) => (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: `small-${i}` }))).Body!.transformToByteArray()));
  await new Promise((r) => setTimeout(r, 1000));
  const idle = rssBytes(gw)!;

  const keys = Array.from({ length: COUNT }, (_, i) => `obj-${i}`);
  const digests = new Map(keys.map((k) => [k, createHash('md5').update(bodyBytes(k, SIZE)).digest('hex')]));
  let sampler = rssSampler(gw, 50);
  const putOne = (k: string) => s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: k, Body: bodyBytes(k, SIZE) }));
  const puts = await Promise.allSettled(keys.map(putOne));
  const putPeak = sampler.stop().peak;
  await expectOnlyUnseenResets('PutObject', keys, puts, endpoint, putOne);

  s3.destroy();
  s3 = clientForPhase();
  sampler = rssSampler(gw, 50);
  const getOne = async (k: string) => {
    const res = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: k }));
    const h = createHash('md5');
    for await (const chunk of res.Body as AsyncIterable<Uint8Array>) h.update(chunk);
    const digest = h.digest('hex');
    if (digest !== digests.get(k)) throw new Error(`${k}: wrong bytes`);
    return digest;
  };
  const gets = await Promise.allSettled(keys.map(getOne));
  const getPeak = sampler.stop().peak;
  await expectOnlyUnseenResets('GetObject', keys, gets, endpoint, getOne);

  const mib = (n: number) => Math.round((n / MiB) * 10) / 10;
  console.log('concurrency figures', JSON.stringify({ count: COUNT, sizeMiB: SIZE / MiB, idleMiB: mib(idle), putGrowthMiB: mib(putPeak - idle), getGrowthMiB: mib(getPeak - idle) }));
  expect(putPeak - idle, 'workerd RSS growth during the PUTs').toBeLessThan(MAX_GROWTH_BYTES);
  expect(getPeak - idle, 'workerd RSS growth during the GETs').toBeLessThan(MAX_GROWTH_BYTES);
}, 900_000);
