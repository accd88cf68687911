/**
 * The re-stripe (issue 26) in the Worker as deployed: the gateway in workerd (catalog Durable
 * Objects, sealed with the development key) over six s3rver processes. A bucket written under
 * three replicas is moved to 4+2 by a redeploy on the same state (its `buckets` entry changed);
 * the admin API's restripe-status says what is left, restripe rewrites it, signed as
 * `shardgate restripe` signs it; every object then reads back byte for byte through S3, and the
 * status document counts 0 left and every version rewritten. Also checked throughout: the
 * gateway logs no uncaught exception or unhandled rejection.
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { AwsClient } from 'aws4fetch';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { watchUncaught, type UncaughtWatch } from '../support/uncaught-watch.ts';
import { prng, randomBytes } from '../support/random.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const KiB = 1024;
const BUCKET = 'moving';
let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
const stateDir = mkdtempSync(join(tmpdir(), 'shardgate-restripe-state-'));
const configFor = (policy: 'triple' | 'ec') =>
  gatewayConfig(servers, {
    timeoutMs: 10_000,
    policies: { triple: { codec: 'replicate', replicas: 3, blockSize: 64 * KiB }, ec: { k: 4, m: 2, blockSize: 64 * KiB } },
    buckets: { [BUCKET]: policy },
  });
let watch: UncaughtWatch;

beforeAll(async () => {
  watch = watchUncaught();
  servers = await startServers(6);
}, 180_000);

afterAll(async () => {
  watch.stop();
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
  rmSync(stateDir, { recursive: true, force: true });
}, 120_000);

const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

describe('re-stripe in workerd', () => {
  it('a bucket moved from three replicas to 4+2 by a redeploy is rewritten through the admin API and reads back byte for byte', async () => {
    // Started in the test: the redeploy below restarts it on the same state with another policy.
    gateway = await startGateway(configFor('triple'), { stateDir, inspector: true });
    let s3: S3Client = gateway.client({ endpoint: (await gateway.directUrl()).origin });
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const rand = prng(263);
    const sums = new Map<string, string>();
    for (let i = 0; i < 24; i++) {
      const data = randomBytes(rand, i % 6 === 0 ? 1000 : 8 * KiB + Math.floor(rand() * 200 * KiB));
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `k${i}`, Body: data }));
      sums.set(`k${i}`, md5(data));
    }
    await gateway.dispose();

    // The redeploy: same state, the bucket's policy is now 4+2.
    gateway = await startGateway(configFor('ec'), { stateDir, inspector: true });
    const direct = await gateway.directUrl();
    s3 = gateway.client({ endpoint: direct.origin });
    const admin = new AwsClient({ ...DEV_CREDENTIALS, service: 's3', region: 'us-east-1', retries: 0 });
    const post = async (path: string) => {
      const res = await admin.fetch(new URL(`/_shardgate/admin/${path}`, direct).href, { method: 'POST' });
      expect(res.status, path).toBe(200);
      return (await res.json()) as Record<string, any>;
    };
    const before = (await post('restripe-status')).buckets as { bucket: string; policy: string; left: { units: number }; done: boolean }[];
    expect(before).toHaveLength(1);
    expect(before[0]).toMatchObject({ bucket: BUCKET, policy: 'ec', done: false });
    expect(before[0]!.left.units).toBe(20); // four of the 24 are inline (1000 bytes)

    let rewritten = 0;
    for (let run = 0; run < 20; run++) {
      const r = await post('restripe?max=7');
      rewritten += r.rewritten;
      expect(r.failed).toBe(0);
      if ((r.progress as { done: boolean }[]).every((p) => p.done) && !r.stopped) break;
    }
    expect(rewritten).toBe(20);
    const after = (await post('restripe-status')).buckets as { left: { units: number }; rewritten: { versions: number }; done: boolean }[];
    expect(after[0]).toMatchObject({ left: { units: 0 }, rewritten: { versions: 20 }, done: true });
    for (const [key, sum] of sums) {
      const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      expect(md5(await got.Body!.transformToByteArray()), key).toBe(sum);
    }
    const status = (await (await fetch(new URL('/_shardgate/status', direct))).json()) as {
      data: { restripe: { leftUnits: number; rewrittenVersions: number }; redundancy: { byPolicy: Record<string, unknown> } };
    };
    expect(status.data.restripe).toMatchObject({ leftUnits: 0, rewrittenVersions: 20 });
    expect(Object.keys(status.data.redundancy.byPolicy)).toEqual(['4+2']);
    expect(watch.lines).toEqual([]);
  }, 600_000);
});
