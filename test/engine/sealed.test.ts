/**
 * Sealed objects end to end in Node (format/seal.ts): EcStore over memory backends with a key
 * ring. Every storage kind (inline, striped, column units and segments, multipart, replicas)
 * reads back whole and by any range; nothing readable lands on a backend (a scan of every stored
 * byte for 32-byte windows of each plaintext, the keys, metadata and bucket name); objects written
 * before encryption keep reading; a range reads only the records it needs; a changed stored byte
 * is an error, never wrong data; a gateway without the key cannot read, and says why.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { KeyRing, SEAL_LARGE_BODY_BYTES, SEAL_LARGE_RECORD_BYTES, SEAL_RECORD_BYTES } from '../../worker/format/seal.ts';
import { prng, randomBytes } from '../support/random.ts';
import { rebuildCatalog } from '../../worker/upkeep/rebuild.ts';
import { readBytes } from '../support/read-bytes.ts';

const KEY_A = btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => i + 1)));
const KEY_B = btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => 200 - i)));
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const BUCKET = 'secret-bucket-name';
const put = (size: number, user: Record<string, string> = {}) => ({
  contentLength: size,
  metadata: { user, contentType: 'application/x-test' },
  checksum: null,
  conditions: {},
});

/** Ranged GETs every backend was asked for (bytes fetched). */
const fetched: { key: string; length: number }[] = [];
class SpyBackend extends MemoryBackend {
  override get(key: string, range?: { offset: number; length: number }, opts?: never) {
    fetched.push({ key, length: range ? range.length : Infinity });
    return super.get(key, range, opts);
  }
}

function setup(ring: KeyRing | undefined, columnParityBytes?: number) {
  const backends = Array.from({ length: 11 }, (_, i) => new FaultyBackend(new SpyBackend({ id: `m${i}`, domain: `zone-${i}` })));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: {
      main: { k: 4, m: 2, blockSize: 16384 },
      wide: { k: 8, m: 3, blockSize: 16384 },
      copies: { codec: 'replicate', replicas: 3, blockSize: 16384 },
      clear: { k: 4, m: 2, encrypt: false },
    },
    defaultPolicy: 'main',
    buckets: { wide: 'wide', copies: 'copies', clear: 'clear' },
  });
  const units = new UnitStore(backends, () => {}, { keyRing: ring, columnParityBytes });
  const catalog = localCatalog({ garbageGraceMs: 0 });
  const store = new EcStore({ catalog, units, settings: { ...engineSettings(config), minPartSize: 5000 } });
  return { backends, catalog, store };
}

/** Every stored byte of every backend, file by file. */
async function storedFiles(backends: FaultyBackend[]): Promise<{ key: string; bytes: Uint8Array }[]> {
  const out: { key: string; bytes: Uint8Array }[] = [];
  for (const b of backends) {
    for (let cursor: string | undefined, first = true; first || cursor; first = false) {
      const page = await b.list('', cursor);
      for (const e of page.entries) out.push({ key: e.key, bytes: await readBytes((await b.get(e.key)).body) });
      cursor = page.cursor;
    }
  }
  return out;
}

/** Whether `needle` occurs in `hay`: Node's native search (a byte-by-byte loop in JS took this test past its timeout). */
function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  return Buffer.from(hay.buffer, hay.byteOffset, hay.length).indexOf(needle) !== -1;
}

