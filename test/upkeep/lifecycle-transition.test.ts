/**
 * Lifecycle transitions (issue 44) over the product's catalog and EcStore on twelve memory
 * backends, with a short lifecycle day: STANDARD is the bucket's 4+2, STANDARD_IA an 8+3 policy,
 * GLACIER a 10+2 one. The job moves what a rule says when it is due (Days, then a later Days to
 * another class; noncurrent versions, keeping NewerNoncurrentVersions); each move rewrites the
 * version under its new class's policy, byte-identical, with its version id, ETag and
 * Last-Modified, and the old shards are collected after the grace delay; a run's transition
 * budget ends the run before a key, which the next run takes first; SSE-C versions are counted
 * blocked and stay as they were; the re-stripe leaves moved versions where their class put them; a
 * gateway killed mid-transition leaves the version in flight as it was, and the next run moves
 * only what is left (no version written twice), the killed rewrite's shards collected.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryBackend, type Backend } from '../../backends/index.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { toBase64 } from '../../worker/model/bytes.ts';
import type { LifecycleRule } from '../../worker/model/lifecycle.ts';
import type { SseRequest } from '../../worker/model/sse.ts';
import { collectGarbage } from '../../worker/upkeep/collector.ts';
import { lifecycleBatch, type LifecycleStore } from '../../worker/upkeep/lifecycle.ts';
import { restripeBatch } from '../../worker/upkeep/restripe.ts';
import { Transitioner, type TransitionBudget } from '../../worker/upkeep/transition.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';

const DAY = 1000;
const GRACE = 60_000;
const body = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const put = (n: number, extra: Record<string, unknown> = {}) => ({ contentLength: n, metadata: { user: {} }, checksum: null, conditions: {}, ...extra });
const customerKey = new Uint8Array(32).fill(9);
const SSE_C: SseRequest = { kind: 'c', key: customerKey, keyMD5: toBase64(createHash('md5').update(customerKey).digest()) };

async function setup(rules: LifecycleRule[], versioned = false) {
  const backends = Array.from({ length: 12 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { hot: { k: 4, m: 2, blockSize: 4096 }, cold: { k: 8, m: 3, blockSize: 4096 }, archive: { k: 10, m: 2, blockSize: 4096 } },
    defaultPolicy: 'hot',
    storageClasses: { STANDARD_IA: 'cold', GLACIER: 'archive' },
  });
  const settings = { ...engineSettings(config), minPartSize: 5000 };
  const catalog = localCatalog({ garbageGraceMs: GRACE });
  const units = new UnitStore(backends, () => {}, { keyRing: DEV_KEY_RING });
  const store = new EcStore({ catalog, units, settings });
  await store.createBucket('bkt', { region: 'us-east-1' });
  if (versioned) await store.config.putBucketVersioning('bkt', 'Enabled');
  await store.config.putBucketLifecycle('bkt', rules);
  const byId = new Map<string, Backend>(backends.map((b) => [b.id, b]));
  const deps = { catalog, units, settings, graceMs: GRACE, writeReservationSeconds: 3600, fleet: [] };
  /** One lifecycle run at `days` lifecycle days from now, with a fresh transition budget. */
  const run = (days: number, budget: Partial<TransitionBudget> = {}) => {
    const lc: LifecycleStore = {
      deleteObject: store.deleteObject,
      abortMultipartUpload: store.abortMultipartUpload,
      transition: new Transitioner(deps, { maxVersions: 100, maxRequests: 10_000, deadline: Date.now() + 60_000, ...budget }).transition,
    };
    return lifecycleBatch(catalog, lc, { dayMs: DAY, now: () => Date.now() + days * DAY });
  };
  const geometry = async (key: string, versionId?: string) => {
    const found = await catalog.getVersion('bkt', key, versionId ?? null);
    if (found.kind !== 'object') throw new Error(`${key}: ${found.kind}`);
    const m = found.manifest;
    return {
      cls: m.metadata.storageClass ?? 'STANDARD',
      shape: m.storage.kind === 'coded' ? [...new Set(m.storage.units.map((u) => `${u.k}+${u.m}`))].join() : 'inline',
    };
  };
  const blobs = async () => {
    let n = 0;
    for (const b of backends) n += (await b.list('')).entries.length;
    return n;
  };
  return { store, catalog, byId, deps, run, geometry, blobs };
}

