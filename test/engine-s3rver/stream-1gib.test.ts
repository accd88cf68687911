/**
 * Streaming with bounded memory: one PUT and one GET of 1 GiB (SHARDGATE_STREAM_TEST_BYTES to
 * change it) through the gateway in workerd, for each of 4+2 (striped), 8+3, 10+4 and 16+4
 * (column units; 16+4, k+m = 20, the widest code issue 10 names), over twenty s3rver
 * processes (the default 256 KiB blocks). The body is produced and
 * hashed on the fly (never held), sent as a single PutObject with ContentLength, read back as a
 * stream and hashed again. A probe in front of no backend would see what workerd opens, so the
 * 6-open-subrequests rule is checked by the engine tests (test/engine/column.test.ts).
 * Memory: the VmRSS of the gateway's workerd process (the one that does not listen on
 * worker.url: that one is wrangler's dev proxy) is sampled every 100 ms; its peak may exceed its
 * idle figure (after a warm-up request) by less than 64 MiB, the product target. The proxy's
 * figures and the throughput are printed, not asserted.
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { listenerOf, rssBytes, rssSampler, workerdPids } from '../support/proc.ts';
import { bodyBytes, bodyStream } from './bytes.ts';
import { disposeServers, gatewayConfig, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const MiB = 1024 * 1024;
/**
 * Proofs at two sizes (docs/TESTING.md): `npm test` streams 256 MiB, more than twice the growth
 * allowed below, so a body held whole still fails; `npm run test:full` (CI, once) the full 1 GiB.
 */
const SIZE = Number(process.env.SHARDGATE_STREAM_TEST_BYTES ?? (process.env.SHARDGATE_FULL_SIZE === '1' ? 1024 : 256) * MiB);
/**
 * Bounded memory: a 1 GiB body streams through with the worker growing by less than this
 * (about one tenth of the body), for every policy. The product target is tighter, 64 MiB above
 * idle for PUT and GET (the bench); measured here from a fresh worker: 4+2 20 MiB, 8+3 47 MiB,
 * 10+4 50 MiB (a column unit's parity is up to 24 MiB of wasm memory; shard sinks and shard
 * readers reuse their block buffers through isolate pools, buffer-pool.ts). Before the read pool,
 * a 10+4 GET's stream buffers alone took the growth to 92-97 MiB (CI failed on it).
 */
const MAX_GROWTH_BYTES = 96 * MiB;
const POLICIES: Record<string, object> = { 'ec-4-2': { k: 4, m: 2 }, 'ec-8-3': { k: 8, m: 3 }, 'ec-10-4': { k: 10, m: 4 }, 'ec-16-4': { k: 16, m: 4 } };
const bucketOf = (policy: string) => `stream-${policy}`;

let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
let s3: S3Client;

beforeAll(async () => {
  servers = await startServers(20);
}, 180_000);

