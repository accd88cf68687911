/**
 * Issue 15's proof: redundancy comes back by itself after an outage, without the scrubber.
 * The gateway in workerd (catalog Durable Objects with their repair alarms, the local repair
 * queue) over six s3rver processes, 4+2, driven through @aws-sdk/client-s3 on the Worker's own
 * socket. No cron runs here and nobody calls the admin API: whatever repairs happens because the
 * buckets' worklists drive it (catalog/sql-repairs.ts).
 * - One backend killed, 100 objects written (each acknowledged with 5 of 6 shards), the backend
 *   back: every missed shard is on its disk within the deadline, and then any two other
 *   backends may die and every object still reads byte for byte.
 * - The same after an outage past the cap of the retry backoff and the time after which a sent
 *   task is sent again (catalog/sql-repairs.ts): the worklist keeps retrying, throttled, and
 *   never drops one. The config's `repairs` timing is cut to a fifth here (2 s cap, 6 s resend),
 *   so those states are reached in 8 s instead of the defaults' 40 (model/repair-timing.ts).
 * - The same when the gateway is killed (SIGKILL) with the repairs pending and started again on
 *   its state: nothing in an isolate's memory or a queue message is needed.
 * Time to full redundancy is printed (`redundancy figures`) for the closing note; the deadline
 * is a hang detector, not the goal (30 s for 100 objects).
 * Also checked throughout: the gateway logs no uncaught exception or unhandled rejection.
 */
import type { RepairTiming } from '../../worker/model/repair-timing.ts';
import { RECHECK_AFTER_MS, REFUSED_DOWN_MS } from '../../worker/engine/reachability.ts';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { AwsClient } from 'aws4fetch';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { workerdPids } from '../support/proc.ts';
import { watchUncaught, type UncaughtWatch } from '../support/uncaught-watch.ts';
import { bodyBytes } from './bytes.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, killHard, restart, shardKeys, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const KiB = 1024;
const SIZE = 96 * KiB; // one stripe of 4 x 64 KiB blocks
const DEADLINE_MS = 120_000;

let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
let s3: S3Client;
let direct: URL;
const stateDir = mkdtempSync(join(tmpdir(), 'shardgate-redundancy-state-'));
/** The defaults (1 s doubling to 10 s, resent after 30 s) cut to a fifth. */
const TIMING: RepairTiming = { retryFirstMs: 200, retryMaxMs: 2000, resendAfterMs: 6000 };
const config = () => ({
  ...gatewayConfig(servers, { timeoutMs: 2000, policies: { 'ec-4-2': { k: 4, m: 2, blockSize: 64 * KiB, small: { threshold: 0 } } } }),
  repairs: TIMING,
});
const figures: Record<string, unknown>[] = [];

let watch: UncaughtWatch;

async function boot(): Promise<void> {
  gateway = await startGateway(config(), { stateDir, inspector: true });
  direct = await gateway.directUrl();
  // The SDK's own retries (5 attempts with its backoff), as clients run: a backend just restarted
  // is refused for the second or two until the gateway rechecks it (engine/reachability.ts).
  s3 = gateway.client({ endpoint: direct.origin, maxAttempts: 5 });
}

beforeAll(async () => {
  watch = watchUncaught();
  servers = await startServers(6);
  await boot();
}, 180_000);

afterAll(async () => {
  watch.stop();
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
  rmSync(stateDir, { recursive: true, force: true });
  console.log('redundancy figures', JSON.stringify(figures));
}, 120_000);

async function status(): Promise<{ data: { degradedUnits: number; missingShards: number; repairStuck: number } }> {
  const signer = new AwsClient({ ...DEV_CREDENTIALS, service: 's3', region: 'us-east-1', retries: 0 });
  const res = await signer.fetch(new URL('/_shardgate/status', direct).toString(), { headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } });
  expect(res.status).toBe(200);
  return (await res.json()) as never;
}

/** Shard files of `bucket` on server i's disk (one per object: 4+2 over six backends). */
async function shardsOn(i: number, bucket: string): Promise<number> {
  return (await shardKeys(servers[i]!, bucket)).length;
}

async function writeAll(bucket: string, keys: string[]): Promise<void> {
  await s3.send(new CreateBucketCommand({ Bucket: bucket })).catch((err: Error) => {
    if (err.name !== 'BucketAlreadyOwnedByYou') throw err;
  });
  for (let i = 0; i < keys.length; i += 8) {
    await Promise.all(keys.slice(i, i + 8).map((k) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: bodyBytes(k, SIZE) }))));
  }
}

/** From the backend's return: how long until all `count` shards are on its disk and nothing is degraded. */
async function timeToFullRedundancy(backend: number, bucket: string, count: number): Promise<number> {
  const started = Date.now();
  let last = '';
  while (Date.now() - started < DEADLINE_MS) {
    const [onDisk, s] = await Promise.all([shardsOn(backend, bucket), status()]);
    last = `${onDisk} of ${count} shards on s3rver-${backend}; degraded units ${s.data.degradedUnits}; status ${JSON.stringify(s).slice(0, 3000)}`;
    if (onDisk === count && s.data.degradedUnits === 0) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`redundancy not back within ${DEADLINE_MS / 1000} s: ${last}`);
}

