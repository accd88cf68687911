/**
 * Bucket quotas (issue 45; docs/QUOTAS.md), on EcStore over the product's SQL catalog in process
 * and memory backends:
 * - a write past the quota (PUT coded or inline, CopyObject, UploadPart, UploadPartCopy,
 *   CompleteMultipartUpload) is refused QuotaExceeded and leaves no shard file and no reservation;
 * - every version counts (bytes and objects), delete markers count for neither, parts in flight
 *   count as bytes, and a completion adds its object but no bytes;
 * - a quota change applies to the next write of another "isolate" (a second EcStore and catalog
 *   client over the same instances) with no catalog call more per write;
 * - deletes (and writes that shrink the usage) pass over the quota;
 * - two writes racing for the last room: the second is refused at its commit;
 * - a split bucket: each partition within its share, the shares never above the quota, cut
 *   again by a rebalance.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { setQuota, rebalanceQuota } from '../../worker/catalog/quota-set.ts';
import { DurableCatalog } from '../../worker/catalog/durable-catalog.ts';
import { S3Error } from '../../worker/model/errors.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';
import { manifest, unit } from '../catalog/fixtures.ts';
import { rebalanceAdvised } from '../../worker/upkeep/bucket-usage.ts';

const put = (size: number, conditions = {}) => ({ contentLength: size, metadata: { user: {} }, checksum: null, conditions });
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const rand = prng(4545);
const bytes = (n: number) => randomBytes(rand, n);

const CODED = { k: 4, m: 2, blockSize: 4096 };
const INLINE = { ...CODED, small: { threshold: 4096, mode: 'inline' } };

async function setup(policy: object = CODED) {
  const backends = Array.from({ length: 6 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` })));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { main: policy },
    defaultPolicy: 'main',
  });
  const catalog = localCatalog({ garbageGraceMs: 0 });
  const settings = { ...engineSettings(config), minPartSize: 1 };
  const units = new UnitStore(backends);
  const store = new EcStore({ catalog, units, settings });
  await store.createBucket('b', { region: 'us-east-1' });
  return { backends, catalog, store, settings, units };
}

/** Every shard file the backends hold. */
async function shardFiles(backends: FaultyBackend[]): Promise<string[]> {
  const keys: string[] = [];
  for (const b of backends) keys.push(...(await b.inner.list('')).entries.map((e) => `${b.id}/${e.key}`));
  return keys.sort();
}

