/**
 * The app's contracts, checked in Node through app.request() (no workerd): HEAD never opens
 * object data, handlers read only the body the gate returns, EntityTooLarge comes before a byte
 * is read, unknown errors become InternalError. The store is the product's EcStore over memory
 * parts; the gate is a test slot that lets every request through.
 */
import { describe, expect, it } from 'vitest';
import { createApp } from '../../worker/app/app.ts';
import type { Authenticate } from '../../worker/s3/context.ts';
import type { ObjectStore } from '../../worker/model/object-store.ts';
import { allowAllGate } from '../support/allow-all-gate.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { memoryEcStore, testS3Settings } from '../support/memory-store.ts';
import type { BucketConfigStore } from '../../worker/model/bucket-config-store.ts';

const BASE = 'http://gw.test';

function setup(options: { store?: ObjectStore; authenticate?: Authenticate; maxObjectSize?: number } = {}) {
  const store = options.store ?? memoryEcStore(localCatalog()).store;
  const app = createApp({
    store,
    // The engine's (a store made by Object.create over one has it from its prototype).
    config: (store as unknown as { config: BucketConfigStore }).config,
    authenticate: options.authenticate ?? allowAllGate,
    settings: testS3Settings({ maxObjectSize: options.maxObjectSize ?? 1024 }),
  });
  const send = (method: string, path: string, init: RequestInit = {}) => app.request(`${BASE}${path}`, { method, ...init });
  return { app, store, send };
}

/** A body that records whether anyone pulled from it, and never ends. */
function watchedBody() {
  const state = { pulls: 0 };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      state.pulls++;
      controller.enqueue(new Uint8Array(64));
    },
  });
  return { body, state };
}

describe('app contracts', () => {
  it('HeadObject answers from metadata and never opens object data', async () => {
    const store: ObjectStore = Object.assign(Object.create(memoryEcStore(localCatalog()).store) as ObjectStore, {
      getObject: () => Promise.reject(new Error('HEAD must not call getObject')),
    });
    const { send } = setup({ store });
    expect((await send('PUT', '/bucket-a')).status).toBe(200);
    expect((await send('PUT', '/bucket-a/k', { body: 'hello', headers: { 'content-length': '5' } })).status).toBe(200);
    const head = await send('HEAD', '/bucket-a/k');
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('5');
    expect(head.headers.get('etag')).toBe('"5d41402abc4b2a76b9719d911017c592"');
    expect(await head.text()).toBe('');
    expect((await send('GET', '/bucket-a/k')).status).toBe(500); // GET does use getObject
  });

  it('handlers consume the body returned by authenticate, never the raw request body', async () => {
    const authenticate: Authenticate = async (request, view) =>
      request.url.endsWith('/k') ? { body: new Response('decoded payload').body, decodedContentLength: 15 } : allowAllGate(request, view);
    const { send } = setup({ authenticate });
    await send('PUT', '/bucket-b');
    expect((await send('PUT', '/bucket-b/k', { body: 'raw framing bytes' })).status).toBe(200);
    expect(await (await send('GET', '/bucket-b/k')).text()).toBe('decoded payload');
  });

  it('a declared length above the maximum is EntityTooLarge before any byte is read', async () => {
    const { send } = setup({ maxObjectSize: 1024 });
    await send('PUT', '/bucket-c');
    const { body, state } = watchedBody();
    const authenticate: Authenticate = async () => ({ body, decodedContentLength: 5000 });
    const app = createApp({
      store: memoryEcStore(localCatalog()).store,
      config: memoryEcStore(localCatalog()).store.config,
      authenticate,
      settings: testS3Settings({ maxObjectSize: 1024, errorDrainBytes: 0 }),
    });
    const res = await app.request(`${BASE}/bucket-c/big`, { method: 'PUT' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain(
      '<Code>EntityTooLarge</Code><Message>Your proposed upload exceeds the maximum allowed object size.</Message><ProposedSize>5000</ProposedSize><MaxSizeAllowed>1024</MaxSizeAllowed>',
    );
    expect(state.pulls).toBeLessThanOrEqual(1); // at most the stream's own initial pull: nothing consumed
  });

  it('a body longer than its declared length is refused and stores nothing', async () => {
    const { body } = watchedBody();
    const { store, catalog } = memoryEcStore(localCatalog());
    await store.createBucket('bucket-d', { region: 'us-east-1' });
    const authenticate: Authenticate = async () => ({ body, decodedContentLength: 1000 }); // lies: the body is endless
    const app = createApp({ store, config: store.config, authenticate, settings: testS3Settings({ maxObjectSize: 1024, errorDrainBytes: 0 }) });
    const res = await app.request(`${BASE}/bucket-d/k`, { method: 'PUT' });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/<Code>(IncompleteBody|EntityTooLarge)<\/Code>/);
    expect((await catalog.listManifests('bucket-d', { prefix: '', delimiter: null, startAfter: null, maxKeys: 10 })).objects).toEqual([]);
  });

  it('an unknown error becomes InternalError with AWS XML; HEAD gets no body', async () => {
    const broken = Object.assign(Object.create(memoryEcStore(localCatalog()).store) as ObjectStore, {
      listBuckets: () => Promise.reject(new TypeError('boom')),
      headObject: () => Promise.reject(new TypeError('boom')),
    });
    const { send } = setup({ store: broken });
    const res = await send('GET', '/');
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).toMatch(
      /^<\?xml version="1.0" encoding="UTF-8"\?>\n<Error><Code>InternalError<\/Code><Message>We encountered an internal error. Please try again.<\/Message><Resource>\/<\/Resource><RequestId>[0-9A-F]{16}<\/RequestId><\/Error>$/,
    );
    expect(text).not.toContain('boom');
    const head = await send('HEAD', '/some-bucket/k');
    expect(head.status).toBe(500);
    expect(await head.text()).toBe('');
  });

  it('the allow-all test gate refuses aws-chunked bodies instead of storing the framing', async () => {
    const { send, store } = setup();
    await send('PUT', '/bucket-e');
    const res = await send('PUT', '/bucket-e/k', {
      body: '3\r\nabc\r\n0\r\n\r\n',
      headers: { 'content-encoding': 'aws-chunked', 'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER', 'x-amz-decoded-content-length': '3' },
    });
    expect(res.status).toBe(501);
    await expect(store.headObject('bucket-e', 'k', { conditions: {} })).rejects.toMatchObject({ code: 'NoSuchKey' });
  });
});