async function readAll(bucket: string, keys: string[]): Promise<string[]> {
  const wrong: string[] = [];
  for (let i = 0; i < keys.length; i += 8) {
    await Promise.all(
      keys.slice(i, i + 8).map(async (k) => {
        try {
          const got = await (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: k }))).Body!.transformToByteArray();
          if (createHash('sha256').update(got).digest('hex') !== createHash('sha256').update(bodyBytes(k, SIZE)).digest('hex')) wrong.push(`${k}: wrong bytes`);
        } catch (err) {
          wrong.push(`${k}: ${(err as Error).name} ${(err as Error).message}`);
        }
      }),
    );
  }
  return wrong;
}

/**
 * With backends `a` and `b` down, every object reads back whole; writes, below the write quorum
 * (k+1), are refused with a 503, and (last test) nothing about them goes unhandled.
 */
async function expectTwoOthersDown(bucket: string, keys: string[], a: number, b: number): Promise<void> {
  await killHard(servers[a]!);
  await killHard(servers[b]!);
  try {
    expect(await readAll(bucket, keys)).toEqual([]);
    const refused = await Promise.allSettled(
      [0, 1, 2, 3].map((i) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: `refused-${i}`, Body: bodyBytes(`refused-${i}`, SIZE) }))),
    );
    for (const r of refused) expect(r.status === 'rejected' && (r.reason as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode).toBe(503);
  } finally {
    await restart(servers[a]!);
    await restart(servers[b]!);
    // The gateway knows both down (engine/reachability.ts: refused at once for REFUSED_DOWN_MS,
    // rechecked by a probe once that knowledge is RECHECK_AFTER_MS old): past both.
    await new Promise((r) => setTimeout(r, REFUSED_DOWN_MS + RECHECK_AFTER_MS));
  }
}

describe('redundancy comes back without the scrubber', { timeout: 600_000 }, () => {
  test('a backend down while 100 objects are written: back, every missed shard returns; then any two others may fail', async () => {
    const bucket = 'outage-short';
    const keys = Array.from({ length: 100 }, (_, i) => `obj-${i}`);
    await killHard(servers[5]!);
    await writeAll(bucket, keys);
    expect((await status()).data.degradedUnits).toBe(100);
    await restart(servers[5]!);
    const ms = await timeToFullRedundancy(5, bucket, keys.length);
    figures.push({ case: '100 objects, backend down during the writes', msToFullRedundancy: ms });

    await expectTwoOthersDown(bucket, keys, 1, 2);
  });

  test('after an outage past the retry cap and the resend timeout: the worklist kept retrying and nothing was dropped', async () => {
    const bucket = 'outage-long';
    const keys = Array.from({ length: 20 }, (_, i) => `long-${i}`);
    await killHard(servers[4]!);
    await writeAll(bucket, keys);
    expect((await status()).data.degradedUnits).toBe(20);
    await new Promise((r) => setTimeout(r, TIMING.retryMaxMs + TIMING.resendAfterMs)); // every retry state reached
    const s = await status();
    expect(s.data.degradedUnits).toBe(20); // still there: retried, not dropped, not wrongly marked done
    await restart(servers[4]!);
    const ms = await timeToFullRedundancy(4, bucket, keys.length);
    figures.push({ case: `20 objects, ${(TIMING.retryMaxMs + TIMING.resendAfterMs) / 1000} s outage`, msToFullRedundancy: ms });
    await expectTwoOthersDown(bucket, keys, 0, 1);
  });

  test('the gateway killed with repairs pending: started again on its state, it finishes them', async () => {
    const bucket = 'crash';
    const keys = Array.from({ length: 20 }, (_, i) => `crash-${i}`);
    await killHard(servers[3]!);
    await writeAll(bucket, keys);
    expect((await status()).data.degradedUnits).toBe(20);
    // SIGKILL every workerd of the gateway: no shutdown, the local queue's messages are gone.
    for (const pid of workerdPids()) process.kill(pid, 'SIGKILL');
    await gateway!.dispose().catch(() => {});
    gateway = undefined;
    await restart(servers[3]!);
    await boot();
    const ms = await timeToFullRedundancy(3, bucket, keys.length);
    figures.push({ case: '20 objects, gateway killed with repairs pending', msToFullRedundancy: ms });
    await killHard(servers[4]!);
    await killHard(servers[5]!);
    try {
      expect(await readAll(bucket, keys)).toEqual([]);
      // Two down is below the write quorum (k+1): refused with a 503, and (last test) nothing
      // about it goes unhandled.
      const refused = await Promise.allSettled(
        [0, 1, 2, 3].map((i) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: `refused-${i}`, Body: bodyBytes(`refused-${i}`, SIZE) }))),
      );
      for (const r of refused) expect(r.status === 'rejected' && (r.reason as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode).toBe(503);
    } finally {
      await restart(servers[4]!);
      await restart(servers[5]!);
    }
  });

  test('no uncaught exception or unhandled rejection was logged', () => {
    expect(watch.lines).toEqual([]);
  });
});
