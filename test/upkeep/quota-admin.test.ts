/**
 * The admin API's quota and usage routes (issue 45; worker/app/quota-routes.ts), signed as
 * `shardgate quota` signs them, over memory backends and the product's catalog, with S3 requests
 * through the same app: a quota set there refuses the next PUT with Ceph's 403 QuotaExceeded XML
 * and nothing stored; a limit changed alone keeps the other; deletes pass over the quota; the
 * usage report counts versions, markers and parts, and prices the bucket; the CLI's text of it.
 */
import { AwsClient } from 'aws4fetch';
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/index.ts';
import { createAdmin } from '../../worker/app/admin.ts';
import { createApp } from '../../worker/app/app.ts';
import { createConsole } from '../../worker/app/console.ts';
import { makeAuthenticate } from '../../worker/app/auth-gate.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { restripePolicyFor } from '../../worker/engine/index.ts';
import type { BucketUsageReport as UsageReport } from '../../worker/upkeep/bucket-usage.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { TrafficMeter } from '../support/traffic-meter.ts';
import { command as quotaCommand, quotaText, parseSize, type BucketUsageReport } from '../../cli/commands/quota.ts';
import { quotaCell } from '../../cli/commands/status.ts';

const KEY = { accessKeyId: 'ops', secretAccessKey: 'ops-secret-for-tests' };
const READER = { accessKeyId: 'reader', secretAccessKey: 'reader-secret-for-tests', scope: { buckets: ['bkt'], actions: ['list' as const, 'read' as const] } };
/** A key of another account whose scope names bkt: still not shown another account's bucket's usage (worker/model/account.ts). */
const STRANGER = {
  accessKeyId: 'stranger',
  secretAccessKey: 'stranger-secret-for-tests',
  account: 'team-b',
  scope: { buckets: ['bkt'], actions: ['list' as const] },
};
const PREFIXED = {
  accessKeyId: 'prefixed',
  secretAccessKey: 'prefixed-secret-for-tests',
  scope: { buckets: ['bkt'], prefixes: ['team/'], actions: ['list' as const, 'read' as const] },
};

