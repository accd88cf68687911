/**
 * A static split through the operator's API (`partitions?bucket=&at=`, docs/PARTITIONS.md) and S3
 * over the split bucket, signed as clients sign, over memory backends and the product's catalog:
 * the split is refused for a bucket holding anything, then objects on both sides of each boundary
 * are written, listed with a delimiter across the boundaries and by pages, read back byte for
 * byte, versioned, and deleted, and the bucket deleted once empty.
 */
import { AwsClient } from 'aws4fetch';
import { describe, expect, it, vi } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import { createAdmin } from '../../worker/app/admin.ts';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate } from '../../worker/app/auth-gate.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { splitDuePartitions, type PartitionAssessment, type SplitThresholds } from '../../worker/upkeep/split-partitions.ts';

const KEY = { accessKeyId: 'ops', secretAccessKey: 'ops-secret-for-tests' };

function gateway(partitions?: SplitThresholds) {
  const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `d${i}` }));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { ec: { k: 4, m: 2, blockSize: 4096, small: { threshold: 100 } } },
    defaultPolicy: 'ec',
    credentials: [KEY],
  });
  const catalog = localCatalog({}, undefined, { split: false });
  const store = new EcStore({ catalog, units: new UnitStore(backends), settings: engineSettings(config) });
  const authenticate = makeAuthenticate(config, {});
  const admin = createAdmin({
    authenticate,
    catalog,
    backends,
    region: 'us-east-1',
    scrub: { mode: 'heads', unitsPerRun: 10 },
    enqueueRepair: () => {},
    repair: async () => {},
    ...(partitions ? { partitions } : {}),
  });
  const app = createApp({ store, config: store.config, authenticate, settings: testS3Settings(), admin });
  const client = new AwsClient({ ...KEY, service: 's3', region: 'us-east-1', retries: 0 });
  const call = async (path: string, init: RequestInit = {}) => {
    const length: Record<string, string> = typeof init.body === 'string' ? { 'content-length': String(new TextEncoder().encode(init.body).length) } : {};
    return app.fetch(await client.sign(`http://gw.test/${path}`, { ...init, headers: { ...length } }));
  };
  const admin_ = async (query: string) => {
    const res = await call(`_shardgate/admin/partitions?${query}`, { method: 'POST' });
    return {
      status: res.status,
      body: (await res.json()) as { ranges?: { low: string }[]; epoch?: number; code?: string; partitions?: PartitionAssessment[] },
    };
  };

  return { store, call, admin_, catalog };
}

