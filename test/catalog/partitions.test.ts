// A bucket over several catalog objects (docs/PARTITIONS.md, slices 2 and 3): the whole catalog
// contract over buckets split statically into partitions, in Node over the product's SQL
// (test/support/local-catalog.ts), and what only a split bucket can get wrong.

import { describe, expect, it } from 'vitest';
import { localCatalog } from '../support/local-catalog.ts';
import { runCatalogContract } from './contract.ts';
import { byUtf8, expectS3, manifest } from './fixtures.ts';
import { listPage } from '../../worker/model/listing.ts';
import { prng } from '../support/random.ts';

/** Boundaries cutting through the keys the contract uses ('a', 'b/..', 'k', 'x/..' and others). */
const SPLIT = ['a/', 'b', 'd', 'k', 'k/', 'm', 'x'];

runCatalogContract('sql in node, buckets split in 8 partitions', (options) => localCatalog(options), { split: SPLIT });
// Splits on line between any two calls: after every third write the partition holding its key splits at its median.
runCatalogContract('sql in node, partitions split on line every 3 writes', (options) => localCatalog(options, undefined, { split: false, splitEvery: 3 }), {
  online: true,
});

const alphabet = ['a', 'b', '/', '-', 'é', '\uFFFD', '\u{1F600}'];

describe('listings across 16 partitions', () => {
  const next = prng(39); // deterministic, so a failure reproduces
  const rand = (n: number) => (next() * n) | 0;
  const word = (max: number) => Array.from({ length: 1 + rand(max) }, () => alphabet[rand(alphabet.length)]).join('');

  it('equal those of one partition holding the same keys, versions and uploads, page by page, and the sorted model', async () => {
    const catalog = localCatalog();
    const [one, split] = ['one', 'split'];
    await catalog.insertBucket(one, 'auto');
    await catalog.insertBucket(split, 'auto');
    // Boundaries inside common prefixes and between a key and its extensions.
    const boundaries = [...new Set(Array.from({ length: 40 }, () => word(4)))].slice(0, 15);
    const map = await catalog.splitBucketStatically(split, boundaries);
    expect(map.ranges).toHaveLength(16);
    const keys = [...new Set(Array.from({ length: 200 }, () => word(6)))].sort(byUtf8);
    for (const b of [one, split]) {
      await catalog.setVersioning(b, 'Enabled');
      for (const [i, key] of keys.entries()) {
        await catalog.commitManifest(b, key, manifest(b, key), {});
        if (i % 3 === 0) await catalog.commitManifest(b, key, manifest(b, key), {});
        if (i % 7 === 0) await catalog.removeManifest(b, key);
        if (i % 5 === 0) await catalog.insertUpload(b, key, { metadata: { user: {} }, checksum: null });
      }
    }
    // Every partition holds some keys, or the walk proves little.
    expect((await catalog.bucketHealth(split, new Date())).objects).toBe((await catalog.bucketHealth(one, new Date())).objects);
    const seen = { pages: 0, truncated: 0, prefixes: 0 };
    for (let round = 0; round < 40; round++) {
      const prefix = rand(3) === 0 ? '' : word(2);
      const delimiter = [null, '/', '-/', '\u{1F600}'][rand(4)]!;
      const marker = rand(2) === 0 ? null : word(3);
      const maxKeys = rand(4) === 0 ? 1000 : rand(7);
      // ListObjects: the model, the one-partition bucket and the split one page alike.
      const live = keys.filter((_, i) => i % 7 !== 0);
      let [a, b, m] = [marker, marker, marker];
      for (let page = 0; page < 400; page++) {
        const want = listPage(
          live.map((k) => [k, k] as [string, string]),
          { prefix, delimiter, startAfter: m, maxKeys },
        );
        const x = await catalog.listManifests(one, { prefix, delimiter, startAfter: a, maxKeys });
        const y = await catalog.listManifests(split, { prefix, delimiter, startAfter: b, maxKeys });
        const shape = (r: typeof x) => ({ keys: r.objects.map((o) => o.key), prefixes: r.commonPrefixes, isTruncated: r.isTruncated, lastEntry: r.lastEntry });
        const label = JSON.stringify({ prefix, delimiter, marker, maxKeys, page });
        expect(shape(y), label).toEqual(shape(x));
        expect(shape(x).keys, label).toEqual(want.entries.flatMap((e) => (e.kind === 'key' ? [e.key] : [])));
        expect(x.isTruncated, label).toBe(want.isTruncated);
        seen.pages++;
        seen.truncated += Number(x.isTruncated);
        seen.prefixes += Number(x.commonPrefixes.length > 0);
        if (!x.isTruncated || maxKeys === 0) break;
        [a, b, m] = [x.lastEntry, y.lastEntry, want.lastEntry];
      }
      // ListObjectVersions: the same keys, versions (by their place in the key) and markers.
      let [ka, va, kb, vb] = [marker, null as string | null, marker, null as string | null];
      for (let page = 0; page < 400; page++) {
        const x = await catalog.listVersions(one, { prefix, delimiter, keyMarker: ka, versionIdMarker: va, maxKeys });
        const y = await catalog.listVersions(split, { prefix, delimiter, keyMarker: kb, versionIdMarker: vb, maxKeys });
        const shape = (r: typeof x) => ({
          versions: r.versions.map((v) => [v.key, v.isLatest, 'isDeleteMarker' in v ? v.isDeleteMarker : false]),
          prefixes: r.commonPrefixes,
          isTruncated: r.isTruncated,
          nextKeyMarker: r.nextKeyMarker,
          hasVersionMarker: r.nextVersionIdMarker !== null,
        });
        expect(shape(y), JSON.stringify({ prefix, delimiter, marker, maxKeys, page, versions: true })).toEqual(shape(x));
        if (!x.isTruncated) break;
        [ka, va, kb, vb] = [x.nextKeyMarker, x.nextVersionIdMarker, y.nextKeyMarker, y.nextVersionIdMarker];
      }
      // ListMultipartUploads: the same keys and prefixes.
      let [ua, ia, ub, ib] = [marker, null as string | null, marker, null as string | null];
      for (let page = 0; page < 400; page++) {
        const x = await catalog.listUploadRecords(one, { prefix, delimiter, keyMarker: ua, uploadIdMarker: ia, maxUploads: maxKeys });
        const y = await catalog.listUploadRecords(split, { prefix, delimiter, keyMarker: ub, uploadIdMarker: ib, maxUploads: maxKeys });
        const shape = (r: typeof x) => ({ keys: r.uploads.map((u) => u.key), prefixes: r.commonPrefixes, isTruncated: r.isTruncated, next: r.nextKeyMarker });
        expect(shape(y), JSON.stringify({ prefix, delimiter, marker, maxKeys, page, uploads: true })).toEqual(shape(x));
        if (!x.isTruncated) break;
        [ua, ia, ub, ib] = [x.nextKeyMarker, x.nextUploadIdMarker, y.nextKeyMarker, y.nextUploadIdMarker];
      }
    }
    expect(seen.truncated).toBeGreaterThan(50);
    expect(seen.prefixes).toBeGreaterThan(20);
  });
});

