/**
 * Small writes in two rounds (issue 23), on EcStore over the SQL catalog in process and memory backends:
 * - catalog calls are counted (round trips to the catalog's Durable Object instances): a coded PUT makes two,
 *   prepareWrite and commitManifest; an inline PUT one, commitManifest;
 * - the shards upload while prepareWrite is in flight (one round, not two in series), yet no
 *   backend stores a shard before the reservation has answered: each shard's last bytes wait;
 * - a refused prepareWrite (If-None-Match: * on an existing key) is the PUT's error and leaves
 *   no shard and no reservation behind;
 * - UploadPart likewise: preparePart (the upload looked up, the ids reserved) beside the uploads,
 *   then putPart: two calls, or three when the part names no checksum and this isolate has not
 *   seen the upload (its spec is looked up first); a part for no upload, or with a checksum the
 *   upload does not use, leaves no shard and no reservation;
 * - CopyObject and UploadPartCopy: the source's version (getVersion: current or named), then the destination's prepare beside
 *   the copy, then the commit: three calls in three rounds (the source must be known before its
 *   bytes can be read); a copy refused by the destination's conditions leaves nothing.
 */
import { describe, expect, it } from 'vitest';
import { FaultyBackend, MemoryBackend } from '../../backends/index.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { prng, randomBytes } from '../support/random.ts';
import { readBytes } from '../support/read-bytes.ts';

const put = (size: number, conditions = {}) => ({ contentLength: size, metadata: { user: {} }, checksum: null, conditions });
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });

/** Round trips to the catalog's Durable Object instances by method name, from now on (as the bench counts them). */
function counted(catalog: ReturnType<typeof localCatalog>): Map<string, number> {
  catalog.namespace.calls.clear();
  return catalog.namespace.calls;
}