describe('a bucket split by the operator, used through S3', () => {
  it('refuses a bucket holding anything; then reads, lists, versions and deletes across the boundaries', async () => {
    const { store, call, admin_ } = gateway();
    await store.createBucket('docs', { region: 'us-east-1' });
    expect((await call('docs/a', { method: 'PUT', body: 'x' })).status).toBe(200);
    expect(await admin_(`bucket=docs&at=${encodeURIComponent('["m"]')}`)).toMatchObject({ status: 409, body: { code: 'BucketNotEmpty' } });
    expect((await call('docs/a', { method: 'DELETE' })).status).toBe(204);
    const split = await admin_(`bucket=docs&at=${encodeURIComponent(JSON.stringify(['2024/06', 'm']))}`);
    expect(split.status, JSON.stringify(split.body)).toBe(200);
    expect(split.body.ranges!.map((r) => r.low)).toEqual(['', '2024/06', 'm']);
    expect((await admin_('bucket=docs')).body).toMatchObject(split.body);

    const bodies = new Map<string, string>();
    for (const key of ['2024/01/a', '2024/05/b', '2024/06/c', '2024/07/d', 'k', 'm', 'z/1']) {
      const body = `${key} `.repeat(50 + key.length * 40); // coded and inline alike
      bodies.set(key, body);
      expect((await call(`docs/${key}`, { method: 'PUT', body })).status, key).toBe(200);
    }
    for (const [key, body] of bodies) expect(await (await call(`docs/${key}`)).text(), key).toBe(body);
    // A common prefix spanning a boundary is one entry; pages of 2 lose and repeat nothing.
    const listed = await (await call('docs?list-type=2&delimiter=%2F')).text();
    expect([...listed.matchAll(/<Prefix>([^<]+)<\/Prefix>/g)].map((m) => m[1])).toEqual(['2024/', 'z/']);
    expect([...listed.matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1])).toEqual(['k', 'm']);
    const paged: string[] = [];
    let token = '';
    for (let page = 0; page < 10; page++) {
      const xml = await (await call(`docs?list-type=2&max-keys=2${token ? `&continuation-token=${encodeURIComponent(token)}` : ''}`)).text();
      paged.push(...[...xml.matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]!));
      token = /<NextContinuationToken>([^<]+)</.exec(xml)?.[1] ?? '';
      if (!token) break;
    }
    expect(paged).toEqual([...bodies.keys()]);

    // Versioning set at the root holds in every partition.
    expect((await call('docs?versioning', { method: 'PUT', body: '<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>' })).status).toBe(
      200,
    );
    await call('docs/z/1', { method: 'PUT', body: 'second' });
    const versions = await (await call('docs?versions&prefix=z%2F')).text();
    expect([...versions.matchAll(/<Version>/g)]).toHaveLength(2);
    expect((await call('docs', { method: 'DELETE' })).status).toBe(409);
  });

  it('splits a filled bucket on line through the API and by the cron past its thresholds; S3 sees one bucket throughout', async () => {
    const thresholds: SplitThresholds = {
      autoSplit: true,
      splitRows: 40,
      splitBytes: 1024 ** 3,
      splitRequestRate: 1e9,
      warnFraction: 0.5,
      autoMerge: false,
      mergeAfterDays: 3,
    };
    const { store, call, admin_, catalog } = gateway(thresholds);
    await store.createBucket('live', { region: 'us-east-1' });
    const keys = Array.from({ length: 60 }, (_, i) => `logs/${String(i).padStart(3, '0')}`);
    for (const key of keys) expect((await call(`live/${key}`, { method: 'PUT', body: `${key} `.repeat(40) })).status).toBe(200);
    const before = await admin_('bucket=live');
    expect(before.body.partitions!.map((p) => [p.low, p.versions, p.verdict])).toEqual([['', 60, 'split']]);
    // The operator splits at a key of their choosing; writes and reads go on.
    const split = await admin_(`bucket=live&split=logs%2F000&splitAt=${encodeURIComponent('logs/045')}`);
    expect(split.status, JSON.stringify(split.body)).toBe(200);
    expect(split.body.partitions!.map((p) => [p.low, p.versions, p.verdict])).toEqual([
      ['', 45, 'split'],
      ['logs/045', 15, 'ok'],
    ]);
    // The cron splits what is still over (the root's 45 at its median), and leaves the rest.
    const report = await splitDuePartitions(catalog, thresholds, { deadline: Date.now() + 60_000 });
    expect(report).toMatchObject({ split: [{ bucket: 'live', low: '', at: 'logs/022' }], failed: [] });
    const after = await admin_('bucket=live');
    expect(after.body.partitions!.map((p) => [p.low, p.versions])).toEqual([
      ['', 22],
      ['logs/022', 23],
      ['logs/045', 15],
    ]);
    expect(after.body.partitions!.map((p) => p.verdict)).toEqual(['warn', 'warn', 'ok']);
    for (const key of keys) expect(await (await call(`live/${key}`)).text(), key).toBe(`${key} `.repeat(40));
    const paged: string[] = [];
    let token = '';
    for (let page = 0; page < 20; page++) {
      const xml = await (await call(`live?list-type=2&max-keys=7${token ? `&continuation-token=${encodeURIComponent(token)}` : ''}`)).text();
      paged.push(...[...xml.matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]!));
      token = /<NextContinuationToken>([^<]+)</.exec(xml)?.[1] ?? '';
      if (!token) break;
    }
    expect(paged).toEqual(keys);
    expect(await admin_('bucket=live&split=nope&splitAt=logs%2F045')).toMatchObject({ status: 400, body: { code: 'InvalidArgument' } });
    // The operator merges the last partition back into its neighbour; every object still reads.
    const merged = await admin_(`bucket=live&merge=${encodeURIComponent('logs/050')}`);
    expect(merged.status, JSON.stringify(merged.body)).toBe(200);
    expect(merged.body.partitions!.map((p) => [p.low, p.versions])).toEqual([
      ['', 22],
      ['logs/022', 38],
    ]);
    for (const key of keys) expect(await (await call(`live/${key}`)).text(), key).toBe(`${key} `.repeat(40));
    expect(await admin_('bucket=live&merge=logs%2F000')).toMatchObject({ status: 400, body: { code: 'InvalidRequest' } });
  });

  it("splits a busy partition at the key that halves its calls, not at its rows' median; a burst does not", async () => {
    // The partition counts the calls it answers over 5 minutes (model/request-rate.ts): the clock is driven.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-12-05T00:00:00Z') });
    try {
      const thresholds: SplitThresholds = {
        autoSplit: true,
        splitRows: 1e9,
        splitBytes: 1024 ** 4,
        splitRequestRate: 1,
        warnFraction: 0.5,
        autoMerge: false,
        mergeAfterDays: 3,
      };
      const { store, call, admin_, catalog } = gateway(thresholds);
      await store.createBucket('busy', { region: 'us-east-1' });
      const keys = Array.from({ length: 60 }, (_, i) => `hot/${String(i).padStart(3, '0')}`);
      for (const key of keys) expect((await call(`busy/${key}`, { method: 'PUT', body: key })).status).toBe(200);
      // A burst: 120 PUT calls and more in a second is under 1 call a second over 5 minutes.
      expect((await splitDuePartitions(catalog, thresholds, { deadline: Date.now() + 60_000 })).split).toEqual([]);
      // Then 5 minutes of reads of the upper third only: 20 a step, a step every 10 s.
      for (let step = 0; step < 30; step++) {
        vi.advanceTimersByTime(10_000);
        for (let i = 0; i < 20; i++) expect((await call(`busy/${keys[40 + i]}`)).status).toBe(200);
      }
      const busy = (await admin_('bucket=busy')).body.partitions!;
      expect(busy).toHaveLength(1);
      expect(busy[0]!.requestsPerSecond).toBeGreaterThan(1.9); // 600 reads in 300 s, and the admin's own calls
      expect(busy[0]!.rowsFraction).toBeLessThan(0.001);
      expect(busy[0]!.verdict).toBe('split');
      const report = await splitDuePartitions(catalog, thresholds, { deadline: Date.now() + 60_000 });
      expect(report.split).toHaveLength(1);
      const at = report.split[0]!.at;
      expect(report.split[0]).toMatchObject({ bucket: 'busy', low: '', for: 'rate' });
      // The reads fell on hot/040..059: the cut is among them, not at the rows' median (hot/030).
      expect(at > 'hot/045' && at < 'hot/055', at).toBe(true);
      const after = (await admin_('bucket=busy')).body.partitions!;
      expect(after.map((p) => [p.low, p.versions])).toEqual([
        ['', keys.indexOf(at)],
        [at, 60 - keys.indexOf(at)],
      ]);
      for (const key of keys) expect(await (await call(`busy/${key}`)).text(), key).toBe(key);
    } finally {
      vi.useRealTimers();
    }
  });
});