describe('lifecycle transitions', () => {
  it('moves current versions to each class when due, byte-identical, and collects the old shards', async () => {
    const s = await setup([
      {
        id: 'tiers',
        status: 'Enabled',
        filter: { prefix: 'cold/' },
        transitions: [
          { days: 1, storageClass: 'STANDARD_IA' },
          { days: 3, storageClass: 'GLACIER' },
        ],
      },
    ]);
    const a = randomBytes(prng(1), 30_000),
      b = randomBytes(prng(2), 9000);
    await s.store.putObject('bkt', 'cold/a', body(a), put(a.length));
    await s.store.putObject('bkt', 'hot/b', body(b), put(b.length));
    const upload = await s.store.createMultipartUpload('bkt', 'cold/mp', { metadata: { user: {} }, checksum: null });
    const p1 = randomBytes(prng(3), 6000),
      p2 = randomBytes(prng(4), 5000);
    const e1 = await s.store.uploadPart('bkt', 'cold/mp', upload.uploadId, 1, body(p1), { contentLength: p1.length, checksum: null });
    const e2 = await s.store.uploadPart('bkt', 'cold/mp', upload.uploadId, 2, body(p2), { contentLength: p2.length, checksum: null });
    await s.store.completeMultipartUpload(
      'bkt',
      'cold/mp',
      upload.uploadId,
      [
        { partNumber: 1, etag: e1.etag },
        { partNumber: 2, etag: e2.etag },
      ],
      { conditions: {} },
    );
    const before = await s.store.headObject('bkt', 'cold/a', { conditions: {} });

    expect(await s.run(0.5)).toMatchObject({ transitioned: 0 }); // not due yet
    const first = await s.run(2);
    expect(first).toMatchObject({ transitioned: 2, transitionedBytes: a.length + p1.length + p2.length, failed: 0 });
    expect(await s.geometry('cold/a')).toEqual({ cls: 'STANDARD_IA', shape: '8+3' });
    expect(await s.geometry('cold/mp')).toEqual({ cls: 'STANDARD_IA', shape: '8+3' });
    expect(await s.geometry('hot/b')).toEqual({ cls: 'STANDARD', shape: '4+2' });
    const after = await s.store.getObject('bkt', 'cold/a', { conditions: {} });
    expect(await readBytes(after.body)).toEqual(a);
    expect({ etag: after.etag, lastModified: after.lastModified, cls: after.metadata.storageClass }).toEqual({
      etag: before.etag,
      lastModified: before.lastModified,
      cls: 'STANDARD_IA',
    });
    expect(await readBytes((await s.store.getObject('bkt', 'cold/mp', { conditions: {}, partNumber: 2 })).body)).toEqual(p2);
    // Listed with its class.
    const listed = await s.store.listObjects('bkt', { prefix: '', delimiter: null, startAfter: null, maxKeys: 10 });
    expect(listed.objects.map((o) => [o.key, o.storageClass ?? 'STANDARD'])).toEqual([
      ['cold/a', 'STANDARD_IA'],
      ['cold/mp', 'STANDARD_IA'],
      ['hot/b', 'STANDARD'],
    ]);
    // A second run at the same time has nothing to do.
    expect(await s.run(2)).toMatchObject({ transitioned: 0 });

    expect(await s.run(4)).toMatchObject({ transitioned: 2 });
    expect(await s.geometry('cold/a')).toEqual({ cls: 'GLACIER', shape: '10+2' });
    expect(await readBytes((await s.store.getObject('bkt', 'cold/mp', { conditions: {} })).body)).toEqual(new Uint8Array([...p1, ...p2]));
    // The old shards go after the grace delay: what stays is exactly the shards of the current units.
    await collectGarbage(s.catalog, s.byId, new Date(Date.now() + GRACE + 1000));
    let shards = 0;
    for (const key of ['cold/a', 'cold/mp', 'hot/b']) {
      const m = await s.catalog.getManifest('bkt', key);
      if (m?.storage.kind === 'coded') for (const u of m.storage.units) shards += u.k + u.m;
    }
    expect(shards).toBe(12 + 2 * 12 + 6); // cold/a and cold/mp's two parts at 10+2, hot/b at 4+2
    expect(await s.blobs()).toBe(shards);
  });

  it('moves noncurrent versions NoncurrentDays after they became noncurrent, keeping the NewerNoncurrentVersions newest', async () => {
    const s = await setup(
      [
        {
          id: 'nc',
          status: 'Enabled',
          filter: {},
          noncurrentVersionTransitions: [{ noncurrentDays: 1, newerNoncurrentVersions: 1, storageClass: 'STANDARD_IA' }],
        },
      ],
      true,
    );
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const v = randomBytes(prng(10 + i), 8000);
      ids.push((await s.store.putObject('bkt', 'k', body(v), put(v.length))).versionId!);
    }
    expect(await s.run(2)).toMatchObject({ transitioned: 2, failed: 0 });
    const classes = await Promise.all(ids.map(async (id) => (await s.geometry('k', id)).cls));
    expect(classes).toEqual(['STANDARD_IA', 'STANDARD_IA', 'STANDARD', 'STANDARD']); // oldest first; the newest noncurrent and the current stay
    const versions = await s.store.listObjectVersions('bkt', { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 10 });
    expect(versions.versions.map((v) => v.object?.storageClass ?? 'STANDARD')).toEqual(['STANDARD', 'STANDARD', 'STANDARD_IA', 'STANDARD_IA']);
  });

  it('a run out of transition budget stops before the key; the next run goes on from there', async () => {
    const s = await setup([{ id: 'all', status: 'Enabled', filter: {}, transitions: [{ days: 1, storageClass: 'GLACIER' }] }]);
    for (const key of ['a', 'b', 'c']) {
      const v = randomBytes(prng(key.charCodeAt(0)), 7000);
      await s.store.putObject('bkt', key, body(v), put(v.length));
    }
    expect(await s.run(2, { maxVersions: 2 })).toMatchObject({ transitioned: 2, passesCompleted: 0 });
    expect((await s.catalog.getLifecycleRun('bkt')).progress?.cursor).toEqual({ phase: 'versions', afterKey: 'b', afterUploadId: null });
    expect((await s.catalog.getLifecycleRun('bkt')).progress?.current).toMatchObject({ transitioned: 2 });
    expect(await s.run(2, { maxVersions: 2 })).toMatchObject({ transitioned: 1, passesCompleted: 1 });
    for (const key of ['a', 'b', 'c']) expect(await s.geometry(key)).toEqual({ cls: 'GLACIER', shape: '10+2' });
    expect((await s.catalog.getLifecycleRun('bkt')).progress?.last).toMatchObject({ transitioned: 3, failed: 0 });
  });

  it('a gateway killed mid-transition: the next run redoes only the version in flight, and the killed rewrite is collected', async () => {
    const s = await setup([{ id: 'all', status: 'Enabled', filter: {}, transitions: [{ days: 1, storageClass: 'STANDARD_IA' }] }]);
    const data = new Map<string, Uint8Array>();
    for (let i = 0; i < 5; i++) {
      const bytes = randomBytes(prng(60 + i), 12_000 + i * 2000);
      data.set(`k${i}`, bytes);
      await s.store.putObject('bkt', `k${i}`, body(bytes), put(bytes.length));
    }
    // The gateway dies in its third transition: from the 26th shard written on (8+3: 11 a version), no PUT ever settles.
    let puts = 0;
    const around = (count: (key: string) => Promise<void> | null) =>
      [...s.byId.values()].map(
        (b): Backend => ({
          id: b.id,
          domain: b.domain,
          put: (key, bytes, length, opts) => count(key) ?? b.put(key, bytes, length, opts),
          get: (key, range) => b.get(key, range),
          head: (key) => b.head(key),
          delete: (key) => b.delete(key),
          list: (prefix, cursor) => b.list(prefix, cursor),
        }),
      );
    const dying = new UnitStore(
      around(() => (++puts > 25 ? new Promise<void>(() => {}) : null)),
      () => {},
      { keyRing: DEV_KEY_RING },
    );
    const runAt = () => Date.now() + 2 * DAY;
    const killed = new Transitioner({ ...s.deps, units: dying }, { maxVersions: 100, maxRequests: 10_000, deadline: Date.now() + 60_000 });
    void lifecycleBatch(
      s.catalog,
      { deleteObject: s.store.deleteObject, abortMultipartUpload: s.store.abortMultipartUpload, transition: killed.transition },
      { dayMs: DAY, now: runAt },
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(puts).toBeGreaterThan(25);
    const classes = async () => Promise.all([...data.keys()].map(async (k) => (await s.geometry(k)).cls));
    expect(await classes()).toEqual(['STANDARD_IA', 'STANDARD_IA', 'STANDARD', 'STANDARD', 'STANDARD']);
    for (const [key, bytes] of data) expect(await readBytes((await s.store.getObject('bkt', key, { conditions: {} })).body), key).toEqual(bytes);
    // A new gateway: its run moves the three left, each written once (3 x 11 shards), none of the two moved again.
    let resumedPuts = 0;
    const counted = new UnitStore(
      around(() => (resumedPuts++, null)),
      () => {},
      { keyRing: DEV_KEY_RING },
    );
    const fresh = new Transitioner({ ...s.deps, units: counted }, { maxVersions: 100, maxRequests: 10_000, deadline: Date.now() + 60_000 });
    const resumed = await lifecycleBatch(
      s.catalog,
      { deleteObject: s.store.deleteObject, abortMultipartUpload: s.store.abortMultipartUpload, transition: fresh.transition },
      { dayMs: DAY, now: runAt },
    );
    expect(resumed).toMatchObject({ transitioned: 3, failed: 0, passesCompleted: 1 });
    expect(resumedPuts).toBe(3 * 11);
    expect(await classes()).toEqual(Array(5).fill('STANDARD_IA'));
    expect((await s.catalog.bucketHealth('bkt', new Date())).reservations.held).toBe(1); // the killed rewrite's
    // Past the grace delay and the killed rewrite's reservation: the backends hold exactly the current shards.
    await collectGarbage(s.catalog, s.byId, new Date(Date.now() + 2 * 3600_000));
    expect(await s.blobs()).toBe(5 * 11);
    for (const [key, bytes] of data) expect(await readBytes((await s.store.getObject('bkt', key, { conditions: {} })).body), key).toEqual(bytes);
  });

  it('an SSE-C version is blocked and stays as it was; the re-stripe leaves moved versions in their class', async () => {
    const s = await setup([{ id: 'all', status: 'Enabled', filter: {}, transitions: [{ days: 1, storageClass: 'STANDARD_IA' }] }]);
    const secret = randomBytes(prng(20), 9000),
      open = randomBytes(prng(21), 9000);
    await s.store.putObject('bkt', 'secret', body(secret), put(secret.length, { sse: SSE_C }));
    await s.store.putObject('bkt', 'open', body(open), put(open.length));
    expect(await s.run(2)).toMatchObject({ transitioned: 1, transitionsBlocked: 1, failed: 0 });
    expect(await s.geometry('secret')).toEqual({ cls: 'STANDARD', shape: '4+2' });
    expect(await readBytes((await s.store.getObject('bkt', 'secret', { conditions: {}, sse: SSE_C })).body)).toEqual(secret);
    expect(await s.geometry('open')).toEqual({ cls: 'STANDARD_IA', shape: '8+3' });
    const r = await restripeBatch(s.deps, { maxVersions: 100, deadline: Date.now() + 60_000 });
    expect(r.rewritten).toBe(0);
    expect(await s.geometry('open')).toEqual({ cls: 'STANDARD_IA', shape: '8+3' });
  });
});

