/**
 * A gateway adopting a real source bucket (issue 41): an s3rver process holding bucket "src",
 * and the real front door (createApp, the real SigV4 gate) over the product's EcStore on memory
 * backends and the product's SQL catalog, with bucket "b" adopting "src". Requests are signed
 * with aws4fetch, to the source directly or to the gateway through app.fetch (no sockets).
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AwsClient } from 'aws4fetch';
import { createApp } from '../../worker/app/app.ts';
import { makeAuthenticate, makePostFormGate } from '../../worker/app/auth-gate.ts';
import { Adoption } from '../../worker/adopt/adopting-store.ts';
import { SourceClient } from '../../worker/adopt/source-client.ts';
import type { Catalog } from '../../worker/catalog/ports.ts';
import type { ObjectStore } from '../../worker/model/object-store.ts';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { S3rverProcess } from '../backends/s3rver-harness.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { memoryEcStore, testS3Settings } from '../support/memory-store.ts';
import type { BucketConfigStore } from '../../worker/model/bucket-config-store.ts';

export const BUCKET = 'b';
export const SOURCE_BUCKET = 'src';

export interface AdoptionHarness {
  server: S3rverProcess;
  /** Signed requests to the source bucket, as any client of it. */
  source: (key: string, init?: RequestInit & { query?: string }) => Promise<Response>;
  /** Signed requests to bucket "b" through the gateway. */
  gateway: (key: string, init?: RequestInit & { query?: string }) => Promise<Response>;
  /** A new isolate of the gateway: same catalog and backends, its own caches and flights. */
  isolate: (options?: { flightWaitMs?: number; fetch?: (request: Request) => Promise<Response>; writeThroughBuckets?: ReadonlySet<string> }) => {
    adoption: Adoption;
    client: SourceClient;
    send: (key: string, init?: RequestInit & { query?: string }) => Promise<Response>;
  };
  adoption: Adoption;
  client: SourceClient;
  /** The product's catalog and the engine's store under the adopting one (no read-through). */
  catalog: Catalog;
  inner: ObjectStore;
  /** The buckets' configuration (the engine's: adoption does not change it). */
  config: BucketConfigStore;
  /** Settles every adoption started so far. */
  settled: () => Promise<void>;
  clock: { now: number };
  dispose: () => Promise<void>;
}

const enc = (key: string) =>
  key
    .split('/')
    .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');

export async function startAdoptionHarness(): Promise<AdoptionHarness> {
  const server = new S3rverProcess([SOURCE_BUCKET]);
  await server.start();
  const sourceSigner = new AwsClient({ accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', service: 's3', region: 'us-east-1', retries: 0 });
  const gatewaySigner = new AwsClient({ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET, service: 's3', region: 'us-east-1', retries: 0 });
  const source = async (key: string, init: RequestInit & { query?: string } = {}) =>
    fetch(await sourceSigner.sign(`${server.endpoint}/${SOURCE_BUCKET}/${enc(key)}${init.query ? `?${init.query}` : ''}`, init));

  const catalog = localCatalog({});
  const parts = memoryEcStore(catalog, { maxObjectSize: 64 * 1024 * 1024 });
  await parts.store.createBucket(BUCKET, { region: 'us-east-1' });
  const clock = { now: Date.now() };
  const work: Promise<unknown>[] = [];
  const credentials = [{ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET }];
  const authenticate = makeAuthenticate({ credentials, allowAnonymous: false, region: 'us-east-1' }, {});
  const postForm = makePostFormGate({ credentials, allowAnonymous: false, region: 'us-east-1' }, {});
  const settings = testS3Settings({ maxObjectSize: 64 * 1024 * 1024 });

  const isolate = ({
    fetch: sourceFetch,
    ...options
  }: {
    flightWaitMs?: number;
    fetch?: (request: Request) => Promise<Response>;
    writeThroughBuckets?: ReadonlySet<string>;
  } = {}) => {
    const client = new SourceClient({
      ...(sourceFetch ? { fetch: sourceFetch } : {}),
      endpoint: server.endpoint,
      bucket: SOURCE_BUCKET,
      region: 'us-east-1',
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      timeoutMs: 5000,
    });
    const adoption = new Adoption(parts.store, {
      sources: new Map([[BUCKET, client]]),
      detach: (fn) => {
        const p = fn();
        work.push(p);
        return p;
      },
      now: () => clock.now,
      states: catalog,
      ...options,
    });
    const app = createApp({ store: adoption.store(), config: parts.store.config, authenticate, postForm, settings });
    const send = async (key: string, init: RequestInit & { query?: string } = {}) =>
      app.fetch(await gatewaySigner.sign(`http://gw.test/${BUCKET}/${enc(key)}${init.query ? `?${init.query}` : ''}`, init));
    return { adoption, client, send };
  };
  const first = isolate();
  return {
    server,
    source,
    gateway: first.send,
    isolate,
    adoption: first.adoption,
    client: first.client,
    catalog,
    inner: parts.store,
    config: parts.store.config,
    settled: async () => {
      while (work.length) await Promise.allSettled(work.splice(0));
    },
    clock,
    dispose: () => server.dispose(),
  };
}

/** A PUT to the source with headers (Content-Type, x-amz-meta-*). */
export async function putSource(h: AdoptionHarness, key: string, body: Uint8Array, headers: Record<string, string> = {}): Promise<string> {
  const res = await h.source(key, { method: 'PUT', body, headers: { 'content-length': String(body.byteLength), ...headers } });
  if (res.status !== 200) throw new Error(`source PUT ${key}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  return res.headers.get('etag')!;
}

/** A multipart upload to the source (parts of `partSize`): its ETag ends "-<parts>". */
export async function putSourceMultipart(
  h: AdoptionHarness,
  key: string,
  body: Uint8Array,
  partSize: number,
  headers: Record<string, string> = {},
): Promise<string> {
  const created = await h.source(key, { method: 'POST', query: 'uploads=', headers });
  const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(await created.text())![1]!;
  const etags: string[] = [];
  for (let at = 0, n = 1; at < body.byteLength; at += partSize, n++) {
    const part = body.subarray(at, at + partSize);
    const res = await h.source(key, {
      method: 'PUT',
      query: `partNumber=${n}&uploadId=${encodeURIComponent(uploadId)}`,
      body: part,
      headers: { 'content-length': String(part.byteLength) },
    });
    await res.arrayBuffer();
    etags.push(res.headers.get('etag')!);
  }
  const xml = `<CompleteMultipartUpload>${etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join('')}</CompleteMultipartUpload>`;
  const done = await h.source(key, { method: 'POST', query: `uploadId=${encodeURIComponent(uploadId)}`, body: xml });
  const text = await done.text();
  if (done.status !== 200) throw new Error(`complete ${key}: ${done.status} ${text}`);
  // s3rver 3.7.1 gives a completed upload the MD5 of its bytes; S3 (and every client of it)
  // knows the multipart ETag, md5 of the parts' binary MD5s and "-<parts>". The object's ETag
  // file is set to that, so the source serves what an S3 bucket's multipart object shows.
  const multipart = `"${createHash('md5')
    .update(Buffer.concat(etags.map((e) => Buffer.from(e.replace(/"/g, ''), 'hex'))))
    .digest('hex')}-${etags.length}"`;
  const parts = key.split('/');
  writeFileSync(join(h.server.directory, SOURCE_BUCKET, ...parts.slice(0, -1), `${parts.at(-1)}._S3rver_object.md5`), multipart.slice(1, -1));
  return multipart;
}
