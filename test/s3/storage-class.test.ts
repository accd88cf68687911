/**
 * Storage classes are storage policies (issue 44), through the app in Node (app.request(), no
 * workerd) over the product's EcStore and catalog on twelve memory backends: STANDARD is the
 * bucket's policy (4+2), STANDARD_IA and GLACIER name an 8+3 policy. x-amz-storage-class on
 * PutObject, CopyObject and CreateMultipartUpload picks the policy of the version (its units
 * are coded so); GET/HEAD answer the class (none for STANDARD), listings, ListObjectVersions,
 * ListParts, ListMultipartUploads and GetObjectAttributes report it; an unknown class is
 * InvalidStorageClass and stores nothing; a copy onto itself with a class rewrites it under that
 * class's policy; RestoreObject answers InvalidObjectState, as S3 does for an object that needs none.
 */
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../backends/memory.ts';
import { createApp } from '../../worker/app/app.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { allowAllGate } from '../support/allow-all-gate.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { testS3Settings } from '../support/memory-store.ts';
import { DEV_KEY_RING } from '../support/dev-encryption.ts';
import { prng, randomBytes as fill } from '../support/random.ts';

const randomBytes = (n: number, seed: number) => fill(prng(seed), n);

const BASE = 'http://gw.test';

function classConfig(backends: { id: string; domain: string }[]) {
  return parseConfig({
    backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
    policies: { hot: { k: 4, m: 2, blockSize: 4096 }, cold: { k: 8, m: 3, blockSize: 4096 } },
    defaultPolicy: 'hot',
    storageClasses: { STANDARD_IA: 'cold', GLACIER: 'cold' },
  });
}

function setup() {
  const backends = Array.from({ length: 12 }, (_, i) => new MemoryBackend({ id: `m${i}`, domain: `zone-${i}` }));
  const catalog = localCatalog();
  const store = new EcStore({
    catalog,
    units: new UnitStore(backends, undefined, { keyRing: DEV_KEY_RING }),
    settings: { ...engineSettings(classConfig(backends)), minPartSize: 5000 },
  });
  const app = createApp({ store, config: store.config, authenticate: allowAllGate, settings: testS3Settings({ maxObjectSize: 1 << 20 }) });
  const send = (method: string, path: string, init: RequestInit = {}) => app.request(`${BASE}${path}`, { method, ...init });
  /** The k+m of each unit of the current version. */
  const geometry = async (key: string) => {
    const m = await catalog.getManifest('bkt', key);
    return m!.storage.kind === 'coded' ? [...new Set(m!.storage.units.map((u) => `${u.k}+${u.m}`))] : ['inline'];
  };
  return { send, geometry, catalog };
}

const put = (body: Uint8Array, cls?: string): RequestInit => ({
  body,
  headers: { 'content-length': String(body.length), ...(cls ? { 'x-amz-storage-class': cls } : {}) },
});