describe('admin quota and usage', () => {
  it('sets, changes and clears a quota that the next S3 write obeys; reports usage and cost', async () => {
    const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `d${i}` }));
    const config = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain, prices: 'aws-s3-standard' })),
      policies: { ec: { k: 4, m: 2, blockSize: 65536, small: { threshold: 0 } } },
      defaultPolicy: 'ec',
      credentials: [KEY, READER, PREFIXED, STRANGER],
    });
    const catalog = localCatalog({ garbageGraceMs: 0 });
    const meter = new TrafficMeter();
    const store = new EcStore({ catalog, units: new UnitStore(backends.map((b) => meter.wrap(b))), settings: engineSettings(config) });
    const authenticate = makeAuthenticate(config, {});
    const admin = createAdmin({
      authenticate,
      catalog,
      backends,
      region: 'us-east-1',
      scrub: { mode: 'heads', unitsPerRun: 10 },
      enqueueRepair: () => {},
      repair: async () => {},
      costs: { traffic: meter.source, prices: config.backendPrices },
      policyOf: (bucket) => restripePolicyFor(engineSettings(config), bucket),
    });
    const app = createApp({
      store,
      config: store.config,
      authenticate,
      settings: testS3Settings(),
      admin,
      console: createConsole({ authenticate, region: 'us-east-1', catalog }),
    });
    const client = new AwsClient({ ...KEY, service: 's3', region: 'us-east-1', retries: 0 });
    const post = async (path: string) => {
      const res = await app.fetch(await client.sign(`http://gw.test/_shardgate/admin/${path}`, { method: 'POST' }));
      return { status: res.status, body: (await res.json()) as BucketUsageReport & { code?: string; message?: string } };
    };
    const s3 = async (method: string, path: string, body?: Uint8Array) =>
      await app.fetch(await client.sign(`http://gw.test/${path}`, { method, ...(body ? { body, headers: { 'content-length': String(body.length) } } : {}) }));
    const files = async () => (await Promise.all(backends.map(async (b) => (await b.list('')).entries.length))).reduce((a, b) => a + b, 0);

    await store.createBucket('bkt', { region: 'us-east-1' });
    await store.config.putBucketVersioning('bkt', 'Enabled');
    expect((await s3('PUT', 'bkt/one', new Uint8Array(30_000).fill(1))).status).toBe(200);

    const set = await post('quota?bucket=bkt&bytes=50000');
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toMatchObject({ bucket: 'bkt', quota: { bytes: 50_000, objects: null }, quotaUsed: { bytes: 30_000, objects: 1 } });
    expect(set.body.quotaRatio.bytes).toBeCloseTo(0.6);
    expect(set.body.cost?.storagePerMonth).toBeGreaterThan(0);
    expect(set.body.traffic?.putRequests, 'six shard files written for the bucket').toBe(6);

    const before = await files();
    const refused = await s3('PUT', 'bkt/two', new Uint8Array(20_001).fill(2));
    expect(refused.status).toBe(403);
    const xml = await refused.text();
    expect(xml).toContain('<Code>QuotaExceeded</Code>');
    expect(xml).toContain('<QuotaType>bytes</QuotaType>');
    expect(await files(), 'nothing stored').toBe(before);
    expect((await s3('PUT', 'bkt/two', new Uint8Array(20_000).fill(2))).status).toBe(200);

    // One limit changed alone keeps the other; a bad value is refused and changes nothing.
    expect((await post('quota?bucket=bkt&objects=2')).body.quota).toMatchObject({ bytes: 50_000, objects: 2 });
    expect(await post('quota?bucket=bkt&objects=-1')).toMatchObject({ status: 400, body: { code: 'InvalidArgument' } });
    expect((await post('quota?bucket=bkt&bytes=none')).body.quota).toMatchObject({ bytes: null, objects: 2 });
    const third = await s3('PUT', 'bkt/three', new Uint8Array(10).fill(3));
    expect(third.status).toBe(403);
    expect(await third.text()).toContain('<QuotaType>objects</QuotaType>');

    // Deletes pass over the quota; a delete marker is neither bytes nor an object.
    expect((await s3('DELETE', 'bkt/one')).status).toBe(204);
    const usage = (await post('usage?bucket=bkt')).body as unknown as { buckets: UsageReport[] };
    expect(usage.buckets[0]).toMatchObject({ objects: 2, versions: 3, deleteMarkers: 1, currentObjects: 1, bytes: 50_000 });
    // Its storage policy and its data's redundancy (issue 45's bucket settings), as the console shows them.
    const p = config.policies[config.defaultPolicy]!;
    expect(usage.buckets[0]!.policy).toMatchObject({ name: config.defaultPolicy, k: p.k, m: p.m });
    const whole = usage.buckets[0]!.redundancy![`${p.k}+${p.m}`]!.byShardsLeft[0]!;
    expect(whole).toMatchObject({ shardsLeft: p.k + p.m });
    expect(whole.units).toBeGreaterThan(0);
    expect((await s3('PUT', 'bkt/three', new Uint8Array(10).fill(3))).status).toBe(403);

    const cleared = await post('quota?bucket=bkt&clear=1');
    expect(cleared.body.quota).toBeNull();
    expect((await s3('PUT', 'bkt/three', new Uint8Array(10).fill(3))).status).toBe(200);
    expect((await post('quota?bucket=nope')).body).toMatchObject({ code: 'NoSuchBucket' });

    // Read-only in the console for a key that may list the whole bucket; refused to one scoped to a prefix, and unsigned.
    const usageAs = async (key: { accessKeyId: string; secretAccessKey: string } | null) => {
      const u = 'http://gw.test/_shardgate/console/usage?bucket=bkt';
      const res = await app.fetch(key ? await new AwsClient({ ...key, service: 's3', region: 'us-east-1', retries: 0 }).sign(u) : new Request(u));
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    await post('quota?bucket=bkt&objects=10');
    const read = await usageAs(READER);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      bucket: 'bkt',
      bytes: 50_010,
      objects: 3,
      versions: 4,
      deleteMarkers: 1,
      currentObjects: 2,
      uploads: 0,
      multipartBytes: 0,
      quota: { bytes: null, objects: 10 },
      quotaUsed: { bytes: 50_010, objects: 3 },
    });
    expect(await usageAs(PREFIXED)).toMatchObject({ status: 403, body: { code: 'AccessDenied' } });
    expect(await usageAs(STRANGER)).toMatchObject({ status: 403, body: { message: expect.stringContaining('another account') } });
    expect(await usageAs(null)).toMatchObject({ status: 403 });
    // A bucket with a policy: admin keys only (the route does not evaluate its Deny statements).
    await store.config.putBucketPolicy(
      'bkt',
      JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::bkt/secret/*' }] }),
    );
    expect(await usageAs(READER)).toMatchObject({ status: 403, body: { message: expect.stringContaining('bucket policy') } });
    expect((await usageAs(KEY)).status).toBe(200);
    await store.config.deleteBucketPolicy('bkt');

    // The CLI's words for it.
    await post('quota?bucket=bkt&bytes=100000&objects=10');
    const report = (await post('quota?bucket=bkt')).body;
    const text = quotaText(report);
    expect(text).toContain('bytes    48.8 KiB of 97.7 KiB (50%)');
    expect(text).toContain('objects  3 of 10 (30%)');
    expect(text).toMatch(/cost {5}~\$\d+\.\d\d a month/);
    expect(quotaCell({ bytes: 1000, objects: null, usedBytes: 250, usedObjects: 3 })).toBe('250 B of 1000 B (25%)');
    expect(parseSize('500MiB', '--bytes')).toBe(String(500 * 2 ** 20));
    expect(parseSize('2GB', '--bytes')).toBe('2000000000');
    expect(() => parseSize('2 parsecs', '--bytes')).toThrow(/KiB/);
    await expect(quotaCommand.run([])).rejects.toThrow(/needs BUCKET/);
    await expect(quotaCommand.run(['bkt', '--clear', '--bytes', '1'])).rejects.toThrow(/not several/);
  });
});
