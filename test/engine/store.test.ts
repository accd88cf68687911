/**
 * EcStore end to end in Node: the ObjectStore over the SQL catalog in process and memory backends behind the
 * fault wrapper. Policies (EC, inline small objects, replicate-3), overwrite and garbage,
 * multipart, degraded reads queueing repairs, write quorum, and rebuilding a lost index.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import type { Backend } from '../../backends/types.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore, type RepairTask } from '../../worker/engine/ec-store.ts';
import { rebuildCatalog } from '../../worker/upkeep/rebuild.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { scrubBatch } from '../../worker/upkeep/scrubber.ts';
import { collectGarbage } from '../../worker/upkeep/collector.ts';
import { bucketPrefix, shardKey } from '../../worker/format/shard-key.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';
import { devShardPrefixes } from '../support/dev-encryption.ts';

const put = (size: number, extra = {}) => ({
  contentLength: size,
  metadata: { user: { a: '1' }, contentType: 'application/x-test' },
  checksum: null,
  conditions: {},
  ...extra,
});
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
async function bytes(s: ReadableStream<Uint8Array>) {
  return readBytes(s);
}

function setup(policy: object = { k: 4, m: 2, blockSize: 4096 }, extra: object = {}) {
  const backends = Array.from({ length: 6 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` })));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { main: policy, copies: { codec: 'replicate', replicas: 3, blockSize: 4096 } },
    defaultPolicy: 'main',
    buckets: { replicated: 'copies' },
    ...extra,
  });
  const repairs: RepairTask[] = [];
  const units = new UnitStore(backends, (bucket, key, unit, err) =>
    repairs.push({ bucket, key, unitId: unit.unitId, shards: [err.shardIndex], reason: { kind: err.reason, by: 'read' } }),
  );
  const catalog = localCatalog({ garbageGraceMs: 0 });
  const store = new EcStore({ catalog, units, settings: { ...engineSettings(config), minPartSize: 5000 }, enqueueRepair: (t) => repairs.push(t) });
  return { backends, catalog, store, repairs, units };
}

describe('EcStore', () => {
  const rand = prng(5);
  let s: ReturnType<typeof setup>;
  beforeEach(async () => {
    s = setup();
    await s.store.createBucket('b', { region: 'us-east-1' });
    await s.store.createBucket('replicated', { region: 'us-east-1' });
  });

  it('stores by policy: inline below the threshold, k+m shard writes above, 3 copies for replicate-3', async () => {
    const count = () => s.backends.map((b) => b.calls.filter((c) => c.op === 'put').length).reduce((a, b) => a + b, 0);
    await s.store.putObject('b', 'tiny', stream(new Uint8Array(100)), put(100));
    expect(count()).toBe(0);
    const data = randomBytes(rand, 70_000);
    const r = await s.store.putObject('b', 'ec', stream(data), put(data.length));
    expect(count()).toBe(6);
    expect(r.etag).toMatch(/^"[0-9a-f]{32}"$/);
    await s.store.putObject('replicated', 'copy', stream(data), put(data.length));
    expect(count()).toBe(9);
    for (const [bucket, key] of [
      ['b', 'ec'],
      ['replicated', 'copy'],
    ] as const) {
      const got = await s.store.getObject(bucket, key, { conditions: {} });
      expect(Buffer.compare(await bytes(got.body), data)).toBe(0);
      expect(got.metadata).toEqual({ user: { a: '1' }, contentType: 'application/x-test' });
    }
    const tiny = await s.store.getObject('b', 'tiny', { range: { start: 10, end: 19 }, conditions: {} });
    expect((await bytes(tiny.body)).length).toBe(10);
  });

  it('a healthy GET reads k shards; one backend down still serves and queues a repair', async () => {
    const data = randomBytes(rand, 4 * 4096 * 3);
    await s.store.putObject('b', 'k', stream(data), put(data.length));
    s.backends.forEach((b) => b.calls.splice(0));
    await bytes((await s.store.getObject('b', 'k', { conditions: {} })).body);
    expect(s.backends.reduce((n, b) => n + b.calls.filter((c) => c.op === 'get').length, 0)).toBe(4);
    const unit = (await s.catalog.getManifest('b', 'k'))!.storage;
    const holder = unit.kind === 'coded' ? unit.units[0]!.placement[1]! : '';
    s.backends.find((b) => b.id === holder)!.goOffline();
    expect(Buffer.compare(await bytes((await s.store.getObject('b', 'k', { conditions: {} })).body), data)).toBe(0);
    expect(s.repairs).toMatchObject([{ bucket: 'b', key: 'k', shards: [1] }]);
  });

  it('overwrites commit a new version and queue the old shards as garbage', async () => {
    const a = randomBytes(rand, 20_000),
      b = randomBytes(rand, 30_000);
    await s.store.putObject('b', 'k', stream(a), put(a.length));
    await s.store.putObject('b', 'k', stream(b), put(b.length));
    expect(Buffer.compare(await bytes((await s.store.getObject('b', 'k', { conditions: {} })).body), b)).toBe(0);
    const garbage = await s.catalog.takeDueGarbage(new Date(Date.now() + 1000), 10);
    expect(garbage.flatMap((g) => g.units).length).toBe(1);
    await expect(s.store.putObject('b', 'k', stream(a), put(a.length, { conditions: { ifNoneMatch: '*' } }))).rejects.toMatchObject({
      code: 'PreconditionFailed',
    });
  });

  it('refuses a write below quorum with no visible change, and a bad Content-MD5 with BadDigest', async () => {
    const data = randomBytes(rand, 20_000);
    s.backends[0]!.goOffline();
    s.backends[1]!.goOffline();
    await expect(s.store.putObject('b', 'k', stream(data), put(data.length))).rejects.toMatchObject({ name: 'QuorumError' });
    await expect(s.store.headObject('b', 'k', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
    s.backends.forEach((b) => b.goOnline());
    await expect(s.store.putObject('b', 'k', stream(data), put(data.length, { contentMD5: 'AAAAAAAAAAAAAAAAAAAAAA==' }))).rejects.toMatchObject({
      code: 'BadDigest',
    });
    for (const b of s.backends) expect((await b.list(bucketPrefix())).entries).toEqual([]);
  });

  it('multipart: parts coded on their own, complete lists them, ETag md5-of-md5s-N, ranges across parts', async () => {
    const up = await s.store.createMultipartUpload('b', 'mp', { metadata: { user: {} }, checksum: { algorithm: 'CRC32', type: 'FULL_OBJECT' } });
    const parts = [randomBytes(rand, 6000), randomBytes(rand, 7000), randomBytes(rand, 100)];
    const infos = [];
    for (const [i, p] of parts.entries())
      infos.push(await s.store.uploadPart('b', 'mp', up.uploadId, i + 1, stream(p), { contentLength: p.length, checksum: null }));
    const done = await s.store.completeMultipartUpload(
      'b',
      'mp',
      up.uploadId,
      infos.map((p) => ({ partNumber: p.partNumber, etag: p.etag })),
      { conditions: {} },
    );
    expect(done.etag).toMatch(/-3"$/);
    expect(done.checksum?.type).toBe('FULL_OBJECT');
    const all = Buffer.concat(parts);
    expect(Buffer.compare(await bytes((await s.store.getObject('b', 'mp', { conditions: {} })).body), all)).toBe(0);
    const r = await s.store.getObject('b', 'mp', { range: { start: 5990, end: 13_050 }, conditions: {} });
    expect(Buffer.compare(await bytes(r.body), all.subarray(5990, 13_051))).toBe(0);
  });

  it('rebuilds a lost index from shard headers and footers', async () => {
    const data = randomBytes(rand, 50_000);
    await s.store.putObject('b', 'dir/one', stream(data), put(data.length, { checksum: { algorithm: 'CRC32C', expected: null } }));
    await s.store.putObject('b', 'two', stream(data.subarray(0, 9000)), put(9000));
    await s.store.putObject('b', 'two', stream(data.subarray(0, 9999)), put(9999)); // the newer one must win
    const fresh = localCatalog();
    await fresh.insertBucket('b', 'us-east-1');
    const result = await rebuildCatalog('b', s.backends, fresh);
    expect(result.restored.sort()).toEqual(['dir/one', 'two']);
    const store2 = new EcStore({
      catalog: fresh,
      units: s.units,
      settings: engineSettings(
        parseConfig({
          backends: s.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
          policies: { main: { k: 4, m: 2 } },
          defaultPolicy: 'main',
        }),
      ),
    });
    const one = await store2.getObject('b', 'dir/one', { conditions: {} });
    expect(Buffer.compare(await bytes(one.body), data)).toBe(0);
    expect(one.metadata).toEqual({ user: { a: '1' }, contentType: 'application/x-test' });
    expect(one.checksum?.algorithm).toBe('CRC32C');
    expect((await store2.headObject('b', 'two', { conditions: {} })).size).toBe(9999);
  });

  it('a rebuild from the shards drops the ACL a version was written with: a later PutObjectAcl is not in its header, so no revoked grant comes back', async () => {
    const data = randomBytes(rand, 20_000);
    const acl = { owner: 'alt', grants: '[{"group":"AllUsers","p":"READ"}]' };
    await s.store.putObject('b', 'was-public', stream(data), put(data.length, { metadata: { user: {}, acl } }));
    expect((await s.store.headObject('b', 'was-public', { conditions: {} })).metadata.acl).toEqual(acl);
    await s.store.putObjectAcl('b', 'was-public', undefined); // made private since: the catalog's ACL, not the header's
    const fresh = localCatalog();
    await fresh.insertBucket('b', 'us-east-1');
    expect((await rebuildCatalog('b', s.backends, fresh)).restored).toContain('was-public');
    expect((await fresh.getManifest('b', 'was-public'))!.metadata).toEqual({ user: {} });
  });

  it('a rebuild never lists an object whose unit has fewer than k shards left', async () => {
    const data = randomBytes(rand, 50_000);
    await s.store.putObject('b', 'whole', stream(data), put(data.length));
    await s.store.putObject('b', 'gutted', stream(data), put(data.length));
    const unit = ((await s.catalog.getManifest('b', 'gutted'))!.storage as { units: { unitId: string; placement: string[] }[] }).units[0]!;
    for (const i of [0, 1, 2]) await s.backends.find((x) => x.id === unit.placement[i])!.delete(shardKey('b', unit.unitId, i)); // 3 of 6 left, k = 4
    const fresh = localCatalog();
    await fresh.insertBucket('b', 'us-east-1');
    const result = await rebuildCatalog('b', s.backends, fresh);
    expect(result.restored).toEqual(['whole']);
    expect(result.unrecoverable).toEqual([{ unitId: unit.unitId, reason: 'only 3 of the 4 shards needed remain' }]);
  });

  it("versioning: the collector keeps noncurrent versions' shards, takes a removed version's; a rebuild never resurrects a key under a delete marker", async () => {
    await s.store.config.putBucketVersioning('b', 'Enabled');
    const [old, cur] = [randomBytes(rand, 30_000), randomBytes(rand, 20_000)];
    const v1 = (await s.store.putObject('b', 'k', stream(old), put(old.length))).versionId!;
    const v2 = (await s.store.putObject('b', 'k', stream(cur), put(cur.length))).versionId!;
    expect(await collectGarbage(s.catalog, s.units.byId, new Date(Date.now() + 1000))).toBe(0); // grace 0: due now, yet nothing queued
    expect(Buffer.compare(await bytes((await s.store.getObject('b', 'k', { conditions: {}, versionId: v1 })).body), old)).toBe(0);

    const marker = await s.store.deleteObject('b', 'k');
    expect(marker.deleteMarker).toBe(true);
    const lost = localCatalog(); // the catalog is lost but for the marker: rebuild must leave the key deleted
    await lost.insertBucket('b', 'us-east-1');
    await lost.setVersioning('b', 'Enabled');
    await lost.removeManifest('b', 'k');
    const result = await rebuildCatalog('b', s.backends, lost);
    expect([result.restored, result.kept]).toEqual([[], ['k']]);
    expect((await lost.getVersion('b', 'k', null)).kind).toBe('marker');

    await s.store.deleteObject('b', 'k', { versionId: v2 });
    expect(await collectGarbage(s.catalog, s.units.byId, new Date(Date.now() + 1000))).toBe(1); // v2's one unit
    expect(Buffer.compare(await bytes((await s.store.getObject('b', 'k', { conditions: {}, versionId: v1 })).body), old)).toBe(0);
  });

  it('object lock: a COMPLIANCE version is not deleted, not collected, and a rebuild restores it locked', async () => {
    await s.store.createBucket('vault', { region: 'us-east-1', objectLock: true });
    const data = randomBytes(rand, 30_000);
    const objectLock = { mode: 'COMPLIANCE' as const, retainUntil: new Date(Date.now() + 86_400_000).toISOString() };
    const v1 = (await s.store.putObject('vault', 'k', stream(data), put(data.length, { metadata: { user: {}, objectLock } }))).versionId!;
    await expect(s.store.deleteObject('vault', 'k', { versionId: v1, bypassGovernance: true })).rejects.toMatchObject({ code: 'AccessDenied' });
    expect((await s.store.deleteObject('vault', 'k')).deleteMarker).toBe(true);
    expect(await collectGarbage(s.catalog, s.units.byId, new Date(Date.now() + 1000))).toBe(0);

    const lost = localCatalog(); // the bucket's catalog is lost, its lock configuration with it
    await lost.insertBucket('vault', 'us-east-1');
    expect((await rebuildCatalog('vault', s.backends, lost)).restored).toEqual(['k']);
    expect(await lost.getObjectLock('vault')).toEqual({ rule: null });
    expect(await lost.getVersioning('vault')).toBe('Enabled');
    const restored = await lost.getVersion('vault', 'k', null);
    expect(restored.kind === 'object' && restored.manifest.metadata.objectLock).toEqual(objectLock);
    await expect(lost.removeManifest('vault', 'k', undefined, (restored as { versionId: string }).versionId)).rejects.toMatchObject({ code: 'AccessDenied' });
    expect(Buffer.compare(await bytes((await s.store.getObject('vault', 'k', { conditions: {}, versionId: v1 })).body), data)).toBe(0);
  });

  it('a wide 8+3 policy never has more than 6 backend calls in flight, and segments big bodies', async () => {
    let inFlight = 0,
      peak = 0;
    const probe = (b: MemoryBackend): Backend => {
      const track =
        <T>(p: () => Promise<T>) =>
        async () => {
          peak = Math.max(peak, ++inFlight);
          try {
            return await p();
          } finally {
            inFlight--;
          }
        };
      return {
        id: b.id,
        domain: b.domain,
        put: (k, body, len, o) => track(() => b.put(k, body, len, o))(),
        get: (k, r, o) =>
          track(async () => {
            const res = await b.get(k, r, o);
            // The call stays in flight until its body is drained, as a fetch does.
            const data = new Uint8Array(await new Response(res.body).arrayBuffer());
            return { size: res.size, body: new ReadableStream({ start: (c) => (c.enqueue(data), c.close()) }) };
          })(),
        head: (k) => b.head(k),
        delete: (k) => b.delete(k),
        list: (p, c, o) => b.list(p, c, o),
      };
    };
    const raw = Array.from({ length: 11 }, (_, i) => new MemoryBackend({ id: `w${i}`, domain: `z${i}` }));
    const backends = raw.map(probe);
    const config = parseConfig({
      backends: raw.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { wide: { k: 8, m: 3, blockSize: 4096 } },
      defaultPolicy: 'wide',
    });
    const catalog = localCatalog();
    const store = new EcStore({ catalog, units: new UnitStore(backends, () => {}, { columnParityBytes: 3 * 12288 }), settings: engineSettings(config) });
    await store.createBucket('w', { region: 'us-east-1' });
    const data = randomBytes(rand, 350_000);
    await store.putObject('w', 'big', stream(data), put(data.length, { checksum: { algorithm: 'CRC32', expected: null } }));
    const m = await catalog.getManifest('w', 'big');
    expect(m?.storage.kind === 'coded' && m.storage.units.length).toBe(4); // column units of 8 x 12288 bytes
    expect(Buffer.compare(await bytes((await store.getObject('w', 'big', { conditions: {} })).body), data)).toBe(0);
    raw[2]!.delete(shardKey('w', (m!.storage as { units: { unitId: string }[] }).units[1]!.unitId, 2));
    const r = await store.getObject('w', 'big', { range: { start: 90_000, end: 200_000 }, conditions: {} });
    expect(Buffer.compare(await bytes(r.body), data.subarray(90_000, 200_001))).toBe(0);
    expect(peak).toBeGreaterThan(1);
    expect(peak).toBeLessThanOrEqual(6);
    const fresh = localCatalog();
    await fresh.insertBucket('w', 'us-east-1');
    expect((await rebuildCatalog('w', backends, fresh)).restored).toEqual(['big']);
    const rebuilt = await fresh.getManifest('w', 'big');
    expect(rebuilt?.size).toBe(data.length);
    expect(rebuilt?.etag, 'column segments keep the single-PUT ETag').toBe(m?.etag);
    expect(rebuilt?.checksum).toEqual(m?.checksum);
  });

  it('refuses a write that outlives its reservation with RequestTimeout and deletes its shards', async () => {
    const t = setup(undefined, { writeReservationSeconds: 1 });
    await t.store.createBucket('slow', { region: 'us-east-1' });
    const data = randomBytes(rand, 50_000);
    const slow = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(data.subarray(0, 20_000));
        await new Promise((r) => setTimeout(r, 1100)); // past the reservation's commit margin
        c.enqueue(data.subarray(20_000));
        c.close();
      },
    });
    await expect(t.store.putObject('slow', 'k', slow, put(data.length))).rejects.toMatchObject({ code: 'RequestTimeout' });
    await expect(t.store.headObject('slow', 'k', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
    for (const b of t.backends) for (const prefix of await devShardPrefixes('slow')) expect((await b.list(prefix)).entries).toEqual([]);
    const due = await t.catalog.takeDueGarbage(new Date(Date.now() + 2000), 10);
    expect(due.flatMap((g) => g.unitIds ?? [])).toHaveLength(1); // the collector still comes by
  });

  it('the scrubber walks each bucket a slice per run and queues repairs for lost, short and (verify) rotten shards', async () => {
    const data = randomBytes(rand, 60_000);
    for (const key of ['a', 'b', 'c']) await s.store.putObject('b', key, stream(data), put(data.length));
    const unitOf = async (key: string) => {
      const m = await s.catalog.getManifest('b', key);
      return m!.storage.kind === 'coded' ? m!.storage.units[0]! : null!;
    };
    const [a, b, c] = [await unitOf('a'), await unitOf('b'), await unitOf('c')];
    const backendOf = (unit: typeof a, i: number) => s.backends.find((x) => x.id === unit.placement[i])!.inner;
    await backendOf(a, 1).delete(shardKey('b', a.unitId, 1));
    const stored = async (unit: typeof a, i: number) =>
      new Uint8Array(await new Response((await backendOf(unit, i).get(shardKey('b', unit.unitId, i))).body).arrayBuffer());
    const short = await stored(b, 4);
    await backendOf(b, 4).put(shardKey('b', b.unitId, 4), short.subarray(0, short.length - 10), short.length - 10);
    const rotten = await stored(c, 2);
    rotten[rotten.length >> 1]! ^= 0x10;
    await backendOf(c, 2).put(shardKey('b', c.unitId, 2), rotten, rotten.length);
    const damagedOn = new Set([a.placement[1], b.placement[4], c.placement[2]]);
    const offline = s.backends.find((x) => !damagedOn.has(x.id))!;
    offline.goOffline(); // an unreachable backend is not damage
    const repairs: RepairTask[] = [];
    const run = (mode: 'heads' | 'verify') => scrubBatch(s.catalog, s.units.byId, { mode, unitsPerRun: 2 }, (t) => repairs.push(t));
    expect(await run('heads')).toMatchObject({ units: 2, damaged: 2 }); // a, b (units in id order: written in that order)
    expect(await s.catalog.getScrubCursor('b')).toEqual({ afterUnit: b.unitId });
    expect(await run('heads')).toMatchObject({ units: 1, damaged: 0 }); // c: same size, heads cannot see rot
    expect(await s.catalog.getScrubCursor('b')).toBeNull(); // the next run starts over
    expect(repairs.map((r) => [r.key, r.shards])).toEqual([
      ['a', [1]],
      ['b', [4]],
    ]);
    repairs.length = 0;
    await run('verify');
    await run('verify');
    expect(repairs.map((r) => [r.key, r.shards])).toEqual([
      ['a', [1]],
      ['b', [4]],
      ['c', [2]],
    ]);
    expect(repairs.every((r) => r.reason.kind === 'corrupt' && r.reason.by === 'scrubber')).toBe(true);
    // A call budget stops the run after the unit that reached it; the cursor resumes there.
    expect(await s.catalog.getScrubCursor('b')).toBeNull(); // the verify pass completed
    expect(await scrubBatch(s.catalog, s.units.byId, { mode: 'heads', unitsPerRun: 10 }, () => {}, 6)).toMatchObject({ units: 1, shards: 6 });
    expect(await s.catalog.getScrubCursor('b')).toEqual({ afterUnit: a.unitId });
    offline.goOnline();
  });

  it('the collector deletes superseded units and expired reservations, within a per-run call budget', async () => {
    const data = randomBytes(rand, 30_000);
    for (const key of ['g1', 'g2', 'g3']) {
      await s.store.putObject('b', key, stream(data), put(data.length));
      await s.store.deleteObject('b', key); // grace 0: due at once
    }
    // A write that never commits: reserved, stored, then the gateway "dies".
    const policy = parseConfig({
      backends: s.backends.map((x) => ({ id: x.id, kind: 'memory', domain: x.domain })),
      policies: { p: { k: 4, m: 2, blockSize: 4096 } },
      defaultPolicy: 'p',
    }).policies.p!;
    const plan = s.units.plan(data.length, policy, false);
    await s.catalog.reserveUnits('b', plan.unitIds, new Date(Date.now() + 1000), 'crashed');
    await s.units.storeBody({ bucket: 'b', key: 'crashed', body: stream(data), size: data.length, policy, plan, checksum: null });
    const blobs = async () => (await Promise.all(s.backends.map((x) => x.inner.list(bucketPrefix('b'))))).reduce((n, page) => n + page.entries.length, 0);
    expect(await blobs()).toBe(4 * 6);
    expect(await collectGarbage(s.catalog, s.units.byId, new Date(), 6), 'one unit per 6 calls').toBe(1);
    expect(await blobs()).toBe(3 * 6);
    expect(await collectGarbage(s.catalog, s.units.byId, new Date())).toBe(2); // the reservation is not due yet
    expect(await blobs()).toBe(6);
    expect(await collectGarbage(s.catalog, s.units.byId, new Date(Date.now() + 2000))).toBe(1);
    expect(await blobs()).toBe(0);
  });

  it('a PUT or part refused before any shard (conditions, no such upload) leaves no reservation behind', async () => {
    const data = randomBytes(rand, 30_000);
    await s.store.putObject('b', 'cond', stream(data), put(data.length));
    await expect(s.store.putObject('b', 'cond', stream(data), put(data.length, { conditions: { ifNoneMatch: '*' } }))).rejects.toMatchObject({
      code: 'PreconditionFailed',
    });
    await expect(s.store.uploadPart('b', 'cond', 'no-such-upload', 1, stream(data), put(data.length))).rejects.toMatchObject({ code: 'NoSuchUpload' });
    const later = await s.catalog.takeDueGarbage(new Date(Date.now() + 3 * 86400_000), 100);
    expect(later.flatMap((g) => g.unitIds ?? [])).toEqual([]);
  });
});