describe('storage classes', () => {
  it("PutObject stores the version under its class's policy; GET and HEAD answer the class, none for STANDARD", async () => {
    const { send, geometry } = setup();
    expect((await send('PUT', '/bkt')).status).toBe(200);
    const bytes = randomBytes(20_000, 1);
    expect((await send('PUT', '/bkt/cold', put(bytes, 'STANDARD_IA'))).status).toBe(200);
    expect((await send('PUT', '/bkt/hot', put(bytes))).status).toBe(200);
    expect((await send('PUT', '/bkt/std', put(bytes, 'STANDARD'))).status).toBe(200);
    expect(await geometry('cold')).toEqual(['8+3']);
    expect(await geometry('hot')).toEqual(['4+2']);
    expect(await geometry('std')).toEqual(['4+2']);
    const head = await send('HEAD', '/bkt/cold');
    expect(head.headers.get('x-amz-storage-class')).toBe('STANDARD_IA');
    const get = await send('GET', '/bkt/cold');
    expect(get.headers.get('x-amz-storage-class')).toBe('STANDARD_IA');
    expect(new Uint8Array(await get.arrayBuffer())).toEqual(bytes);
    expect((await send('HEAD', '/bkt/hot')).headers.has('x-amz-storage-class')).toBe(false);
    expect((await send('HEAD', '/bkt/std')).headers.has('x-amz-storage-class')).toBe(false);
  });

  it('an unknown class is 400 InvalidStorageClass and stores nothing', async () => {
    const { send } = setup();
    await send('PUT', '/bkt');
    for (const cls of ['DEEP_ARCHIVE', 'BOGUS', 'standard_ia']) {
      const r = await send('PUT', '/bkt/k', put(randomBytes(10_000, 2), cls));
      expect(r.status).toBe(400);
      expect(await r.text()).toContain('<Code>InvalidStorageClass</Code>');
    }
    expect((await send('HEAD', '/bkt/k')).status).toBe(404);
    const mp = await send('POST', '/bkt/k?uploads', { headers: { 'x-amz-storage-class': 'BOGUS' } });
    expect(mp.status).toBe(400);
    expect(await mp.text()).toContain('InvalidStorageClass');
  });

  it("listings, ListObjectVersions and GetObjectAttributes report each version's class", async () => {
    const { send } = setup();
    await send('PUT', '/bkt');
    await send('PUT', '/bkt/a', put(randomBytes(100, 3), 'GLACIER'));
    await send('PUT', '/bkt/z', put(randomBytes(100, 4)));
    const v1 = await (await send('GET', '/bkt?list-type=2')).text();
    expect(v1).toMatch(/<Key>a<\/Key>.*<StorageClass>GLACIER<\/StorageClass>.*<Key>z<\/Key>.*<StorageClass>STANDARD<\/StorageClass>/s);
    const v0 = await (await send('GET', '/bkt')).text();
    expect(v0).toMatch(/<Key>a<\/Key>.*<StorageClass>GLACIER<\/StorageClass>/s);
    const versions = await (await send('GET', '/bkt?versions')).text();
    expect(versions).toMatch(/<Key>a<\/Key>.*<StorageClass>GLACIER<\/StorageClass>.*<Key>z<\/Key>.*<StorageClass>STANDARD<\/StorageClass>/s);
    const attrs = await (await send('GET', '/bkt/a?attributes', { headers: { 'x-amz-object-attributes': 'StorageClass,ObjectSize' } })).text();
    expect(attrs).toContain('<StorageClass>GLACIER</StorageClass>');
  });

  it("a multipart upload's class: its parts are stored under it, ListParts and ListMultipartUploads report it, the object has it", async () => {
    const { send, geometry } = setup();
    await send('PUT', '/bkt');
    const created = await (await send('POST', '/bkt/mp?uploads', { headers: { 'x-amz-storage-class': 'STANDARD_IA' } })).text();
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created)![1]!;
    const parts = [randomBytes(6000, 5), randomBytes(5000, 6)];
    const etags: string[] = [];
    for (const [i, p] of parts.entries()) etags.push((await send('PUT', `/bkt/mp?partNumber=${i + 1}&uploadId=${uploadId}`, put(p))).headers.get('etag')!);
    expect(await (await send('GET', '/bkt?uploads')).text()).toContain('<StorageClass>STANDARD_IA</StorageClass>');
    expect(await (await send('GET', `/bkt/mp?uploadId=${uploadId}`)).text()).toContain('<StorageClass>STANDARD_IA</StorageClass>');
    const xml = `<CompleteMultipartUpload>${etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join('')}</CompleteMultipartUpload>`;
    expect((await send('POST', `/bkt/mp?uploadId=${uploadId}`, { body: xml })).status).toBe(200);
    expect(await geometry('mp')).toEqual(['8+3']);
    const get = await send('GET', '/bkt/mp');
    expect(get.headers.get('x-amz-storage-class')).toBe('STANDARD_IA');
    expect(new Uint8Array(await get.arrayBuffer())).toEqual(new Uint8Array([...parts[0]!, ...parts[1]!]));
  });

  it("CopyObject: the copy takes the request's class (STANDARD without one); onto itself with a class it is rewritten under that class's policy", async () => {
    const { send, geometry } = setup();
    await send('PUT', '/bkt');
    const bytes = randomBytes(30_000, 7);
    await send('PUT', '/bkt/k', put(bytes, 'GLACIER'));
    expect((await send('PUT', '/bkt/copy', { headers: { 'x-amz-copy-source': '/bkt/k' } })).status).toBe(200);
    expect(await geometry('copy')).toEqual(['4+2']);
    expect((await send('HEAD', '/bkt/copy')).headers.has('x-amz-storage-class')).toBe(false);
    // Onto itself without a change: refused, as S3 does.
    const same = await send('PUT', '/bkt/copy', { headers: { 'x-amz-copy-source': '/bkt/copy' } });
    expect(same.status).toBe(400);
    // Onto itself with a class: rewritten under the class's policy, byte-identical.
    expect((await send('PUT', '/bkt/copy', { headers: { 'x-amz-copy-source': '/bkt/copy', 'x-amz-storage-class': 'STANDARD_IA' } })).status).toBe(200);
    expect(await geometry('copy')).toEqual(['8+3']);
    const get = await send('GET', '/bkt/copy');
    expect(get.headers.get('x-amz-storage-class')).toBe('STANDARD_IA');
    expect(new Uint8Array(await get.arrayBuffer())).toEqual(bytes);
    // And back to STANDARD.
    expect((await send('PUT', '/bkt/copy', { headers: { 'x-amz-copy-source': '/bkt/copy', 'x-amz-storage-class': 'STANDARD' } })).status).toBe(200);
    expect(await geometry('copy')).toEqual(['4+2']);
    const bad = await send('PUT', '/bkt/copy', { headers: { 'x-amz-copy-source': '/bkt/copy', 'x-amz-storage-class': 'BOGUS' } });
    expect(await bad.text()).toContain('InvalidStorageClass');
  });

  it('RestoreObject answers 403 InvalidObjectState for every class (none is archived); NoSuchKey first', async () => {
    const { send } = setup();
    await send('PUT', '/bkt');
    await send('PUT', '/bkt/g', put(randomBytes(100, 8), 'GLACIER'));
    const body = '<RestoreRequest><Days>1</Days></RestoreRequest>';
    const r = await send('POST', '/bkt/g?restore', { body });
    expect(r.status).toBe(403);
    const text = await r.text();
    expect(text).toContain('<Code>InvalidObjectState</Code>');
    expect(text).toContain('<StorageClass>GLACIER</StorageClass>');
    expect((await send('POST', '/bkt/missing?restore', { body })).status).toBe(404);
  });
});
