/**
 * Key rotation (upkeep/rotate-keys.ts) over 10,000 objects (`npm run test:full`; 2,000 in `npm test`:
 * still batches of 500, and a first call cut short after two of them): every data key is re-wrapped under the
 * new key with no backend call at all (the backends' call counters), in bounded calls that go on
 * where the last stopped; afterwards a gateway holding only the new key reads every object. A
 * record changed between read and replace is never overwritten.
 */
import { describe, expect, it, vi } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { KeyRing } from '../../worker/format/seal.ts';
import { rotateKeys } from '../../worker/upkeep/rotate-keys.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';

const key = (seed: number) => btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => (i * 7 + seed) & 255)));
const A = key(1),
  B = key(2);
const OBJECTS = process.env.SHARDGATE_FULL_SIZE === '1' ? 10_000 : 2_000;
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const put = (size: number) => ({ contentLength: size, metadata: { user: {} }, checksum: null, conditions: {} });

describe('key rotation', () => {
  it(`re-wraps ${OBJECTS} objects under a new key with no backend call; the old key can then go`, async () => {
    const backends = Array.from({ length: 6 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` })));
    const config = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { main: { k: 4, m: 2, blockSize: 4096 } },
      defaultPolicy: 'main',
    });
    // In the `split` project, a partition moves on line every 40th write here instead of every
    // 2nd: 50 splits and merges while the objects are written, not 1,000 (each copies a partition
    // that grows with the bucket: 40 s of this file's 42 there, measured 2026-12-07). The re-wrap
    // still pages through a bucket cut into partitions and moved under it.
    const splitEvery = Number(process.env.SHARDGATE_TEST_SPLIT_EVERY ?? 0) ? { splitEvery: 40 } : {};
    const catalog = localCatalog({ garbageGraceMs: 0 }, undefined, splitEvery);
    const store = (ring: KeyRing) =>
      new EcStore({ catalog, units: new UnitStore(backends, () => {}, { keyRing: ring }), settings: { ...engineSettings(config), minPartSize: 5000 } });
    const before = store(KeyRing.fromBase64({ a: A }, 'a'));
    const rand = prng(7);
    const objects = new Map<string, Uint8Array>();
    for (const bucket of ['one', 'two']) await before.createBucket(bucket, { region: 'us-east-1' });
    for (let i = 0; i < OBJECTS; i++) {
      const bucket = i % 2 ? 'one' : 'two';
      const data = randomBytes(rand, i % 500 === 0 ? 20_000 : 1 + (i % 300)); // 20 coded, the rest inline
      await before.putObject(bucket, `k${i}`, stream(data), put(data.length));
      objects.set(`${bucket}/k${i}`, data);
    }
    // An open multipart upload: its uploaded part's key is re-wrapped too.
    const up = await before.createMultipartUpload('one', 'open-upload', { metadata: { user: {} }, checksum: null });
    const part = randomBytes(rand, 6000);
    const info = await before.uploadPart('one', 'open-upload', up.uploadId, 1, stream(part), { contentLength: part.length, checksum: null });

    const callsBefore = backends.map((b) => b.calls.length);
    const both = KeyRing.fromBase64({ a: A, b: B }, 'b');
    await expect(rotateKeys(catalog, KeyRing.fromBase64({ a: A, b: B }, 'a'), 'b', { deadline: Date.now() + 60_000 })).rejects.toThrow(/active key/);
    // A call cut short goes on where the last stopped. The clock moves one second per catalog
    // page (Date.now, which the deadline is read against): a first call with 1.5 s does two pages
    // of 500 in bucket one (1,000 objects and a part: not done) and nothing in bucket two.
    let clock = Date.now();
    const now = vi.spyOn(Date, 'now').mockImplementation(() => clock);
    const paged = new Proxy(catalog, {
      get: (c, p) =>
        p === 'listSealRecords' ? (...a: Parameters<typeof catalog.listSealRecords>) => ((clock += 1000), c.listSealRecords(...a)) : Reflect.get(c, p),
    });
    let report: Awaited<ReturnType<typeof rotateKeys>>;
    try {
      report = await rotateKeys(paged, both, 'b', { deadline: clock + 1500, batch: 500 });
      expect(report.done).toBe(false);
      expect(report.buckets.map((b) => [b.bucket, b.rewrapped, b.done])).toEqual([
        ['one', 1000, false],
        ['two', 0, false],
      ]);
    } finally {
      now.mockRestore();
    }
    let calls = 1;
    while (!report.done) {
      report = await rotateKeys(catalog, both, 'b', { deadline: Date.now() + 60_000, batch: 500 });
      calls++;
    }
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(report.buckets.reduce((n, b) => n + b.rewrapped, 0)).toBe(OBJECTS + 1);
    expect(report.buckets.every((b) => b.unopenable === 0 && b.conflicts === 0)).toBe(true);
    expect(
      backends.map((b) => b.calls.length),
      'backend calls during the rotation',
    ).toEqual(callsBefore);
    // Again: nothing left to do.
    const again = await rotateKeys(catalog, both, 'b', { deadline: Date.now() + 60_000 });
    expect(again.done).toBe(true);

    const after = store(KeyRing.fromBase64({ b: B }, 'b'));
    for (const [path, data] of objects) {
      const [bucket, k] = path.split('/') as [string, string];
      const got = await readBytes((await after.getObject(bucket, k, { conditions: {} })).body);
      expect(Buffer.from(got).equals(Buffer.from(data)), path).toBe(true);
    }
    const done = await after.completeMultipartUpload('one', 'open-upload', up.uploadId, [{ partNumber: 1, etag: info.etag }], { conditions: {} });
    expect(done.etag).toMatch(/-1"$/);
    expect(Buffer.from(await readBytes((await after.getObject('one', 'open-upload', { conditions: {} })).body)).equals(Buffer.from(part))).toBe(true);
    // The old key alone no longer opens anything.
    await expect(
      store(KeyRing.fromBase64({ a: A }, 'a'))
        .getObject('one', 'k1', { conditions: {} })
        .then((r) => readBytes(r.body)),
    ).rejects.toThrow(/not in the key ring/);
  }, 300_000);

  it('never overwrites a record changed since it was read', async () => {
    const catalog = localCatalog({ garbageGraceMs: 0 });
    const backends = [new MemoryBackend({ id: 'm0', domain: 'z0' })];
    const config = parseConfig({ backends: [{ id: 'm0', kind: 'memory', domain: 'z0' }], policies: { one: { k: 1, m: 0 } }, defaultPolicy: 'one' });
    const s = new EcStore({
      catalog,
      units: new UnitStore(backends, () => {}, { keyRing: KeyRing.fromBase64({ a: A }, 'a') }),
      settings: engineSettings(config),
    });
    await s.createBucket('b', { region: 'us-east-1' });
    await s.putObject('b', 'x', stream(new Uint8Array([1, 2, 3])), put(3));
    const [record] = await catalog.listSealRecords('b', null, 10);
    await s.putObjectTagging('b', 'x', [{ key: 't', value: 'v' }]);
    expect(await catalog.replaceSealRecords('b', [{ at: record!.at, before: record!.json, after: record!.json.replace('"kid":"a"', '"kid":"z"') }])).toBe(0);
    expect((await catalog.getManifest('b', 'x'))!.metadata.tags).toEqual([{ key: 't', value: 'v' }]);
  });
});