async function setup(policy: object) {
  const backends = Array.from({ length: 11 }, (_, i) => new FaultyBackend(new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` })));
  const config = parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { main: policy },
    defaultPolicy: 'main',
  });
  const catalog = localCatalog({ garbageGraceMs: 0 });
  const settings = { ...engineSettings(config), minPartSize: 1 };
  const store = new EcStore({ catalog, units: new UnitStore(backends), settings });
  await store.createBucket('b', { region: 'us-east-1' });
  return { backends, catalog, store, settings, calls: counted(catalog) };
}

/** Blobs stored on the backends (whole PUTs), by key. */
async function stored(backends: FaultyBackend[]): Promise<string[]> {
  const keys: string[] = [];
  for (const b of backends) keys.push(...(await b.inner.list('')).entries.map((e) => e.key));
  return keys;
}

describe('small writes: catalog calls and rounds', () => {
  const rand = prng(2323);

  it.each([
    ['4+2', { k: 4, m: 2, blockSize: 4096 }],
    ['8+3', { k: 8, m: 3, blockSize: 4096 }],
    ['replicate-3 small', { k: 8, m: 3, blockSize: 4096, small: { threshold: 128 * 1024, mode: 'replicate', replicas: 3 } }],
  ])('a coded %s PUT makes 2 catalog calls; an inline one 1', async (_name, policy) => {
    const s = await setup(policy);
    const data = randomBytes(rand, 64 * 1024);
    await s.store.putObject('b', 'k', stream(data), put(data.length));
    expect(Object.fromEntries(s.calls)).toEqual({ prepareWrite: 1, commitManifest: 1 });
    expect(Buffer.compare(await readBytes((await s.store.getObject('b', 'k', { conditions: {} })).body), data)).toBe(0);

    const inline = await setup({ ...policy, small: { threshold: 4096, mode: 'inline' } });
    await inline.store.putObject('b', 'tiny', stream(data.subarray(0, 100)), put(100));
    expect(Object.fromEntries(inline.calls)).toEqual({ commitManifest: 1 });
    expect(await stored(inline.backends)).toEqual([]);
  });

  it('shards upload while prepareWrite is in flight, and none is stored before it answers', async () => {
    const s = await setup({ k: 4, m: 2, blockSize: 4096 });
    let answer!: () => void;
    const asked = new Promise<void>((resolve) => {
      const prepare = s.catalog.prepareWrite.bind(s.catalog);
      s.catalog.prepareWrite = async (...args) => {
        resolve();
        await new Promise<void>((r) => (answer = r));
        return prepare(...args);
      };
    });
    const data = randomBytes(rand, 50_000);
    const putting = s.store.putObject('b', 'k', stream(data), put(data.length));
    await asked;
    // Wait until all six uploads have been started by the writer (bounded: a few macrotasks).
    for (let i = 0; i < 50 && s.backends.filter((b) => b.calls.some((c) => c.op === 'put')).length < 6; i++) await new Promise((r) => setTimeout(r, 0));
    expect(s.backends.filter((b) => b.calls.some((c) => c.op === 'put')).length, 'the uploads run beside the reservation').toBe(6);
    expect(await stored(s.backends), 'no shard is stored before its unit is reserved').toEqual([]);
    answer();
    await putting;
    expect((await stored(s.backends)).length).toBe(6);
  });

  it("a refused prepareWrite is the PUT's error and leaves no shard and no reservation", async () => {
    const s = await setup({ k: 4, m: 2, blockSize: 4096 });
    const data = randomBytes(rand, 20_000);
    await s.store.putObject('b', 'k', stream(data), put(data.length));
    const before = await stored(s.backends);
    await expect(s.store.putObject('b', 'k', stream(data), put(data.length, { ifNoneMatch: '*' }))).rejects.toMatchObject({ code: 'PreconditionFailed' });
    expect((await stored(s.backends)).sort()).toEqual(before.sort());
    expect((await s.catalog.bucketHealth('b', new Date())).reservations.held, 'a refused write reserves nothing').toBe(0);
    expect(Buffer.compare(await readBytes((await s.store.getObject('b', 'k', { conditions: {} })).body), data)).toBe(0);
  });

  /** Runs `fn` with `method` of the catalog held until `release` is called; resolves when it is asked. */
  function hold(catalog: ReturnType<typeof localCatalog>, method: 'preparePart' | 'prepareWrite') {
    let answer!: () => void;
    const asked = new Promise<void>((resolve) => {
      const real = (catalog[method] as (...a: unknown[]) => Promise<unknown>).bind(catalog);
      (catalog as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
        resolve();
        await new Promise<void>((r) => (answer = r));
        return real(...args);
      };
    });
    return { asked, release: () => answer() };
  }

  async function uploadsStarted(backends: FaultyBackend[], n: number): Promise<number> {
    for (let i = 0; i < 50 && backends.filter((b) => b.calls.some((c) => c.op === 'put')).length < n; i++) await new Promise((r) => setTimeout(r, 0));
    return backends.filter((b) => b.calls.some((c) => c.op === 'put')).length;
  }

  const part = (size: number, checksum: { algorithm: 'CRC32' | 'SHA256'; expected: null } | null = null) => ({ contentLength: size, checksum });

  it.each([
    ['4+2', { k: 4, m: 2, blockSize: 4096 }],
    ['8+3', { k: 8, m: 3, blockSize: 4096 }],
  ])('a %s UploadPart makes 2 catalog calls (preparePart, putPart); 3 when its checksum must be looked up first', async (_name, policy) => {
    const s = await setup(policy);
    const data = randomBytes(rand, 64 * 1024);
    const { uploadId } = await s.store.createMultipartUpload('b', 'k', { metadata: { user: {} }, checksum: { algorithm: 'CRC32', type: 'COMPOSITE' } });
    s.calls.clear();
    const p1 = await s.store.uploadPart('b', 'k', uploadId, 1, stream(data), part(data.length));
    expect(Object.fromEntries(s.calls), 'spec known to this isolate (it created the upload)').toEqual({ preparePart: 1, putPart: 1 });
    expect(p1.checksum?.algorithm, "the upload's algorithm, computed while streaming").toBe('CRC32');
    // Another isolate (a fresh EcStore over the same catalog and backends).
    const isolate = () => new EcStore({ catalog: s.catalog, units: new UnitStore(s.backends), settings: s.settings });
    const other = isolate();
    s.calls.clear();
    await other.uploadPart('b', 'k', uploadId, 2, stream(data), part(data.length, { algorithm: 'CRC32', expected: null }));
    expect(Object.fromEntries(s.calls), 'the part names its checksum').toEqual({ preparePart: 1, putPart: 1 });
    const third = isolate();
    s.calls.clear();
    const p3 = await third.uploadPart('b', 'k', uploadId, 3, stream(data), part(data.length));
    expect(Object.fromEntries(s.calls), 'no checksum, upload unseen: its spec first').toEqual({ getUpload: 1, preparePart: 1, putPart: 1 });
    expect(p3.checksum?.algorithm).toBe('CRC32');
    await s.store.completeMultipartUpload(
      'b',
      'k',
      uploadId,
      [1, 2, 3].map((n) => ({ partNumber: n, etag: n === 1 ? p1.etag : p3.etag })),
      { conditions: {} },
    );
    const whole = Buffer.concat([data, data, data]);
    expect(Buffer.compare(await readBytes((await s.store.getObject('b', 'k', { conditions: {} })).body), whole)).toBe(0);
  });

  it('part shards upload while preparePart is in flight, and none is stored before it answers', async () => {
    const s = await setup({ k: 4, m: 2, blockSize: 4096 });
    const { uploadId } = await s.store.createMultipartUpload('b', 'k', { metadata: { user: {} }, checksum: null });
    const held = hold(s.catalog, 'preparePart');
    const data = randomBytes(rand, 50_000);
    const putting = s.store.uploadPart('b', 'k', uploadId, 1, stream(data), part(data.length));
    await held.asked;
    expect(await uploadsStarted(s.backends, 6), 'the uploads run beside the reservation').toBe(6);
    expect(await stored(s.backends), 'no shard is stored before its unit is reserved').toEqual([]);
    held.release();
    await putting;
    expect((await stored(s.backends)).length).toBe(6);
  });

  it('a part for no upload, or with a checksum its upload does not use, is refused and leaves no shard and no reservation', async () => {
    const s = await setup({ k: 4, m: 2, blockSize: 4096 });
    const { uploadId } = await s.store.createMultipartUpload('b', 'k', { metadata: { user: {} }, checksum: { algorithm: 'SHA256', type: 'COMPOSITE' } });
    const data = randomBytes(rand, 20_000);
    await expect(
      s.store.uploadPart('b', 'k', 'no-such-upload', 1, stream(data), part(data.length, { algorithm: 'CRC32', expected: null })),
    ).rejects.toMatchObject({ code: 'NoSuchUpload' });
    await expect(s.store.uploadPart('b', 'k', uploadId, 1, stream(data), part(data.length, { algorithm: 'CRC32', expected: null }))).rejects.toMatchObject({
      code: 'InvalidRequest',
    });
    expect(await stored(s.backends)).toEqual([]);
    expect((await s.catalog.bucketHealth('b', new Date())).reservations.held, 'nothing stays reserved').toBe(0);
  });

  it('CopyObject and UploadPartCopy: the source, then prepare beside the copy, then the commit (3 catalog calls)', async () => {
    const s = await setup({ k: 8, m: 3, blockSize: 4096 });
    const data = randomBytes(rand, 64 * 1024);
    await s.store.putObject('b', 'src', stream(data), put(data.length));
    s.calls.clear();
    const copyOptions = { metadataDirective: 'COPY' as const, tagging: 'COPY' as const, conditions: {} };
    await s.store.copyObject({ bucket: 'b', key: 'src', conditions: {} }, 'b', 'dst', copyOptions as never);
    expect(Object.fromEntries(s.calls)).toEqual({ getVersion: 1, prepareWrite: 1, commitManifest: 1 });
    expect(Buffer.compare(await readBytes((await s.store.getObject('b', 'dst', { conditions: {} })).body), data)).toBe(0);

    const { uploadId } = await s.store.createMultipartUpload('b', 'mp', { metadata: { user: {} }, checksum: null });
    s.calls.clear();
    await s.store.uploadPartCopy({ bucket: 'b', key: 'src', conditions: {} }, 'b', 'mp', uploadId, 1);
    expect(Object.fromEntries(s.calls)).toEqual({ getVersion: 1, preparePart: 1, putPart: 1 });

    // The copy's shards upload while prepareWrite is in flight; a refusal leaves nothing.
    const before = await stored(s.backends);
    const held = hold(s.catalog, 'prepareWrite');
    s.backends.forEach((b) => b.calls.splice(0));
    const refused = s.store.copyObject({ bucket: 'b', key: 'src', conditions: {} }, 'b', 'dst', { ...copyOptions, conditions: { ifNoneMatch: '*' } } as never);
    refused.catch(() => {});
    await held.asked;
    expect(await uploadsStarted(s.backends, 6), 'the copy uploads beside its prepareWrite (6 open at once)').toBe(6);
    held.release();
    await expect(refused).rejects.toMatchObject({ code: 'PreconditionFailed' });
    expect((await stored(s.backends)).sort()).toEqual(before.sort());
    expect((await s.catalog.bucketHealth('b', new Date())).reservations.held, 'nothing reserved is left').toBe(0);
  });
  it('under a lifecycle rule, PutObject, CopyObject and CompleteMultipartUpload answer x-amz-expiration from their commit: no call more', async () => {
    const s = await setup({ k: 4, m: 2, blockSize: 4096 });
    await s.store.config.putBucketLifecycle('b', [{ id: 'tmp-1', status: 'Enabled', filter: { prefix: 'tmp/' }, expiration: { days: 1 } }]);
    const data = randomBytes(rand, 64 * 1024);
    const nextMidnight = (t: Date) => Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate() + 2); // 1 day, rounded up to midnight UTC
    s.calls.clear();
    const put1 = await s.store.putObject('b', 'tmp/a', stream(data), put(data.length));
    expect(Object.fromEntries(s.calls)).toEqual({ prepareWrite: 1, commitManifest: 1 });
    expect(put1.expiration).toEqual({ date: nextMidnight(put1.lastModified), ruleId: 'tmp-1' });
    expect((await s.store.putObject('b', 'keep/a', stream(data), put(data.length))).expiration, 'outside the rule').toBeUndefined();

    s.calls.clear();
    const copyOptions = { metadataDirective: 'COPY' as const, tagging: 'COPY' as const, conditions: {} };
    const copied = await s.store.copyObject({ bucket: 'b', key: 'keep/a', conditions: {} }, 'b', 'tmp/copy', copyOptions as never);
    expect(Object.fromEntries(s.calls)).toEqual({ getVersion: 1, prepareWrite: 1, commitManifest: 1 });
    expect(copied.expiration).toEqual({ date: nextMidnight(copied.lastModified), ruleId: 'tmp-1' });

    const { uploadId } = await s.store.createMultipartUpload('b', 'tmp/mp', { metadata: { user: {} }, checksum: null });
    const p1 = await s.store.uploadPart('b', 'tmp/mp', uploadId, 1, stream(data), { contentLength: data.length, checksum: null });
    const complete = () => s.store.completeMultipartUpload('b', 'tmp/mp', uploadId, [{ partNumber: 1, etag: p1.etag }], { conditions: {} });
    const done = await complete();
    expect(done.expiration).toEqual({ date: nextMidnight(done.lastModified), ruleId: 'tmp-1' });
    expect((await complete()).expiration, 'a repeated Complete answers the first result').toEqual(done.expiration);
  });
});
