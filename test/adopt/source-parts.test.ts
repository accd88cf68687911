/**
 * Issue 41, source part boundaries: GET and HEAD with `partNumber` and GetObjectAttributes
 * ObjectParts of a multipart object not yet adopted answer as the source does, and once adopted
 * the object keeps the source's part layout (ec-store: metadata.sourceParts), served from the
 * shards. s3rver 3.7.1 ignores `partNumber`, so the source here is s3rver behind a front that
 * answers parts as S3 does (a 206 of the part's bytes with x-amz-mp-parts-count), from the part
 * sizes the upload used; a source that ignores parts (plain s3rver) leaves the adopted object whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { AwsClient } from 'aws4fetch';
import { putSourceMultipart, startAdoptionHarness, type AdoptionHarness } from './harness.ts';

let h: AdoptionHarness;
const PART = 64 * 1024;
/** Key -> its part sizes, as the multipart upload made them. */
const layouts = new Map<string, number[]>();
const signer = new AwsClient({ accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', service: 's3', region: 'us-east-1', retries: 0 });
let partAnswers = 0;

/** s3rver with S3's partNumber: the part's bytes (206) or head, with the parts count. */
async function partsFront(req: Request): Promise<Response> {
  const url = new URL(req.url);
  const n = Number(url.searchParams.get('partNumber'));
  if (!n || (req.method !== 'GET' && req.method !== 'HEAD')) return fetch(req);
  partAnswers++;
  const key = decodeURIComponent(url.pathname.split('/').slice(2).join('/'));
  const sizes = layouts.get(key);
  url.searchParams.delete('partNumber');
  if (!sizes) return fetch(await signer.sign(url.toString(), { method: req.method, headers: stripped(req.headers) }));
  if (n > sizes.length) return new Response('<Error><Code>InvalidPartNumber</Code></Error>', { status: 416 });
  const start = sizes.slice(0, n - 1).reduce((a, b) => a + b, 0);
  const end = start + sizes[n - 1]! - 1;
  const headers = stripped(req.headers);
  headers.set('range', `bytes=${start}-${end}`);
  const res = await fetch(await signer.sign(url.toString(), { method: 'GET', headers }));
  const total = sizes.reduce((a, b) => a + b, 0);
  const out = new Headers(res.headers);
  out.set('x-amz-mp-parts-count', String(sizes.length));
  out.set('content-range', `bytes ${start}-${end}/${total}`);
  out.set('content-length', String(end - start + 1));
  if (res.status !== 206 && res.status !== 200) return res;
  if (req.method === 'HEAD') {
    await res.body?.cancel();
    return new Response(null, { status: 206, headers: out });
  }
  return new Response(res.body, { status: 206, headers: out });
}

/** The request's own headers without its signature (re-signed for the changed URL). */
function stripped(headers: Headers): Headers {
  const out = new Headers();
  for (const [k, v] of headers) if (!/^(authorization|x-amz-date|x-amz-content-sha256|host)$/.test(k)) out.set(k, v);
  return out;
}

beforeAll(async () => {
  h = await startAdoptionHarness();
}, 30_000);
afterAll(async () => {
  await h?.settled();
  await h?.dispose();
});

async function multipartObject(key: string, size: number) {
  const body = new Uint8Array(randomBytes(size));
  const etag = await putSourceMultipart(h, key, body, PART);
  const sizes: number[] = [];
  for (let at = 0; at < size; at += PART) sizes.push(Math.min(PART, size - at));
  layouts.set(key, sizes);
  return { body, etag, sizes };
}

const attributes = async (send: AdoptionHarness['gateway'], key: string) => {
  const res = await send(key, { query: 'attributes=', headers: { 'x-amz-object-attributes': 'ETag,ObjectParts,ObjectSize' } });
  expect(res.status).toBe(200);
  return res.text();
};
const partsOf = (xml: string) => ({
  count: Number(/<PartsCount>(\d+)<\/PartsCount>/.exec(xml)?.[1] ?? 0),
  sizes: [...xml.matchAll(/<Part>[\s\S]*?<Size>(\d+)<\/Size>[\s\S]*?<\/Part>/g)].map((m) => Number(m[1])),
});

describe('source part boundaries', () => {
  it('not yet adopted: partNumber GET and HEAD and ObjectParts answer as the source does', async () => {
    const gw = h.isolate({ fetch: partsFront });
    const { body, etag, sizes } = await multipartObject('parts/unadopted', 3 * PART + 1000);
    const head = await gw.send('parts/unadopted', { method: 'HEAD', query: 'partNumber=2' });
    expect(head.status).toBe(206);
    expect(head.headers.get('content-length')).toBe(String(PART));
    expect(head.headers.get('x-amz-mp-parts-count')).toBe('4');
    expect(head.headers.get('etag')).toBe(etag);
    const last = await gw.send('parts/unadopted', { query: 'partNumber=4' });
    expect(last.status).toBe(206);
    expect(last.headers.get('content-range')).toBe(`bytes ${3 * PART}-${3 * PART + 999}/${body.byteLength}`);
    expect(Buffer.from(await last.arrayBuffer()).equals(Buffer.from(body.subarray(3 * PART)))).toBe(true);
    expect(partsOf(await attributes(gw.send, 'parts/unadopted'))).toEqual({ count: 4, sizes });
    await h.settled(); // the part GET scheduled the adoption
  });

  it('adopted: the object keeps the source part layout, served from the shards', async () => {
    const gw = h.isolate({ fetch: partsFront });
    const { body, etag, sizes } = await multipartObject('parts/adopted', 2 * PART + 5);
    const heads = gw.client.sent.head;
    const full = await gw.send('parts/adopted');
    expect(Buffer.from(await full.arrayBuffer()).equals(Buffer.from(body))).toBe(true);
    await h.settled();
    expect(gw.client.sent.head - heads).toBe(3); // one per part, asked by the adoption
    expect((await h.source('parts/adopted', { method: 'DELETE' })).status).toBe(204); // from now on, the shards only
    const before = partAnswers;
    const second = await gw.send('parts/adopted', { query: 'partNumber=2' });
    expect(second.status).toBe(206);
    expect(second.headers.get('x-amz-mp-parts-count')).toBe('3');
    expect(second.headers.get('etag')).toBe(etag);
    expect(Buffer.from(await second.arrayBuffer()).equals(Buffer.from(body.subarray(PART, 2 * PART)))).toBe(true);
    const head = await gw.send('parts/adopted', { method: 'HEAD', query: 'partNumber=3' });
    expect(head.headers.get('content-length')).toBe('5');
    expect(partsOf(await attributes(gw.send, 'parts/adopted'))).toEqual({ count: 3, sizes });
    expect((await gw.send('parts/adopted', { query: 'partNumber=4' })).status).toBe(416);
    expect(partAnswers).toBe(before); // not one of them asked the source
  });

  it('a source that ignores partNumber: the adopted object is whole (one part), its bytes and ETag the same', async () => {
    const { body, etag } = await multipartObject('parts/plain', 2 * PART + 7);
    layouts.delete('parts/plain');
    const full = await h.gateway('parts/plain');
    expect(Buffer.from(await full.arrayBuffer()).equals(Buffer.from(body))).toBe(true);
    await h.settled();
    const held = await h.inner.headObject('b', 'parts/plain', { conditions: {} });
    expect(held.etag).toBe(etag);
    expect(held.metadata.sourceParts).toBeUndefined();
    expect((await h.gateway('parts/plain', { query: 'partNumber=1' })).headers.get('content-length')).toBe(String(body.byteLength));
  });
});