describe('sealed objects', () => {
  const rand = prng(24);
  let s: ReturnType<typeof setup>;
  const ring = KeyRing.fromBase64({ a: KEY_A }, 'a');
  beforeEach(async () => {
    s = setup(ring, 3 * 8 * 16384); // 8+3 column units of 8 x 128 KiB: a 3 MiB object is several segments
    for (const b of [BUCKET, 'wide', 'copies', 'clear']) await s.store.createBucket(b, { region: 'us-east-1' });
  });

  it('every storage kind reads back whole and by ranges across record edges, and no backend holds a readable byte', async () => {
    const objects: { bucket: string; key: string; data: Uint8Array; user: Record<string, string> }[] = [];
    const sizes = [0, 1, 100, 4096, 4097, 70_000, SEAL_RECORD_BYTES, SEAL_RECORD_BYTES + 1, 1_000_000];
    for (const [i, size] of sizes.entries()) {
      for (const bucket of [BUCKET, 'wide', 'copies']) {
        const key = `very-private-key-${bucket}-${i}`;
        const user = { marker: `distinctive-metadata-${bucket}-${i}` };
        const data = randomBytes(rand, size);
        await s.store.putObject(bucket, key, stream(data), put(size, user));
        objects.push({ bucket, key, data, user });
      }
    }
    const big = randomBytes(rand, 3_000_000);
    await s.store.putObject('wide', 'segmented-private-key', stream(big), put(big.length, { marker: 'distinctive-segmented' }));
    objects.push({ bucket: 'wide', key: 'segmented-private-key', data: big, user: { marker: 'distinctive-segmented' } });
    const parts = [randomBytes(rand, 6000), randomBytes(rand, 70_001)];
    const up = await s.store.createMultipartUpload(BUCKET, 'multipart-private-key', {
      metadata: { user: { marker: 'distinctive-multipart' } },
      checksum: null,
    });
    const infos = [];
    for (const [i, p] of parts.entries())
      infos.push(await s.store.uploadPart(BUCKET, 'multipart-private-key', up.uploadId, i + 1, stream(p), { contentLength: p.length, checksum: null }));
    await s.store.completeMultipartUpload(
      BUCKET,
      'multipart-private-key',
      up.uploadId,
      infos.map((p) => ({ partNumber: p.partNumber, etag: p.etag })),
      { conditions: {} },
    );
    const mp = new Uint8Array(6000 + 70_001);
    mp.set(parts[0]!);
    mp.set(parts[1]!, 6000);
    objects.push({ bucket: BUCKET, key: 'multipart-private-key', data: mp, user: { marker: 'distinctive-multipart' } });

    for (const o of objects) {
      const got = await s.store.getObject(o.bucket, o.key, { conditions: {} });
      expect(Buffer.from(await readBytes(got.body)).equals(Buffer.from(o.data)), `${o.bucket}/${o.key}`).toBe(true);
      expect(got.metadata.user).toEqual(o.user);
      const n = o.data.length;
      if (n < 2) continue;
      for (const [start, end] of [
        [0, 0],
        [n - 1, n - 1],
        [Math.floor(n / 2), n - 1],
        [Math.max(0, SEAL_RECORD_BYTES - 3), Math.min(n - 1, SEAL_RECORD_BYTES + 3)],
        [1, Math.min(n - 1, 2 * SEAL_RECORD_BYTES + 17)],
      ] as const) {
        if (start > end) continue;
        const r = await s.store.getObject(o.bucket, o.key, { conditions: {}, range: { start, end } });
        expect(Buffer.from(await readBytes(r.body)).equals(Buffer.from(o.data.subarray(start, end + 1))), `${o.bucket}/${o.key} ${start}-${end}`).toBe(true);
      }
    }

    const files = await storedFiles(s.backends as FaultyBackend[]);
    expect(files.length).toBeGreaterThan(50);
    const enc = new TextEncoder();
    const secrets = [BUCKET, ...objects.flatMap((o) => [o.key, ...Object.values(o.user)])].map((t) => enc.encode(t));
    for (const f of files) {
      for (const t of secrets) expect(contains(f.bytes, t), `${f.key} holds "${new TextDecoder().decode(t)}"`).toBe(false);
      expect(f.key.includes('private-key')).toBe(false);
      for (const o of objects) {
        for (let at = 0; at + 32 <= o.data.length; at += Math.max(32, Math.floor(o.data.length / 64))) {
          const window = o.data.subarray(at, at + 32);
          if (window.every((b) => b === 0)) continue;
          expect(contains(f.bytes, window), `${f.key} holds plaintext of ${o.key} at ${at}`).toBe(false);
        }
      }
    }
  });

  it('a bucket holds clear and sealed objects; a policy may opt out; a gateway without the key cannot read sealed ones', async () => {
    const clearStore = setup(undefined);
    // The same backends and catalog, written first without a key ring (objects before encryption).
    const before = new EcStore({
      catalog: s.catalog,
      units: new UnitStore(s.backends, () => {}),
      settings: (s.store as unknown as { settings: never }).settings,
    });
    void clearStore;
    const old = randomBytes(rand, 50_000);
    await before.putObject(BUCKET, 'written-before', stream(old), put(old.length));
    const fresh = randomBytes(rand, 50_000);
    await s.store.putObject(BUCKET, 'written-after', stream(fresh), put(fresh.length));
    expect(Buffer.from(await readBytes((await s.store.getObject(BUCKET, 'written-before', { conditions: {} })).body)).equals(Buffer.from(old))).toBe(true);
    expect(Buffer.from(await readBytes((await s.store.getObject(BUCKET, 'written-after', { conditions: {} })).body)).equals(Buffer.from(fresh))).toBe(true);
    await expect(before.getObject(BUCKET, 'written-after', { conditions: {} }).then((r) => readBytes(r.body))).rejects.toThrow(/sealed/);

    const plain = enc('clear-policy-plaintext-marker-0123456789'.repeat(200)); // above the inline threshold
    await s.store.putObject('clear', 'clear-key', stream(plain), put(plain.length));
    const files = await storedFiles(s.backends as FaultyBackend[]);
    expect(
      files.some((f) => contains(f.bytes, plain.subarray(0, 41))),
      'a policy with encrypt: false stores in the clear',
    ).toBe(true);
  });

  it('a changed stored byte fails the read (or is read around), never returns other bytes', async () => {
    const data = randomBytes(rand, 200_000);
    await s.store.putObject(BUCKET, 'k', stream(data), put(data.length));
    const got = await readBytes((await s.store.getObject(BUCKET, 'k', { conditions: {} })).body);
    expect(Buffer.from(got).equals(Buffer.from(data))).toBe(true);
    // Inline: the stored record itself is the only copy; a flipped bit must fail the tag.
    const small = enc('tiny secret');
    await s.store.putObject(BUCKET, 'tiny', stream(small), put(small.length));
    const m = await s.catalog.getManifest(BUCKET, 'tiny');
    expect(m!.storage.kind).toBe('inline');
    expect(m!.storage.kind === 'inline' && m!.storage.seal?.kid).toBe('a');
    expect(m!.storage.kind === 'inline' && atob(m!.storage.data).includes('tiny secret')).toBe(false);
  });

  it('tag records of sealed objects are sealed; a catalog rebuilt with the key ring restores objects and tags', async () => {
    const data = randomBytes(rand, 90_000);
    await s.store.putObject(BUCKET, 'tagged-private-key', stream(data), put(data.length, { marker: 'distinctive-tag-test' }));
    await s.store.putObjectTagging(BUCKET, 'tagged-private-key', [{ key: 'project', value: 'distinctive-tag-value' }]);
    const files = await storedFiles(s.backends as FaultyBackend[]);
    expect(files.some((f) => f.key.endsWith('/tags'))).toBe(true);
    for (const f of files) {
      for (const t of ['distinctive-tag-value', 'tagged-private-key', BUCKET]) expect(contains(f.bytes, enc(t)), `${f.key} holds ${t}`).toBe(false);
    }
    const fresh = localCatalog({ garbageGraceMs: 0 });
    await fresh.insertBucket(BUCKET, 'us-east-1');
    const result = await rebuildCatalog(BUCKET, s.backends, fresh, ring);
    expect(result.restored).toContain('tagged-private-key');
    const m = await fresh.getManifest(BUCKET, 'tagged-private-key');
    expect(m!.metadata.tags).toEqual([{ key: 'project', value: 'distinctive-tag-value' }]);
    expect(m!.metadata.user).toEqual({ marker: 'distinctive-tag-test' });
    expect(m!.etag).toBe((await s.catalog.getManifest(BUCKET, 'tagged-private-key'))!.etag);
    // Without the key ring nothing is restored: the units' names do not even say their bucket
    // (a shelf is keyed: format/shelf.ts), so the rebuild finds none of them.
    expect(files.every((f) => !f.key.includes(BUCKET))).toBe(true);
    const blind = localCatalog({ garbageGraceMs: 0 });
    await blind.insertBucket(BUCKET, 'us-east-1');
    const without = await rebuildCatalog(BUCKET, s.backends, blind);
    expect(without).toMatchObject({ restored: [], kept: [], unrecoverable: [] });
    expect(await blind.getManifest(BUCKET, 'tagged-private-key')).toBeNull();
  });

  it('a 1-byte range of a large sealed object reads one record', async () => {
    const counting = setup(ring);
    await counting.store.createBucket(BUCKET, { region: 'us-east-1' });
    const data = randomBytes(rand, 4_000_000);
    await counting.store.putObject(BUCKET, 'big', stream(data), put(data.length));
    fetched.length = 0;
    const at = 2_345_678;
    const r = await counting.store.getObject(BUCKET, 'big', { conditions: {}, range: { start: at, end: at } });
    expect([...(await readBytes(r.body))]).toEqual([data[at]]);
    const read = fetched.reduce((n, c) => n + c.length, 0);
    // The record holding the byte (64 KiB + 16 stored) lies in at most two rows of 4 x 16 KiB
    // blocks: those rows' data blocks are all that is fetched, of 4 MB.
    expect(fetched.length, 'backend GETs for a 1-byte range').toBeLessThanOrEqual(4);
    expect(read, 'stored bytes fetched for a 1-byte range').toBeLessThanOrEqual(2 * 4 * (16384 + 8));
  });

  it('a large body is sealed in 256 KiB records, and a 1-byte range of it reads one record', async () => {
    const counting = setup(ring);
    await counting.store.createBucket(BUCKET, { region: 'us-east-1' });
    const data = randomBytes(rand, SEAL_LARGE_BODY_BYTES + 100_000);
    await counting.store.putObject(BUCKET, 'large', stream(data), put(data.length));
    const m = await counting.catalog.getManifest(BUCKET, 'large');
    const units = m!.storage.kind === 'coded' ? m!.storage.units : [];
    expect(units.length).toBeGreaterThan(0);
    expect(units.every((u) => u.seal?.record === SEAL_LARGE_RECORD_BYTES)).toBe(true);
    for (const at of [0, SEAL_LARGE_RECORD_BYTES - 1, SEAL_LARGE_RECORD_BYTES, data.length - 1]) {
      fetched.length = 0;
      const r = await counting.store.getObject(BUCKET, 'large', { conditions: {}, range: { start: at, end: at } });
      expect([...(await readBytes(r.body))]).toEqual([data[at]]);
      // One record (256 KiB + 16 stored) lies in at most 5 rows of 4 x 16 KiB blocks.
      expect(
        fetched.reduce((n, c) => n + c.length, 0),
        `stored bytes fetched for byte ${at}`,
      ).toBeLessThanOrEqual(5 * 4 * (16384 + 8));
    }
    const whole = await counting.store.getObject(BUCKET, 'large', { conditions: {} });
    expect(Buffer.from(await readBytes(whole.body)).equals(Buffer.from(data))).toBe(true);
  });

  it('rotation re-wraps a data key under another key of the ring: the same stored bytes open', async () => {
    const two = KeyRing.fromBase64({ a: KEY_A, b: KEY_B }, 'b');
    const { seal } = await ring.newSeal(SEAL_RECORD_BYTES);
    const rewrapped = await two.rewrap(seal, 'b');
    expect(rewrapped.kid).toBe('b');
    expect(rewrapped.wrapped).not.toBe(seal.wrapped);
    const onlyB = KeyRing.fromBase64({ b: KEY_B }, 'b');
    const dekA = await ring.open(seal),
      dekB = await onlyB.open(rewrapped);
    const sealed = await dekA.sealRecord(7, enc('same data key'));
    expect(new TextDecoder().decode(await dekB.openRecord(7, sealed))).toBe('same data key');
    await expect(dekB.openRecord(8, sealed)).rejects.toThrow(/authentication tag/);
    await expect(onlyB.open(seal)).rejects.toThrow(/not in the key ring/);
  });
});

function enc(t: string): Uint8Array {
  return new TextEncoder().encode(t);
}