describe('a split bucket', () => {
  it('routes a stale isolate by a Moved answer: one map read, then the right partition, no wrong answer', async () => {
    const first = localCatalog();
    const other = localCatalog({}, first.namespace); // another isolate: same objects, its own caches
    await first.insertBucket('stale', 'auto');
    await first.commitManifest('stale', 'a', manifest('stale', 'a'), {}).catch(() => undefined);
    await expectS3(first.splitBucketStatically('stale', ['m']), 'BucketNotEmpty');
    await first.removeManifest('stale', 'a');
    const m = await first.splitBucketStatically('stale', ['m']);
    expect(m).toMatchObject({ epoch: 1, ranges: [{ low: '' }, { low: 'm' }] });
    expect(await first.splitBucketStatically('stale', ['m'])).toEqual(m); // idempotent
    const calls = first.namespace.calls;
    calls.clear();
    const written = manifest('stale', 'x');
    await other.commitManifest('stale', 'x', written, {}); // other's map: the root owns all
    expect(Object.fromEntries(calls)).toEqual({ commitManifest: 2, getPartitionMap: 1 });
    calls.clear();
    expect(await first.getManifest('stale', 'x')).toEqual(written);
    expect(await other.getManifest('stale', 'x')).toEqual(written);
    expect(Object.fromEntries(calls)).toEqual({ getManifest: 2 });
    // The key lives only in its partition.
    const root = first.namespace.get(first.namespace.idFromName('bucket:stale'));
    expect(await root.getManifest('stale', 'x')).toEqual({ ok: null });
  });

  it("a collector whose map is stale takes the garbage of the bucket's partitions: the root answers Moved, taking nothing", async () => {
    const first = localCatalog({ garbageGraceMs: 0 });
    const other = localCatalog({ garbageGraceMs: 0 }, first.namespace);
    await first.insertBucket('sweep', 'auto');
    expect((await other.getPartitionMap('sweep')).ranges).toHaveLength(1); // cached: one partition
    await first.splitBucketStatically('sweep', ['m']);
    const old = manifest('sweep', 'x');
    await first.commitManifest('sweep', 'x', old, {});
    await first.commitManifest('sweep', 'x', manifest('sweep', 'x'), {}); // the first one's unit queued in the partition
    const taken = await other.takeDueGarbage(new Date(Date.now() + 1000), 100);
    const ids = taken.filter((g) => g.bucket === 'sweep').flatMap((g) => g.units.map((u) => u.unitId));
    expect(ids).toEqual(old.storage.kind === 'coded' ? old.storage.units.map((u) => u.unitId) : []);
    expect(ids.length).toBeGreaterThan(0);
  });

  it('copies settings to every partition: versioning decides commits there, a policy fences requests there', async () => {
    const c = localCatalog();
    await c.insertBucket('mirror', 'auto');
    await c.splitBucketStatically('mirror', ['h', 'p']);
    await c.setVersioning('mirror', 'Enabled');
    for (const key of ['a', 'k', 'z']) {
      await c.commitManifest('mirror', key, manifest('mirror', key), {});
      await c.commitManifest('mirror', key, manifest('mirror', key), {});
    }
    const versions = await c.listVersions('mirror', { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 100 });
    expect(versions.versions.map((v) => v.key)).toEqual(['a', 'a', 'k', 'k', 'z', 'z']);
    const policy = JSON.stringify({ Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::mirror/*' }] });
    await c.setBucketPolicy('mirror', policy);
    const encryption = JSON.stringify({ algorithm: 'aws:kms', kmsKeyId: 'testkey-1' });
    await c.setBucketEncryption('mirror', encryption);
    const stamp = c.cachedBucketSettings('mirror').stamp;
    for (const [i, r] of (await c.getPartitionMap('mirror')).ranges.entries()) {
      const stub = c.namespace.get(c.namespace.idFromName(r.instance));
      const stale = await stub.dispatch('getManifest', ['mirror', ['a', 'k', 'z'][i]!], '', { epoch: 1 });
      // The whole stamp: a partition fences requests by its root's settings, the default encryption's too.
      expect(stale, r.instance).toMatchObject({ stale: { stamp, rows: { policy, encryption } } });
    }
  });

  it("copies the owning account (worker/model/account.ts) with the settings: a partition's stamp names the owner", async () => {
    const c = localCatalog();
    await c.insertBucket('owned', 'auto', { owner: 'alt' });
    await c.splitBucketStatically('owned', ['h', 'p']);
    const settings = await c.getBucketSettings('owned');
    expect(settings.rows.owner).toBe('alt');
    for (const [i, r] of (await c.getPartitionMap('owned')).ranges.entries()) {
      const stub = c.namespace.get(c.namespace.idFromName(r.instance));
      const stale = await stub.dispatch('getManifest', ['owned', ['a', 'k', 'z'][i]!], '', { epoch: 1 });
      expect(stale, r.instance).toMatchObject({ stale: { stamp: settings.stamp, rows: { owner: 'alt' } } });
    }
  });

  it("copies Object Ownership and the bucket's ACL (worker/model/acl.ts) with the settings; an object's ACL is set in its key's partition", async () => {
    const c = localCatalog();
    await c.insertBucket('acls', 'auto');
    await c.splitBucketStatically('acls', ['h', 'p']);
    await c.setBucketAccess('acls', { ownership: 'ObjectWriter', acl: '[{"group":"AllUsers","p":"READ"}]' });
    const settings = await c.getBucketSettings('acls');
    for (const [i, r] of (await c.getPartitionMap('acls')).ranges.entries()) {
      const stub = c.namespace.get(c.namespace.idFromName(r.instance));
      const stale = await stub.dispatch('getManifest', ['acls', ['a', 'k', 'z'][i]!], '', { epoch: 1 });
      expect(stale, r.instance).toMatchObject({ stale: { stamp: settings.stamp, rows: { ownership: 'ObjectWriter', acl: settings.rows.acl } } });
    }
    await c.commitManifest('acls', 'z', manifest('acls', 'z'), {});
    const acl = { owner: 'alt', grants: '[{"id":"alt","p":"FULL_CONTROL"}]' };
    await c.setObjectAcl('acls', 'z', acl);
    expect((await c.getManifest('acls', 'z'))!.metadata.acl).toEqual(acl);
    // Back to BucketOwnerEnforced with grants on the bucket: refused where it is stored.
    await expectS3(c.setBucketAccess('acls', { ownership: null }), 'InvalidBucketAclWithObjectOwnership');
    await c.setBucketAccess('acls', { acl: null });
    await c.setBucketAccess('acls', { ownership: null });
    await expectS3(c.setBucketAccess('acls', { acl: '[]' }), 'AccessControlListNotSupported');
  });

  it('is deleted only when every partition is empty; a refused delete leaves it writable', async () => {
    const c = localCatalog();
    await c.insertBucket('gone', 'auto');
    const map = await c.splitBucketStatically('gone', ['h', 'p']);
    await c.commitManifest('gone', 'q', manifest('gone', 'q'), {});
    await expectS3(c.removeBucket('gone'), 'BucketNotEmpty');
    await c.commitManifest('gone', 'r', manifest('gone', 'r'), {}); // not left refusing writes
    await c.removeManifest('gone', 'q');
    await c.removeManifest('gone', 'r');
    await c.removeBucket('gone');
    await expectS3(c.getManifest('gone', 'r'), 'NoSuchBucket');
    for (const r of map.ranges) expect(c.namespace.instances.get(r.instance)!.object.listBucketRecords(), r.instance).toEqual([]);
    // Made again, the bucket is one partition, and its old partitions are never its new ones.
    await c.insertBucket('gone', 'auto');
    expect(await c.getPartitionMap('gone')).toMatchObject({ epoch: 0, ranges: [{ low: '', instance: 'bucket:gone' }] });
    const again = await c.splitBucketStatically('gone', ['h', 'p']);
    expect(again.ranges.slice(1).map((r) => r.instance)).not.toEqual(expect.arrayContaining(map.ranges.slice(1).map((r) => r.instance)));
  });

  it("walks key rotation's records partition by partition and replaces each where it lives, resuming from a cursor", async () => {
    const c = localCatalog();
    await c.insertBucket('seals', 'auto');
    await c.splitBucketStatically('seals', ['h', 'p']);
    for (const key of ['a', 'b', 'k', 'q', 'z']) await c.commitManifest('seals', key, manifest('seals', key), {});
    const upload = await c.insertUpload('seals', 'r', { metadata: { user: {} }, checksum: null });
    await c.putPart('seals', 'r', upload.uploadId, { partNumber: 1, etag: '"e"', size: 1, lastModified: new Date().toISOString(), units: [] });
    const seen: string[] = [];
    let cursor = null;
    for (let page = 0; page < 10; page++) {
      const records = await c.listSealRecords('seals', cursor, 2);
      seen.push(...records.map((r) => `${r.at.kind}:${r.at.a}`));
      const items = records.map((r) => ({ at: r.at, before: r.json, after: r.json.replace('"format":1', '"format":1,"rotated":true') }));
      expect(await c.replaceSealRecords('seals', items)).toBe(items.length);
      if (records.length < 2) break;
      cursor = records.at(-1)!.at;
    }
    expect(seen).toEqual(['version:a', 'version:b', 'version:k', 'version:q', 'version:z', `part:${upload.uploadId}`]); // 'r' lives with 'q' and 'z'
    for (const key of ['a', 'k', 'z']) expect(await c.getManifest('seals', key)).toMatchObject({ rotated: true });
    // The progress of upkeep jobs is the root's, one record per job.
    await c.setDrainState('seals', '{"x":1}');
    expect(await c.getDrainState('seals')).toBe('{"x":1}');
  });
});

describe('the contract split on line', () => {
  it('really splits: a bucket written through the hook ends in several partitions', async () => {
    const c = localCatalog({}, undefined, { split: false, splitEvery: 3 });
    await c.insertBucket('grows', 'auto');
    for (let i = 0; i < 30; i++) await c.commitManifest('grows', `k${i}`, manifest('grows', `k${i}`), {});
    expect((await c.getPartitionMap('grows')).ranges.length).toBeGreaterThanOrEqual(4);
  });
});