describe('versions written by the release before storage classes (test/fixtures/catalog-v5-sse-c, commit 77cbe02)', () => {
  it('read and list as STANDARD, and move to a class like any other', async () => {
    const FIXTURE = new URL('../fixtures/catalog-v5-sse-c/', import.meta.url);
    const POLICY = { k: 4, m: 2, blockSize: 4096, small: { threshold: 256, mode: 'inline' } };
    const { catalog, backends, units } = await openCatalogFixture(FIXTURE, ['__buckets__', 'bucket:vault'], POLICY);
    const config = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: POLICY, narrow: { k: 2, m: 1, blockSize: 4096 } },
      defaultPolicy: 'ec',
      storageClasses: { STANDARD_IA: 'narrow' },
    });
    const settings = engineSettings(config);
    const store = new EcStore({ catalog, units, settings });
    const listed = await store.listObjects('vault', { prefix: '', delimiter: null, startAfter: null, maxKeys: 100 });
    expect(listed.objects.length).toBeGreaterThan(0);
    expect(listed.objects.every((o) => o.storageClass === undefined)).toBe(true);
    expect((await store.headObject('vault', 'plain', { conditions: {} })).metadata.storageClass).toBeUndefined();
    await store.config.putBucketLifecycle('vault', [
      { id: 'ia', status: 'Enabled', filter: { prefix: 'plain' }, transitions: [{ days: 0, storageClass: 'STANDARD_IA' }] },
    ]);
    const deps = { catalog, units, settings, graceMs: GRACE, writeReservationSeconds: 3600, fleet: [] };
    const lc: LifecycleStore = {
      deleteObject: store.deleteObject,
      abortMultipartUpload: store.abortMultipartUpload,
      transition: new Transitioner(deps, { maxVersions: 10, maxRequests: 1000, deadline: Date.now() + 60_000 }).transition,
    };
    expect(await lifecycleBatch(catalog, lc, { dayMs: DAY, now: () => Date.now() + DAY })).toMatchObject({ transitioned: 1, failed: 0 });
    const m = await catalog.getManifest('vault', 'plain');
    expect(m!.metadata.storageClass).toBe('STANDARD_IA');
    expect(m!.storage.kind === 'coded' && m!.storage.units.every((u) => u.k === 2 && u.m === 1)).toBe(true);
    const got = await readBytes((await store.getObject('vault', 'plain', { conditions: {} })).body);
    expect(createHash('md5').update(got).digest('hex')).toBe('535cf8ee3a05b9e20c9546c78b546a2f');
  });
});