/** A fresh gateway per policy: RSS never shrinks, so one policy's peak would hide the next one's. */
async function freshGateway(policy: string): Promise<void> {
  await gateway?.dispose().catch(() => {});
  // Memory is measured here: poison mode (which copies every chunk it lends) off.
  gateway = await startGateway(gatewayConfig(servers, { timeoutMs: 30_000, maxAttempts: 1, policies: { [policy]: POLICIES[policy]! } }), { poison: false });
  s3 = gateway.client({ requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
  await s3.send(new CreateBucketCommand({ Bucket: bucketOf(policy) }));
}

afterAll(async () => {
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
}, 120_000);

interface Sampler {
  stop(): Promise<{ peak: number; samples: number; trace: string }>;
}

/** VmRSS of `pid` every 100 ms; `trace` is the RSS in MiB at each tenth of the run (growth shape). */
function sample(pid: number): Sampler {
  const sampler = rssSampler(pid, 100);
  return {
    stop: async () => {
      const { peak, series } = sampler.stop();
      const tenths = Array.from({ length: 11 }, (_, i) => series[Math.min(series.length - 1, Math.round((i * (series.length - 1)) / 10))] ?? 0);
      return { peak, samples: series.length, trace: tenths.map((b) => (b / MiB).toFixed(0)).join(' ') };
    },
  };
}

const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;
const rate = (bytes: number, ms: number) => `${(bytes / MiB / (ms / 1000)).toFixed(1)} MiB/s`;

test.each(Object.keys(POLICIES))(
  `%s: PUT and GET of ${SIZE} bytes stream through the gateway with bounded memory`,
  async (policy) => {
    const BUCKET = bucketOf(policy);
    await freshGateway(policy);
    // Which workerd runs the gateway: the proxy is the one listening on worker.url.
    const pids = workerdPids();
    const proxy = listenerOf(Number(gateway!.url.port), pids);
    const workers = pids.filter((p) => p !== proxy);
    expect(workers, `workerd processes below this one: ${pids}, proxy ${proxy}`).toHaveLength(1);
    const gw = workers[0]!;

    // Warm-up: the isolate, the coder's wasm and every backend connection are in place.
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'warm-up', Body: bodyBytes('warm', 3 * MiB) }));
    const warm = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'warm-up' }));
    await warm.Body!.transformToByteArray();
    await new Promise((r) => setTimeout(r, 1000));
    const idle = { gateway: rssBytes(gw)!, proxy: proxy ? rssBytes(proxy)! : 0 };

    const gwSampler = sample(gw);
    const proxySampler = proxy ? sample(proxy) : undefined;

    const body = bodyStream('one-gib', SIZE);
    let t = performance.now();
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'big', Body: body.stream, ContentLength: SIZE }));
    const putMs = performance.now() - t;
    expect(body.produced()).toBe(SIZE);
    const putPeak = await gwSampler.stop();
    const sentSha256 = body.digest();

    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'big' }));
    expect(head.ContentLength).toBe(SIZE);

    const getSampler = sample(gw);
    t = performance.now();
    const res = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'big' }));
    const h = createHash('sha256');
    let received = 0;
    for await (const chunk of res.Body as AsyncIterable<Uint8Array>) {
      h.update(chunk);
      received += chunk.length;
    }
    const getMs = performance.now() - t;
    const getPeak = await getSampler.stop();
    const proxyPeak = await proxySampler?.stop();

    const report = {
      bytes: SIZE,
      put: { ms: Math.round(putMs), rate: rate(SIZE, putMs) },
      get: { ms: Math.round(getMs), rate: rate(SIZE, getMs) },
      gatewayWorkerd: {
        pid: gw,
        idle: mib(idle.gateway),
        peakDuringPut: mib(putPeak.peak),
        peakDuringGet: mib(getPeak.peak),
        putTraceMiB: putPeak.trace,
        getTraceMiB: getPeak.trace,
        growth: mib(Math.max(putPeak.peak, getPeak.peak) - idle.gateway),
        samples: putPeak.samples + getPeak.samples,
      },
      proxyWorkerd: proxy ? { pid: proxy, idle: mib(idle.proxy), peak: mib(proxyPeak!.peak), growth: mib(proxyPeak!.peak - idle.proxy) } : null,
    };
    console.log(`stream-1gib figures ${policy}`, JSON.stringify(report, null, 2));

    expect(received).toBe(SIZE);
    expect(h.digest('hex'), 'sha256 of the GET body').toBe(sentSha256);
    expect(putPeak.peak - idle.gateway, `gateway workerd RSS growth during the PUT (idle ${mib(idle.gateway)})`).toBeLessThan(MAX_GROWTH_BYTES);
    expect(getPeak.peak - idle.gateway, `gateway workerd RSS growth during the GET (idle ${mib(idle.gateway)})`).toBeLessThan(MAX_GROWTH_BYTES);
  },
  1_800_000,
);