async function refused(p: Promise<unknown>, figure: 'bytes' | 'objects'): Promise<S3Error> {
  const err = await p.then(
    () => new Error('expected QuotaExceeded, but the write succeeded'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(S3Error);
  expect((err as S3Error).code).toBe('QuotaExceeded');
  expect((err as S3Error).status).toBe(403);
  expect((err as S3Error).fields.QuotaType).toBe(figure);
  return err as S3Error;
}

describe('bucket quotas', () => {
  it('refuses a coded PUT past the bytes quota before any shard is stored; exactly the quota passes', async () => {
    const s = await setup();
    await setQuota(s.catalog, 'b', { bytes: 50_000, objects: null }, Date.now());
    await s.store.putObject('b', 'a', stream(bytes(30_000)), put(30_000));
    const before = await shardFiles(s.backends);
    const err = await refused(s.store.putObject('b', 'c', stream(bytes(20_001)), put(20_001)), 'bytes');
    expect(err.fields).toMatchObject({ Quota: '50000', Used: '30000', Requested: '20001', BucketName: 'b' });
    expect(await shardFiles(s.backends), 'no shard file of the refused write').toEqual(before);
    expect((await s.catalog.bucketHealth('b', new Date())).reservations.held, 'nothing stays reserved').toBe(0);
    // Exactly up to the quota is allowed.
    await s.store.putObject('b', 'c', stream(bytes(20_000)), put(20_000));
    expect((await s.catalog.bucketUsage('b')).bytes).toBe(50_000);
    await refused(s.store.putObject('b', 'd', stream(bytes(1)), put(1)), 'bytes');
  });

  it('refuses an inline PUT at its one call (the commit) and stores nothing', async () => {
    const s = await setup(INLINE);
    await setQuota(s.catalog, 'b', { bytes: 150, objects: null }, Date.now());
    await s.store.putObject('b', 'a', stream(bytes(100)), put(100));
    s.catalog.namespace.calls.clear();
    await refused(s.store.putObject('b', 'c', stream(bytes(51)), put(51)), 'bytes');
    expect(Object.fromEntries(s.catalog.namespace.calls)).toEqual({ commitManifest: 1 });
    expect(await shardFiles(s.backends)).toEqual([]);
    expect((await s.catalog.bucketUsage('b')).objects).toBe(1);
  });

  it('counts every version, no delete marker, and lets deletes and shrinking overwrites through over the quota', async () => {
    const s = await setup();
    await s.store.config.putBucketVersioning('b', 'Enabled');
    await setQuota(s.catalog, 'b', { bytes: null, objects: 3 }, Date.now());
    for (let i = 0; i < 3; i++) await s.store.putObject('b', 'k', stream(bytes(5000)), put(5000));
    const before = await shardFiles(s.backends);
    await refused(s.store.putObject('b', 'k', stream(bytes(5000)), put(5000)), 'objects');
    expect(await shardFiles(s.backends)).toEqual(before);
    const marker = await s.store.deleteObject('b', 'k');
    expect(marker.deleteMarker).toBe(true);
    const usage = await s.catalog.bucketUsage('b');
    expect(usage).toMatchObject({ objects: 3, versions: 4, deleteMarkers: 1, bytes: 15_000, currentObjects: 0 });
    // Over the quota once it is lowered: deletes still work, and free room.
    await setQuota(s.catalog, 'b', { bytes: 12_000, objects: 3 }, Date.now());
    await refused(s.store.putObject('b', 'other', stream(bytes(10)), put(10)), 'bytes');
    const versions = (
      await s.store.listObjectVersions('b', { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 10 })
    ).versions.filter((v) => !v.deleteMarker);
    expect(versions).toHaveLength(3);
    await s.store.deleteObject('b', 'k', { versionId: versions[0]!.versionId });
    await s.store.deleteObject('b', 'k', { versionId: versions[1]!.versionId });
    expect(await s.catalog.bucketUsage('b')).toMatchObject({ objects: 1, bytes: 5000 });
    await s.store.putObject('b', 'other', stream(bytes(7000)), put(7000));
  });

  it('in a bucket not versioned, an overwrite counts only what it adds; one shrinking passes over the quota', async () => {
    const s = await setup();
    await s.store.putObject('b', 'k', stream(bytes(10_000)), put(10_000));
    await setQuota(s.catalog, 'b', { bytes: 8_000, objects: 1 }, Date.now());
    await s.store.putObject('b', 'k', stream(bytes(9_000)), put(9_000)); // over the quota, but smaller
    await refused(s.store.putObject('b', 'k', stream(bytes(9_001)), put(9_001)), 'bytes');
    await refused(s.store.putObject('b', 'new', stream(bytes(10)), put(10)), 'bytes');
    expect((await s.catalog.bucketUsage('b')).bytes).toBe(9_000);
  });

  it('counts multipart parts in flight as bytes: UploadPart and UploadPartCopy refused past it, Complete adds the object only', async () => {
    const s = await setup();
    await s.store.putObject('b', 'src', stream(bytes(20_000)), put(20_000));
    await setQuota(s.catalog, 'b', { bytes: 50_000, objects: 2 }, Date.now());
    const up = await s.store.createMultipartUpload('b', 'mp', { metadata: { user: {} }, checksum: null });
    await s.store.uploadPart('b', 'mp', up.uploadId, 1, stream(bytes(15_000)), { contentLength: 15_000, checksum: null });
    expect(await s.catalog.bucketUsage('b')).toMatchObject({ bytes: 20_000, multipartBytes: 15_000, uploads: 1 });
    // 35,000 held: a PUT of 15,001 is past it while the part is in flight.
    await refused(s.store.putObject('b', 'x', stream(bytes(15_001)), put(15_001)), 'bytes');
    const before = await shardFiles(s.backends);
    await refused(s.store.uploadPart('b', 'mp', up.uploadId, 2, stream(bytes(15_001)), { contentLength: 15_001, checksum: null }), 'bytes');
    await refused(s.store.uploadPartCopy({ bucket: 'b', key: 'src', conditions: {} }, 'b', 'mp', up.uploadId, 2), 'bytes');
    expect(await shardFiles(s.backends), 'no shard of the refused parts').toEqual(before);
    await s.store.uploadPartCopy({ bucket: 'b', key: 'src', range: { start: 0, end: 4_999 }, conditions: {} }, 'b', 'mp', up.uploadId, 2);
    expect((await s.catalog.bucketUsage('b')).multipartBytes).toBe(20_000);
    // Complete turns the parts into the object: no bytes more, one object more (2 of 2).
    const parts = (await s.store.listParts('b', 'mp', up.uploadId, { partNumberMarker: 0, maxParts: 10 })).parts;
    await s.store.completeMultipartUpload(
      'b',
      'mp',
      up.uploadId,
      parts.map((p) => ({ partNumber: p.partNumber, etag: p.etag })),
      { conditions: {} },
    );
    expect(await s.catalog.bucketUsage('b')).toMatchObject({ bytes: 40_000, multipartBytes: 0, objects: 2, uploads: 0 });
    // A third object is past the objects quota: a completion is refused, its parts stay for a retry or an abort.
    const up2 = await s.store.createMultipartUpload('b', 'mp2', { metadata: { user: {} }, checksum: null });
    await s.store.uploadPart('b', 'mp2', up2.uploadId, 1, stream(bytes(100)), { contentLength: 100, checksum: null });
    const p2 = (await s.store.listParts('b', 'mp2', up2.uploadId, { partNumberMarker: 0, maxParts: 10 })).parts;
    await refused(s.store.completeMultipartUpload('b', 'mp2', up2.uploadId, [{ partNumber: 1, etag: p2[0]!.etag }], { conditions: {} }), 'objects');
    expect((await s.catalog.bucketUsage('b')).uploads).toBe(1);
    await s.store.abortMultipartUpload('b', 'mp2', up2.uploadId);
  });

  it('refuses a CopyObject past the quota with nothing stored', async () => {
    const s = await setup();
    await s.store.putObject('b', 'src', stream(bytes(20_000)), put(20_000));
    await setQuota(s.catalog, 'b', { bytes: 39_999, objects: null }, Date.now());
    const before = await shardFiles(s.backends);
    await refused(
      s.store.copyObject({ bucket: 'b', key: 'src', conditions: {} }, 'b', 'copy', { metadataDirective: 'COPY', tagging: 'COPY', conditions: {} }),
      'bytes',
    );
    expect(await shardFiles(s.backends)).toEqual(before);
    expect((await s.catalog.bucketHealth('b', new Date())).reservations.held).toBe(0);
  });

  it('a quota change applies to the next write of another isolate, with no catalog call more per write', async () => {
    const s = await setup();
    // A second isolate: its own catalog client (its own caches) and store over the same instances.
    const other = new EcStore({ catalog: new DurableCatalog(s.catalog.namespace, { garbageGraceMs: 0 }), units: s.units, settings: s.settings });
    const data = bytes(20_000);
    await other.putObject('b', 'one', stream(data), put(data.length));
    s.catalog.namespace.calls.clear();
    await other.putObject('b', 'two', stream(data), put(data.length));
    const unlimited = Object.fromEntries(s.catalog.namespace.calls);
    expect(unlimited).toEqual({ prepareWrite: 1, commitManifest: 1 });
    await setQuota(s.catalog, 'b', { bytes: 50_000, objects: null }, Date.now()); // set through the first
    s.catalog.namespace.calls.clear();
    await refused(other.putObject('b', 'three', stream(data), put(data.length)), 'bytes');
    expect(Object.fromEntries(s.catalog.namespace.calls), 'the refusal is the prepare call itself').toMatchObject({ prepareWrite: 1 });
    s.catalog.namespace.calls.clear();
    await other.putObject('b', 'small', stream(bytes(10_000)), put(10_000));
    expect(Object.fromEntries(s.catalog.namespace.calls), 'a write under a quota: still 2 calls').toEqual(unlimited);
    await setQuota(s.catalog, 'b', null, Date.now());
    await other.putObject('b', 'three', stream(data), put(data.length));
    expect(Buffer.compare(await readBytes((await other.getObject('b', 'three', { conditions: {} })).body), data)).toBe(0);
  });

  it('two writes racing for the last room: both prepared, the second refused at its commit', async () => {
    const s = await setup();
    await setQuota(s.catalog, 'b', { bytes: 30_000, objects: null }, Date.now());
    const unitOf = (size: number) => ({ ...unit(), size });
    const [a, b] = [manifest('b', 'a', [unitOf(20_000)]), manifest('b', 'z', [unitOf(20_000)])];
    const expires = new Date(Date.now() + 60_000);
    await s.catalog.prepareWrite('b', 'a', {}, [], expires, 20_000);
    await s.catalog.prepareWrite('b', 'z', {}, [], expires, 20_000);
    await s.catalog.commitManifest('b', 'a', a, {});
    await refused(s.catalog.commitManifest('b', 'z', b, {}), 'bytes');
    // A rebuild's commit (the shards are on the backends already) is never refused.
    await s.catalog.commitManifest('b', 'z', b, { restoring: true });
    expect((await s.catalog.bucketUsage('b')).bytes).toBe(40_000);
  });
});

describe('bucket quotas in a split bucket (docs/QUOTAS.md: shares)', () => {
  it('a quota set before a split is cut into shares by the split: the partitions never hold it whole each', async () => {
    const s = await setup();
    await s.store.createBucket('early', { region: 'us-east-1' });
    await setQuota(s.catalog, 'early', { bytes: 60_000, objects: null }, Date.now());
    await s.catalog.splitBucketStatically('early', ['m']);
    expect((await s.catalog.getBucketQuota('early'))?.shares).toEqual({ '': { bytes: 30_000, objects: null }, m: { bytes: 30_000, objects: null } });
    await s.store.putObject('early', 'a', stream(bytes(30_000)), put(30_000));
    await s.store.putObject('early', 'z', stream(bytes(30_000)), put(30_000));
    await refused(s.store.putObject('early', 'b', stream(bytes(1)), put(1)), 'bytes');
    await refused(s.store.putObject('early', 'y', stream(bytes(1)), put(1)), 'bytes');
    // A quota without shares in a split bucket (as the copy is until the split cuts them): growth waits.
    await s.catalog.setBucketQuota('early', { bytes: 1_000_000, objects: null, setAt: Date.now() });
    await expect(s.store.putObject('early', 'b', stream(bytes(1)), put(1))).rejects.toMatchObject({ code: 'SlowDown' });
  });

  it('each partition within its share, the bucket never above the quota; a rebalance cuts the shares again', async () => {
    const s = await setup();
    await s.store.createBucket('sp', { region: 'us-east-1' });
    await s.catalog.splitBucketStatically('sp', ['m']);
    const q = await setQuota(s.catalog, 'sp', { bytes: 100_000, objects: null }, Date.now());
    expect(q?.shares).toEqual({ '': { bytes: 50_000, objects: null }, m: { bytes: 50_000, objects: null } });
    await s.store.putObject('sp', 'a1', stream(bytes(40_000)), put(40_000));
    const before = await shardFiles(s.backends);
    // The bucket has room (40,000 of 100,000) but the range below 'm' has used its share.
    const err = await refused(s.store.putObject('sp', 'a2', stream(bytes(20_000)), put(20_000)), 'bytes');
    expect(err.message).toMatch(/split/);
    expect(await shardFiles(s.backends)).toEqual(before);
    await s.store.putObject('sp', 'z1', stream(bytes(50_000)), put(50_000));
    await refused(s.store.putObject('sp', 'z2', stream(bytes(1)), put(1)), 'bytes');
    const usage = await s.catalog.bucketUsage('sp');
    expect(usage.bytes).toBe(90_000);
    expect(usage.partitions).toEqual([
      { low: '', bytes: 40_000, objects: 1 },
      { low: 'm', bytes: 50_000, objects: 1 },
    ]);
    expect(rebalanceAdvised(usage), "the range below 'm' is full, the bucket at 90%: not advised").toBe(false);
    expect(
      rebalanceAdvised({
        ...usage,
        bytes: 80_000,
        partitions: [
          { low: '', bytes: 30_000, objects: 1 },
          { low: 'm', bytes: 50_000, objects: 1 },
        ],
      }),
    ).toBe(true);
    // Rebalanced: the 10,000 left split evenly over the two ranges.
    const again = await rebalanceQuota(s.catalog, 'sp', Date.now());
    expect(again?.shares).toEqual({ '': { bytes: 45_000, objects: null }, m: { bytes: 55_000, objects: null } });
    await s.store.putObject('sp', 'a2', stream(bytes(5_000)), put(5_000));
    await refused(s.store.putObject('sp', 'a3', stream(bytes(1)), put(1)), 'bytes');
    await s.store.putObject('sp', 'z2', stream(bytes(5_000)), put(5_000));
    expect((await s.catalog.bucketUsage('sp')).bytes).toBe(100_000);
    // While the shares are being cut (growth stopped first: quota-set.ts), a growing write is told
    // to retry (503 SlowDown, which SDKs retry) and stores nothing; a delete passes.
    await setQuota(s.catalog, 'sp', { bytes: 200_000, objects: null }, Date.now());
    await s.catalog.setBucketQuota('sp', { bytes: 200_000, objects: null, setAt: Date.now(), shares: {} });
    const frozen = await shardFiles(s.backends);
    await expect(s.store.putObject('sp', 'z3', stream(bytes(10)), put(10))).rejects.toMatchObject({ code: 'SlowDown', status: 503 });
    expect(await shardFiles(s.backends)).toEqual(frozen);
    await s.store.deleteObject('sp', 'z2');
    const cut = await rebalanceQuota(s.catalog, 'sp', Date.now());
    expect(cut?.shares).toEqual({ '': { bytes: 45_000 + 52_500, objects: null }, m: { bytes: 50_000 + 52_500, objects: null } });
    await s.store.putObject('sp', 'z3', stream(bytes(10)), put(10));
  });
});
