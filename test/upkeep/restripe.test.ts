/**
 * The re-stripe (issue 26) over memory backends and the product's catalog, each rule on its own:
 * - every kind of version (single PUT, inline, multipart with part checksums, versions, tagged,
 *   sealed, locked) is rewritten 4+2 -> 8+3 and back, byte-identical, with its version id, ETag,
 *   Last-Modified, parts and lock unchanged, run by run from the catalog's cursor; SSE-C versions
 *   are left as they are (blocked) and still read; the old shards stay until the grace delay;
 * - the compare-and-set: an overwrite, a delete or a tag change between the read and the swap
 *   wins, and the rewrite's shards are deleted by the next collection, not after the grace delay;
 * - a rewrite that cannot write every shard changes nothing and deletes what it wrote;
 * - the backends' limits pace the rewrites, and a run ends at its deadline rather than wait past it;
 * - progress: units and bytes left from the ledger, rate, done.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend, type Backend } from '../../backends/index.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { KmsKeys } from '../../worker/engine/kms-keys.ts';
import type { ObjectManifest } from '../../worker/format/manifest.ts';
import { shardKey } from '../../worker/format/shard-key.ts';
import { toBase64 } from '../../worker/model/bytes.ts';
import type { SseRequest } from '../../worker/model/sse.ts';
import { collectGarbage } from '../../worker/upkeep/collector.ts';
import { restripeBatch, type RestripeReport } from '../../worker/upkeep/restripe.ts';
import { restripeProgress } from '../../worker/upkeep/restripe-progress.ts';
import { restripeVersion } from '../../worker/upkeep/restripe-version.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';

const GRACE = 60_000;
const body = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const put = (n: number, extra: Record<string, unknown> = {}) => ({ contentLength: n, metadata: { user: {} }, checksum: null, conditions: {}, ...extra });
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const customerKey = new Uint8Array(32).fill(7);
const SSE_C: SseRequest = { kind: 'c', key: customerKey, keyMD5: toBase64(createHash('md5').update(customerKey).digest()) };

function setup(policyOfB: string = 'old') {
  const backends = Array.from({ length: 12 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` })));
  const configOf = (policy: string) =>
    parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { old: { k: 4, m: 2, blockSize: 4096 }, wide: { k: 8, m: 3, blockSize: 4096 }, triple: { codec: 'replicate', replicas: 3, blockSize: 4096 } },
      defaultPolicy: policy,
    });
  const catalog = localCatalog({ garbageGraceMs: GRACE });
  const units = new UnitStore(backends, () => {}, { keyRing: DEV_KEY_RING });
  const byId = new Map<string, Backend>(backends.map((b) => [b.id, b]));
  const storeOf = (policy: string) => new EcStore({ catalog, units, settings: { ...engineSettings(configOf(policy)), minPartSize: 5000 } });
  const depsOf = (policy: string, extra: object = {}) => ({
    catalog,
    units,
    settings: engineSettings(configOf(policy)),
    graceMs: GRACE,
    writeReservationSeconds: 3600,
    fleet: [],
    ...extra,
  });
  return { backends, catalog, units, byId, storeOf, depsOf, store: storeOf(policyOfB) };
}

type S = ReturnType<typeof setup>;

async function blobCount(s: S): Promise<number> {
  let n = 0;
  for (const b of s.backends) n += (await b.inner.list('')).entries.length;
  return n;
}

async function geometries(s: S, bucket: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (let after: string | null = null; ; ) {
    const page = await s.catalog.listUnits(bucket, after, 500);
    if (!page.length) return out;
    for (const r of page) out.set(`${r.key}@${r.versionId}`, [...(out.get(`${r.key}@${r.versionId}`) ?? []), `${r.unit.k}+${r.unit.m}`]);
    after = page.at(-1)!.unitId;
  }
}

async function runUntilDone(s: S, policy: string, options: { maxVersions: number }): Promise<RestripeReport[]> {
  const reports: RestripeReport[] = [];
  for (let i = 0; i < 50; i++) {
    const r = await restripeBatch(s.depsOf(policy), { ...options, deadline: Date.now() + 60_000 });
    reports.push(r);
    if (!r.stopped && (await restripeProgress(s.catalog, s.depsOf(policy).settings)).every((p) => p.done)) return reports;
  }
  throw new Error(
    `the re-stripe did not finish in 50 runs: ${JSON.stringify(reports.slice(-2))} ${JSON.stringify(await restripeProgress(s.catalog, s.depsOf(policy).settings))}`,
  );
}

interface Expected {
  bucket: string;
  key: string;
  versionId?: string;
  data: Uint8Array;
  head: { etag: string; lastModified: Date; partsCount?: number };
  sse?: SseRequest;
  parts?: Uint8Array[];
}

async function readBack(store: EcStore, e: Expected): Promise<void> {
  const got = await store.getObject(e.bucket, e.key, { conditions: {}, ...(e.versionId ? { versionId: e.versionId } : {}), ...(e.sse ? { sse: e.sse } : {}) });
  expect(md5(await readBytes(got.body)), `${e.key}@${e.versionId}`).toBe(md5(e.data));
  expect(got.etag).toBe(e.head.etag);
  expect(got.lastModified.getTime()).toBe(e.head.lastModified.getTime());
  expect(got.partsCount).toBe(e.head.partsCount);
  for (const [i, part] of (e.parts ?? []).entries()) {
    const p = await store.getObject(e.bucket, e.key, { conditions: {}, partNumber: i + 1, ...(e.versionId ? { versionId: e.versionId } : {}) });
    expect(md5(await readBytes(p.body)), `${e.key} part ${i + 1}`).toBe(md5(part));
  }
}

describe('the re-stripe', () => {
  it('rewrites every kind of version 4+2 -> 8+3 and back, byte-identical, run by run; SSE-C stays; old shards go only after the grace delay', async () => {
    const s = setup('old');
    const old = s.store;
    const rand = prng(26);
    const expected: Expected[] = [];
    const remember = async (bucket: string, key: string, data: Uint8Array, versionId?: string, extra: Partial<Expected> = {}) => {
      const h = await old.headObject(bucket, key, { conditions: {}, ...(versionId ? { versionId } : {}), ...(extra.sse ? { sse: extra.sse } : {}) });
      expected.push({ bucket, key, versionId, data, head: { etag: h.etag, lastModified: h.lastModified, partsCount: h.partsCount }, ...extra });
    };
    await old.createBucket('b', { region: 'us-east-1' });
    await old.config.putBucketVersioning('b', 'Enabled');
    for (let v = 0; v < 3; v++) {
      const data = randomBytes(rand, 9000 + v * 17000);
      const r = await old.putObject('b', 'plain', body(data), put(data.length, v === 1 ? { checksum: { algorithm: 'CRC32', expected: null } } : {}));
      await remember('b', 'plain', data, r.versionId);
    }
    const tiny = randomBytes(rand, 300);
    await remember('b', 'tiny', tiny, (await old.putObject('b', 'tiny', body(tiny), put(tiny.length))).versionId);
    const tagged = randomBytes(rand, 30000);
    const tv = (await old.putObject('b', 'tagged', body(tagged), put(tagged.length))).versionId;
    await old.putObjectTagging('b', 'tagged', [{ key: 'colour', value: 'blue' }]);
    await remember('b', 'tagged', tagged, tv);
    const deleted = randomBytes(rand, 12000);
    const dv = (await old.putObject('b', 'deleted', body(deleted), put(deleted.length))).versionId;
    await old.deleteObject('b', 'deleted'); // a delete marker on top: the version stays, noncurrent
    await remember('b', 'deleted', deleted, dv);
    const up = await old.createMultipartUpload('b', 'multi', { metadata: { user: { a: '1' } }, checksum: { algorithm: 'CRC32', type: 'COMPOSITE' } });
    const parts = [randomBytes(rand, 6000), randomBytes(rand, 7001), randomBytes(rand, 2500)];
    const infos = [];
    for (const [i, p] of parts.entries())
      infos.push(
        await old.uploadPart('b', 'multi', up.uploadId, i + 1, body(p), { contentLength: p.length, checksum: { algorithm: 'CRC32', expected: null } }),
      );
    const done = await old.completeMultipartUpload(
      'b',
      'multi',
      up.uploadId,
      infos.map((p) => ({
        partNumber: p.partNumber,
        etag: p.etag,
        ...(p.checksum ? { checksum: { algorithm: p.checksum.algorithm, value: p.checksum.value } } : {}),
      })),
      { conditions: {} },
    );
    await remember('b', 'multi', new Uint8Array(Buffer.concat(parts)), done.versionId, { parts });
    const secret = randomBytes(rand, 20000);
    const sv = (await old.putObject('b', 'secret', body(secret), put(secret.length, { sse: SSE_C }))).versionId;
    await remember('b', 'secret', secret, sv, { sse: SSE_C });
    // A locked bucket: a COMPLIANCE-retained version (its data must never be lost) and a legal hold.
    await old.createBucket('locked', { region: 'us-east-1', objectLock: true });
    const kept = randomBytes(rand, 25000);
    const until = new Date(Date.now() + 86_400_000).toISOString();
    const kv = (
      await old.putObject('locked', 'kept', body(kept), put(kept.length, { metadata: { user: {}, objectLock: { mode: 'COMPLIANCE', retainUntil: until } } }))
    ).versionId;
    await remember('locked', 'kept', kept, kv);
    const held = randomBytes(rand, 15000);
    const hv = (await old.putObject('locked', 'held', body(held), put(held.length, { metadata: { user: {}, objectLock: { legalHold: 'ON' } } }))).versionId;
    await remember('locked', 'held', held, hv);
    const versionJson = new Map<string, ObjectManifest>();
    for (const bucket of ['b', 'locked'])
      for (const r of await s.catalog.listVersionRecords(bucket, null, 100))
        versionJson.set(`${bucket}/${r.at.key}@${r.at.versionId}`, JSON.parse(r.json) as ObjectManifest);
    const blobsBefore = await blobCount(s);

    // Before: everything is 4+2 (tiny is inline), and the progress says how much is left.
    const wideSettings = s.depsOf('wide').settings;
    const before = await restripeProgress(s.catalog, wideSettings);
    expect(before.map((p) => p.bucket).sort()).toEqual(['b', 'locked']);
    const leftB = before.find((p) => p.bucket === 'b')!;
    // plain x3, tagged, deleted, multi's 3 parts, secret: multi's last part, under the small
    // threshold, is three replicas under either policy (a small part is never inline), counted
    // until a pass has found it conforms.
    expect(leftB.left).toMatchObject({ units: 3 + 1 + 1 + 3 + 1, upperBound: true });
    expect(leftB.done).toBe(false);

    // The policy changes to 8+3: run by run, 2 versions at most each.
    const reports = await runUntilDone(s, 'wide', { maxVersions: 2 });
    expect(reports.length).toBeGreaterThan(3);
    const total = reports.reduce(
      (t, r) => ({ rewritten: t.rewritten + r.rewritten, blocked: t.blocked + r.blocked, failed: t.failed + r.failed, conflicts: t.conflicts + r.conflicts }),
      { rewritten: 0, blocked: 0, failed: 0, conflicts: 0 },
    );
    expect(total).toMatchObject({ rewritten: 8, failed: 0, conflicts: 0 });
    expect(total.blocked).toBeGreaterThanOrEqual(1);
    expect(reports.flatMap((r) => r.problems).find((p) => p.key === 'secret')?.error).toMatch(/SSE-C/);

    // After: every version but the SSE-C one is 8+3; each reads back as before, from any store.
    const wide = s.storeOf('wide');
    for (const [id, shapes] of [...(await geometries(s, 'b')), ...(await geometries(s, 'locked'))]) {
      const want = id.startsWith('secret@') ? ['4+2'] : id.startsWith('multi@') ? ['8+3', '8+3', '1+2'] : ['8+3'];
      expect(shapes, id).toEqual(want);
    }
    for (const e of expected) await readBack(wide, e);
    // Metadata, tags, locks and checksums are the version's own; the tags are also beside the new first unit.
    for (const bucket of ['b', 'locked']) {
      for (const r of await s.catalog.listVersionRecords(bucket, null, 100)) {
        const now = JSON.parse(r.json) as ObjectManifest;
        const was = versionJson.get(`${bucket}/${r.at.key}@${r.at.versionId}`)!;
        expect({ ...now, storage: null }).toEqual({ ...was, storage: null });
        if (r.at.key === 'tagged') expect(now.storage.kind === 'coded' && now.storage.units[0]!.tagRecord).toBe(true);
        if (r.at.key === 'multi' && now.storage.kind === 'coded') expect(now.storage.units.map((u) => u.partNumber)).toEqual([1, 2, 3]);
      }
    }
    await expect(wide.deleteObject('locked', 'kept', { versionId: kv })).rejects.toThrow(/Access Denied|AccessDenied|locked/i);
    await expect(wide.deleteObject('locked', 'held', { versionId: hv })).rejects.toThrow(/Access Denied|AccessDenied|locked/i);
    const after = await restripeProgress(s.catalog, wideSettings);
    const b = after.find((p) => p.bucket === 'b')!;
    expect(b).toMatchObject({ left: { units: 1 }, blocked: 1, done: true, rewritten: { versions: 6 } });
    expect(after.find((p) => p.bucket === 'locked')).toMatchObject({ left: { units: 0 }, done: true, rewritten: { versions: 2 } });
    // Every rewrite's reservation ended with its swap (a reservation left would have the collector
    // delete referenced units when it expires).
    for (const bucket of ['b', 'locked']) expect((await s.catalog.bucketHealth(bucket, new Date())).reservations.held, bucket).toBe(0);
    // A run with nothing to do reads only the ledger and the state row.
    expect(await restripeBatch(s.depsOf('wide'), { maxVersions: 10, deadline: Date.now() + 60_000 })).toMatchObject({ scanned: 0, rewritten: 0 });

    // The old shards stay through the grace delay (reads that looked up the old manifests finish), then go.
    expect(await collectGarbage(s.catalog, s.byId)).toBe(0);
    expect(await blobCount(s)).toBeGreaterThan(blobsBefore);
    expect(await collectGarbage(s.catalog, s.byId, new Date(Date.now() + GRACE + 1000))).toBe(8 + 2); // plain x3, tagged, deleted, multi x3, kept, held
    const wideBlobs = await blobCount(s);
    for (const e of expected) await readBack(wide, e);

    // And back to 4+2.
    await runUntilDone(s, 'old', { maxVersions: 100 });
    for (const [id, shapes] of await geometries(s, 'b')) expect(shapes, id).toEqual(id.startsWith('multi@') ? ['4+2', '4+2', '1+2'] : ['4+2']);
    for (const e of expected) await readBack(s.storeOf('old'), e);
    await collectGarbage(s.catalog, s.byId, new Date(Date.now() + 2 * GRACE + 1000));
    expect(await blobCount(s)).toBeLessThan(wideBlobs);
  });

  it('rewrites SSE-KMS versions (single and multipart) under their named key, ETag unchanged, never under the gateway key', async () => {
    const s = setup('old');
    const kms = new KmsKeys({ catalog: s.catalog, ring: DEV_KEY_RING, region: 'us-east-1' });
    await kms.create('stripes');
    const units = new UnitStore(s.backends, () => {}, { keyRing: kms.ring });
    const configOf = (policy: string) =>
      parseConfig({
        backends: s.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
        policies: { old: { k: 4, m: 2, blockSize: 4096 }, wide: { k: 8, m: 3, blockSize: 4096 } },
        defaultPolicy: policy,
      });
    const store = new EcStore({ catalog: s.catalog, units, settings: { ...engineSettings(configOf('old')), minPartSize: 5000 }, kms });
    const sse: SseRequest = { kind: 'kms', keyId: 'stripes' };
    const rand = prng(43);
    await store.createBucket('k', { region: 'us-east-1' });
    const single = randomBytes(rand, 30000);
    await store.putObject('k', 'single', body(single), put(single.length, { sse }));
    const up = await store.createMultipartUpload('k', 'multi', { metadata: { user: {} }, checksum: null, sse });
    const parts = [randomBytes(rand, 6000), randomBytes(rand, 3000)];
    const infos = [];
    for (const [i, p] of parts.entries())
      infos.push(await store.uploadPart('k', 'multi', up.uploadId, i + 1, body(p), { contentLength: p.length, checksum: null }));
    await store.completeMultipartUpload(
      'k',
      'multi',
      up.uploadId,
      infos.map((p) => ({ partNumber: p.partNumber, etag: p.etag })),
      { conditions: {} },
    );
    const heads = new Map(
      await Promise.all(['single', 'multi'].map(async (key) => [key, (await store.headObject('k', key, { conditions: {} })).etag] as const)),
    );
    const report = await restripeBatch(
      { catalog: s.catalog, units, settings: engineSettings(configOf('wide')), graceMs: GRACE, writeReservationSeconds: 3600, fleet: [] },
      { maxVersions: 10, deadline: Date.now() + 60_000 },
    );
    expect([report.rewritten, report.failed, report.blocked], JSON.stringify(report.problems)).toEqual([2, 0, 0]);
    // 8+3 now (the small last part replicated, as the wide policy stores small pieces); nothing left at 4+2.
    expect([...(await geometries(s, 'k')).values()].flat().sort()).toEqual(['1+2', '8+3', '8+3']);
    const kids = (await s.catalog.listSealRecords('k', null, 100)).flatMap((r) => [...r.json.matchAll(/"kid":"([^"]+)"/g)].map((m) => m[1]));
    expect(new Set(kids)).toEqual(new Set(['~kms/stripes/1']));
    for (const [key, data] of [
      ['single', single],
      ['multi', new Uint8Array(Buffer.concat(parts))],
    ] as const) {
      const got = await store.getObject('k', key, { conditions: {} });
      expect(md5(await readBytes(got.body)), key).toBe(md5(data));
      expect(got.etag).toBe(heads.get(key));
    }
  });

  it('moves three replicas to 8+3 and back (and the small objects a replicating policy keeps as replicas stay)', async () => {
    const s = setup('triple');
    await s.store.createBucket('r', { region: 'us-east-1' });
    const rand = prng(3);
    const data = new Map<string, Uint8Array>();
    for (let i = 0; i < 6; i++) {
      const bytes = randomBytes(rand, 5000 + i * 9000);
      data.set(`k${i}`, bytes);
      await s.store.putObject('r', `k${i}`, body(bytes), put(bytes.length));
    }
    expect([...(await geometries(s, 'r')).values()].flat().every((g) => g === '1+2')).toBe(true);
    await runUntilDone(s, 'wide', { maxVersions: 4 });
    expect([...(await geometries(s, 'r')).values()].flat().every((g) => g === '8+3')).toBe(true);
    const wide = s.storeOf('wide');
    for (const [key, bytes] of data) expect(md5(await readBytes((await wide.getObject('r', key, { conditions: {} })).body))).toBe(md5(bytes));
    // And back: 8+3 to three replicas.
    await runUntilDone(s, 'triple', { maxVersions: 4 });
    expect([...(await geometries(s, 'r')).values()].flat().every((g) => g === '1+2')).toBe(true);
    const triple = s.storeOf('triple');
    for (const [key, bytes] of data) expect(md5(await readBytes((await triple.getObject('r', key, { conditions: {} })).body))).toBe(md5(bytes));
  });

  it('loses to an overwrite, a delete or a tag change made between its read and its swap; its shards are collected at once', async () => {
    const s = setup('old');
    await s.store.createBucket('u', { region: 'us-east-1' });
    const first = new Uint8Array(20000).fill(1),
      second = new Uint8Array(21000).fill(2);
    await s.store.putObject('u', 'k', body(first), put(first.length));
    const [stale] = await s.catalog.listVersionRecords('u', null, 10);
    // A client overwrites the (null) version: the version the re-stripe read is gone.
    await s.store.putObject('u', 'k', body(second), put(second.length));
    const blobs = await blobCount(s); // both versions' shards (the first's wait for the grace delay)
    const deps = s.depsOf('wide');
    expect(await restripeVersion('u', stale!, { ...deps, policy: deps.settings.policies.wide! })).toEqual({ kind: 'gone' });
    expect(await blobCount(s)).toBe(blobs + 11); // the rewrite was written, then lost...
    expect(await collectGarbage(s.catalog, s.byId)).toBe(1); // ...and is collected now, not after the grace delay
    expect((await s.catalog.bucketHealth('u', new Date())).reservations.held).toBe(0);
    expect(await blobCount(s)).toBe(blobs);
    expect(md5(await readBytes((await s.store.getObject('u', 'k', { conditions: {} })).body))).toBe(md5(second));
    expect([...(await geometries(s, 'u')).values()].flat()).toEqual(['4+2']);

    // Versioned: a tag change, then a delete of the version, each between the read and the swap.
    await s.store.createBucket('v', { region: 'us-east-1' });
    await s.store.config.putBucketVersioning('v', 'Enabled');
    const v1 = (await s.store.putObject('v', 'k', body(first), put(first.length))).versionId!;
    const v2 = (await s.store.putObject('v', 'k', body(second), put(second.length))).versionId!;
    const records = await s.catalog.listVersionRecords('v', null, 10);
    const recordOf = (id: string) => records.find((r) => JSON.parse(r.json).versionId === id)!;
    await s.store.putObjectTagging('v', 'k', [{ key: 't', value: '1' }], v1);
    await s.store.deleteObject('v', 'k', { versionId: v2 });
    const policy = deps.settings.policies.wide!;
    expect(await restripeVersion('v', recordOf(v1), { ...deps, policy })).toEqual({ kind: 'gone' });
    expect(await restripeVersion('v', recordOf(v2), { ...deps, policy })).toEqual({ kind: 'gone' });
    // Nothing came back, nothing changed: v2 stays deleted, v1 is 4+2 with its new tags.
    await expect(s.store.getObject('v', 'k', { conditions: {}, versionId: v2 })).rejects.toThrow(/NoSuchVersion|version/i);
    expect((await s.catalog.getVersion('v', 'k', v1)).kind).toBe('object');
    expect([...(await geometries(s, 'v')).values()].flat()).toEqual(['4+2']);
    // The next pass rewrites what is left, the tags included.
    const r = await restripeBatch(deps, { maxVersions: 10, deadline: Date.now() + 60_000, bucket: 'v' });
    expect(r).toMatchObject({ rewritten: 1, conflicts: 0 });
    const head = await s.store.headObject('v', 'k', { conditions: {}, versionId: v1 });
    expect(head.metadata.tags).toEqual([{ key: 't', value: '1' }]);
    expect(md5(await readBytes((await s.storeOf('wide').getObject('v', 'k', { conditions: {}, versionId: v1 })).body))).toBe(md5(first));
  });

  it('changes nothing when a backend of the new placement refuses, and deletes what it wrote; a later run completes', async () => {
    const s = setup('old');
    await s.store.createBucket('f', { region: 'us-east-1' });
    const data = randomBytes(prng(5), 40000);
    await s.store.putObject('f', 'k', body(data), put(data.length));
    const blobs = await blobCount(s);
    const oldUnits = [...(await geometries(s, 'f')).values()].flat();
    const down = s.backends.find((b) => b.id === s.units.placementOf('f', 'k', 8, 3)[10]!.id)!;
    down.goOffline();
    const failed = await restripeBatch(s.depsOf('wide'), { maxVersions: 10, deadline: Date.now() + 60_000 });
    expect(failed).toMatchObject({ rewritten: 0, failed: 1 });
    expect(failed.problems[0]!.error).toBeTruthy();
    expect([...(await geometries(s, 'f')).values()].flat()).toEqual(oldUnits);
    expect(await blobCount(s)).toBe(blobs); // what reached the other ten was deleted
    // Its reservation stays until it expires: whatever a delete missed is then collected (its units are referenced by nothing).
    expect((await s.catalog.bucketHealth('f', new Date())).reservations.held).toBe(1);
    expect(md5(await readBytes((await s.store.getObject('f', 'k', { conditions: {} })).body))).toBe(md5(data));
    down.goOnline();
    expect(await restripeBatch(s.depsOf('wide'), { maxVersions: 10, deadline: Date.now() + 60_000 })).toMatchObject({ rewritten: 1, failed: 0 });
    expect([...(await geometries(s, 'f')).values()].flat()).toEqual(['8+3']);
  });

  it("paces rewrites by the backends' limits and stops at the deadline rather than wait past it", async () => {
    const s = setup('old');
    await s.store.createBucket('p', { region: 'us-east-1' });
    for (let i = 0; i < 4; i++) await s.store.putObject('p', `k${i}`, body(new Uint8Array(40000).fill(i)), put(40000));
    let t = 1_000_000;
    const waits: number[] = [];
    // 10 KB/s on every backend: a 40 KB object asks each of its backends for about 10 KB (read or write): ~1 s each.
    const fleet = s.backends.map((b) => ({ id: b.id, limits: { bytesPerSecond: 10_000 } }));
    const deps = s.depsOf('wide', {
      fleet,
      now: () => t,
      sleep: async (ms: number) => {
        waits.push(ms);
        t += ms;
      },
    });
    const r = await restripeBatch(deps, { maxVersions: 10, deadline: t + 2500 });
    expect(r.stopped).toBe(true);
    expect(r.rewritten).toBeGreaterThanOrEqual(1);
    expect(r.rewritten).toBeLessThan(4);
    expect(waits.length).toBeGreaterThanOrEqual(1);
    expect(t).toBeLessThan(1_000_000 + 2500);
    // The next run goes on from the cursor.
    const rest = await restripeBatch(s.depsOf('wide'), { maxVersions: 10, deadline: Date.now() + 60_000 });
    expect(r.rewritten + rest.rewritten).toBe(4);
  });

  it('leaves a COMPLIANCE-retained version on backends that enforce retention until its retention ends', async () => {
    const s = setup('old');
    const retained: string[] = [];
    // Backends with S3 Object Lock (config "objectLock"): they retain what the gateway asks them to.
    for (const b of s.backends) Object.assign(b.inner, { retain: async (key: string) => void retained.push(key) });
    await s.store.createBucket('l', { region: 'us-east-1', objectLock: true });
    const until = new Date(Date.now() + 86_400_000).toISOString();
    const data = randomBytes(prng(9), 30000);
    const v = (
      await s.store.putObject('l', 'k', body(data), put(data.length, { metadata: { user: {}, objectLock: { mode: 'COMPLIANCE', retainUntil: until } } }))
    ).versionId!;
    expect(retained.length).toBe(6); // the write mirrored the retention onto its shards
    const r = await restripeBatch(s.depsOf('wide'), { maxVersions: 10, deadline: Date.now() + 60_000 });
    expect(r).toMatchObject({ rewritten: 0, blocked: 1 });
    expect(r.problems[0]!.error).toMatch(/COMPLIANCE-retained until/);
    expect([...(await geometries(s, 'l')).values()].flat()).toEqual(['4+2']);
    expect((await restripeProgress(s.catalog, s.depsOf('wide').settings))[0]).toMatchObject({ left: { units: 1 }, blocked: 1, done: true });
    // Once the retention is over, the next pass rewrites it; the new shards get no retention (it has ended).
    const later = Date.parse(until) + 1000;
    const after = await restripeBatch(s.depsOf('wide', { now: () => later }), { maxVersions: 10, deadline: later + 60_000 });
    expect(after).toMatchObject({ rewritten: 1, blocked: 0 });
    expect(retained.length).toBe(6);
    expect(md5(await readBytes((await s.storeOf('wide').getObject('l', 'k', { conditions: {}, versionId: v })).body))).toBe(md5(data));
  });

  it('a run killed mid-rewrite leaves the version as it was; the next run goes on; the killed rewrite is collected when its reservation ends', async () => {
    const s = setup('old');
    await s.store.createBucket('k', { region: 'us-east-1' });
    const data = new Map<string, Uint8Array>();
    for (let i = 0; i < 5; i++) {
      const bytes = randomBytes(prng(40 + i), 20000 + i * 3000);
      data.set(`k${i}`, bytes);
      await s.store.putObject('k', `k${i}`, body(bytes), put(bytes.length));
    }
    // The gateway dies in its third rewrite: from the 23rd shard written on, no PUT ever settles.
    let puts = 0;
    const dying = s.backends.map(
      (b): Backend => ({
        id: b.id,
        domain: b.domain,
        put: (key, bytes, length, opts) => (++puts > 22 ? new Promise<void>(() => {}) : b.put(key, bytes, length, opts)),
        get: (key, range) => b.get(key, range),
        head: (key) => b.head(key),
        delete: (key) => b.delete(key),
        list: (prefix, cursor) => b.list(prefix, cursor),
      }),
    );
    const killed = new UnitStore(dying, () => {}, { keyRing: DEV_KEY_RING });
    void restripeBatch({ ...s.depsOf('wide'), units: killed }, { maxVersions: 10, deadline: Date.now() + 60_000 });
    await new Promise((r) => setTimeout(r, 300));
    expect(puts).toBeGreaterThan(22);
    expect([...(await geometries(s, 'k')).values()].flat().sort()).toEqual(['4+2', '4+2', '4+2', '8+3', '8+3']);
    for (const [key, bytes] of data) expect(md5(await readBytes((await s.store.getObject('k', key, { conditions: {} })).body)), key).toBe(md5(bytes));
    // A new gateway: the versions already rewritten conform (nothing is rewritten twice), the rest is.
    const resumed = await restripeBatch(s.depsOf('wide'), { maxVersions: 10, deadline: Date.now() + 60_000 });
    expect(resumed).toMatchObject({ rewritten: 3, conflicts: 0, failed: 0 });
    expect((await s.catalog.bucketHealth('k', new Date())).reservations.held).toBe(1); // the killed rewrite's
    // Past the grace delay and the killed rewrite's reservation: the backends hold exactly the referenced shards.
    await collectGarbage(s.catalog, s.byId, new Date(Date.now() + 2 * 3600_000));
    const referenced: string[] = [];
    for (const r of await s.catalog.listUnits('k', null, 100)) r.unit.placement.forEach((_, i) => referenced.push(shardKey('k', r.unitId, i)));
    const stored = (await Promise.all(s.backends.map(async (b) => (await b.inner.list('')).entries.map((e) => e.key)))).flat();
    expect(stored.sort()).toEqual(referenced.sort());
    for (const [key, bytes] of data) expect(md5(await readBytes((await s.storeOf('wide').getObject('k', key, { conditions: {} })).body)), key).toBe(md5(bytes));
  });

  it('counts a version that needs more requests than a run may make as blocked, without writing it', async () => {
    const s = setup('old');
    await s.store.createBucket('q', { region: 'us-east-1' });
    await s.store.putObject('q', 'k', body(new Uint8Array(40000).fill(9)), put(40000));
    const blobs = await blobCount(s);
    const r = await restripeBatch(s.depsOf('wide'), { maxVersions: 10, maxRequests: 10, deadline: Date.now() + 60_000 });
    expect(r).toMatchObject({ rewritten: 0, blocked: 1 });
    expect(r.problems[0]!.error).toMatch(/backend requests/);
    expect(await blobCount(s)).toBe(blobs);
    const [p] = await restripeProgress(s.catalog, s.depsOf('wide').settings);
    expect(p).toMatchObject({ left: { units: 1 }, blocked: 1, done: true });
  });
});