describe('smaller S3 behaviours', () => {
  it('re-creating one own bucket: 200 in us-east-1, 409 BucketAlreadyOwnedByYou in any other region', async () => {
    const east = setup();
    expect((await east.send('PUT', '/again')).status).toBe(200);
    expect((await east.send('PUT', '/again')).status).toBe(200);
    const { store } = memoryEcStore(localCatalog());
    const app = createApp({ store, config: store.config, authenticate: allowAllGate, settings: testS3Settings({ region: 'eu-west-1' }) });
    const body = '<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>';
    expect((await app.request(`${BASE}/again`, { method: 'PUT', body })).status).toBe(200);
    const twice = await app.request(`${BASE}/again`, { method: 'PUT', body });
    expect(twice.status).toBe(409);
    expect(await twice.text()).toContain('<Code>BucketAlreadyOwnedByYou</Code>');
  });

  it('user metadata sent as UTF-8 bytes is stored as text and returned RFC 2047 encoded; ASCII as it is', async () => {
    const { send, store } = setup();
    await send('PUT', '/meta');
    const utf8AsBytes = (s: string) => String.fromCharCode(...new TextEncoder().encode(s)); // how the platform hands header bytes over
    const put = await send('PUT', '/meta/k', {
      body: 'x',
      headers: { 'content-length': '1', 'x-amz-meta-city': utf8AsBytes('Zürich €'), 'x-amz-meta-plain': 'ascii ok', 'x-amz-meta-latin1': '\u00ff\u00fe' },
    });
    expect(put.status).toBe(200);
    expect((await store.headObject('meta', 'k', { conditions: {} })).metadata.user).toEqual({ city: 'Zürich €', plain: 'ascii ok', latin1: '\u00ff\u00fe' });
    const head = await send('HEAD', '/meta/k');
    expect(head.headers.get('x-amz-meta-city')).toBe(`=?UTF-8?B?${Buffer.from('Zürich €').toString('base64')}?=`);
    expect(head.headers.get('x-amz-meta-plain')).toBe('ascii ok');
    expect(head.headers.get('x-amz-meta-latin1')).toBe(`=?UTF-8?B?${Buffer.from('\u00ff\u00fe').toString('base64')}?=`);
  });

  it('a PUT with neither Content-Length nor aws-chunked framing is 411 MissingContentLength', async () => {
    const { send } = setup();
    await send('PUT', '/nolength');
    const body = new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode('abc')), c.close()) });
    const res = await send('PUT', '/nolength/k', { body, duplex: 'half' } as RequestInit);
    expect(res.status).toBe(411);
    expect(await res.text()).toContain('<Code>MissingContentLength</Code>');
  });

  it("RGW's allow-unordered=true: the (ordered) listing, pages by marker and start-after; with a delimiter 400 InvalidArgument", async () => {
    const { send } = setup();
    await send('PUT', '/unordered');
    for (const key of ['a', 'b/1', 'b/2', 'c']) await send('PUT', `/unordered/${key}`, { body: 'x', headers: { 'content-length': '1' } });
    const keys = async (query: string) =>
      [...(await (await send('GET', `/unordered?allow-unordered=true&${query}`)).text()).matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]);
    expect(await keys('max-keys=2')).toEqual(['a', 'b/1']);
    expect(await keys('marker=b/1')).toEqual(['b/2', 'c']);
    expect(await keys('list-type=2&start-after=b/1&prefix=b/')).toEqual(['b/2']);
    for (const query of ['delimiter=/', 'list-type=2&delimiter=/']) {
      const res = await send('GET', `/unordered?allow-unordered=true&${query}`);
      expect(res.status).toBe(400);
      expect(await res.text()).toContain('<Code>InvalidArgument</Code>');
    }
    expect((await send('GET', '/unordered?allow-unordered=false&delimiter=/')).status).toBe(200);
  });
});
