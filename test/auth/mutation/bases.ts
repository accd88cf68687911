/**
 * The mutation suite's base requests: valid, signed requests of every form the gate takes, made
 * by the SDKs and by independent signers, each one a function of how to sign it (so that the suite
 * can sign it again for the wrong region, at the wrong time, with an unknown or wrong key):
 * - @aws-sdk/client-s3, header auth, its requests captured before they leave (plain bodies with a
 *   CRC32 header, streams as aws-chunked with an unsigned trailer, path-style and virtual-hosted);
 * - @aws-sdk/s3-request-presigner, presigned SigV4 URLs (response overrides, hoisted metadata);
 * - @smithy/signature-v4 directly: signed aws-chunked bodies (with and without a signed trailer)
 *   and a presigned URL that pins the body's SHA-256;
 * - aws4fetch, header and presigned;
 * - SigV2 presigned URLs (test/auth/helpers/signers.ts sigv2Target, botocore's algorithm), and two
 *   made by botocore itself.
 */
import { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListMultipartUploadsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { AwsV4Signer } from 'aws4fetch';
import { encodeAwsChunked } from '../helpers/aws-chunked-encode.ts';
import { checksumOf } from '../helpers/checksums.ts';
import { ACCESS_KEY, SECRET, sigv2Authorization, sigv2Target, smithySigner, wireQuery } from '../helpers/signers.ts';
import type { Scheme, Wire } from './wire.ts';

export const HOST = 'gw.test';
export const BASE_DOMAIN = 's3.gw.test';
export const BUCKET = 'fz';

/** How to sign: the defaults make a valid request; each other value makes one to refuse. */
export interface SignAs {
  region?: string;
  /** Milliseconds added to the signing time; for SigV2, any value makes the URL expired. */
  skewMs?: number;
  accessKeyId?: string;
  secret?: string;
}

export interface BaseCase {
  name: string;
  scheme: Scheme;
  sign: (as: SignAs) => Promise<Wire>;
}

/** The state every base request is made against (test/auth/gate-mutation.test.ts sets it up). */
export interface State {
  uploadId: string;
}

/** When to sign: now, or `skewMs` away (far enough to be refused: presigned URLs expire in 300 s, aws4fetch's in a day). */
const signingDate = (as: SignAs) => new Date(Date.now() + (as.skewMs ?? 0));
const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');
const bytes = (s: string) => new TextEncoder().encode(s);

class Captured extends Error {
  constructor(
    readonly request: { method: string; hostname: string; path: string; query: Record<string, string>; headers: Record<string, string>; body?: unknown },
  ) {
    super('captured');
  }
}

function client(as: SignAs, o: { virtualHosted?: boolean; whenRequired?: boolean } = {}): S3Client {
  return new S3Client({
    endpoint: o.virtualHosted ? `http://${BASE_DOMAIN}` : `http://${HOST}`,
    forcePathStyle: !o.virtualHosted,
    region: as.region ?? 'us-east-1',
    credentials: { accessKeyId: as.accessKeyId ?? ACCESS_KEY, secretAccessKey: as.secret ?? SECRET },
    systemClockOffset: as.skewMs ?? 0,
    maxAttempts: 1,
    requestChecksumCalculation: o.whenRequired ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED',
    requestHandler: { handle: async (request: never) => Promise.reject(new Captured(request)) },
    // The capture is an error to the SDK, which says so for streaming bodies: not news here.
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  } as never);
}

async function collect(body: unknown): Promise<Uint8Array | null> {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return bytes(body);
  if (body instanceof Uint8Array) return body;
  const chunks: Buffer[] = [];
  for await (const c of body as Readable) chunks.push(Buffer.from(c as Uint8Array));
  return new Uint8Array(Buffer.concat(chunks));
}

/** The request @aws-sdk/client-s3 would send for `command`, signed in the Authorization header. */
export async function sdk(command: unknown, as: SignAs, o: { virtualHosted?: boolean; whenRequired?: boolean } = {}): Promise<Wire> {
  try {
    await client(as, o).send(command as never);
  } catch (err) {
    if (!(err instanceof Captured)) throw err;
    const r = err.request;
    const body = await collect(r.body);
    const headers = Object.entries(r.headers).filter(([n]) => n !== 'transfer-encoding');
    const plain =
      body !== null && !headers.some(([n]) => n === 'content-length') && !headers.some(([n, v]) => n === 'content-encoding' && v.includes('aws-chunked'));
    if (plain) headers.push(['content-length', String(body.length)]);
    const query = wireQuery(Object.entries(r.query));
    return { method: r.method, target: r.path + (query ? '?' + query : ''), headers, body };
  }
  throw new Error('the SDK sent nothing');
}

/** A presigned SigV4 URL from @aws-sdk/s3-request-presigner, sent with `body`. */
async function presigned(command: unknown, as: SignAs, body?: string, o: { virtualHosted?: boolean } = {}): Promise<Wire> {
  const url = new URL(
    await getSignedUrl(client(as, o), command as never, {
      expiresIn: 300,
      signingDate: new Date(Date.now() + (as.skewMs ?? 0)),
    }),
  );
  return wire(url, body === undefined ? 'GET' : 'PUT', [], body);
}

function wire(url: URL, method: string, headers: Array<[string, string]>, body?: string | Uint8Array): Wire {
  const b = body === undefined ? null : typeof body === 'string' ? bytes(body) : body;
  const all: Array<[string, string]> = [['host', url.host], ...headers];
  if (b !== null && !all.some(([n]) => n === 'content-length' || n === 'x-amz-decoded-content-length')) all.push(['content-length', String(b.length)]);
  return { method, target: url.pathname + url.search, headers: all, body: b };
}

/** Header auth or a presigned URL from aws4fetch, an implementation independent of the SDK. */
async function aws4(method: string, url: string, as: SignAs, o: { body?: string; headers?: Record<string, string>; signQuery?: boolean } = {}): Promise<Wire> {
  const headers = { ...o.headers, ...(o.body !== undefined && !o.signQuery ? { 'x-amz-content-sha256': sha256(o.body) } : {}) };
  const signer = new AwsV4Signer({
    method,
    url,
    headers,
    body: o.body,
    accessKeyId: as.accessKeyId ?? ACCESS_KEY,
    secretAccessKey: as.secret ?? SECRET,
    service: 's3',
    region: as.region ?? 'us-east-1',
    signQuery: o.signQuery,
    datetime: signingDate(as)
      .toISOString()
      .replace(/[:-]|\.\d{3}/g, ''),
  });
  const signed = await signer.sign();
  return wire(
    signed.url,
    method,
    [...signed.headers].filter(([n]) => n !== 'host'),
    o.body,
  );
}

/** aws-chunked bodies with every chunk signed (and the trailer, with `trailer`), by smithy + the test encoder. */
async function signedChunks(as: SignAs, trailer: boolean): Promise<Wire> {
  const data = bytes('chunked payload, signed chunk by chunk. '.repeat(20));
  const headers: Record<string, string> = {
    host: HOST,
    'content-encoding': 'aws-chunked',
    'x-amz-content-sha256': trailer ? 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER' : 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
    'x-amz-decoded-content-length': String(data.length),
    ...(trailer ? { 'x-amz-trailer': 'x-amz-checksum-crc32c' } : {}),
  };
  const date = signingDate(as);
  const signer = smithySigner(as.secret ?? SECRET, as.accessKeyId ?? ACCESS_KEY, as.region ?? 'us-east-1');
  const out = await signer.sign({ method: 'PUT', protocol: 'http:', hostname: HOST, path: `/${BUCKET}/chunked`, query: {}, headers }, { signingDate: date });
  const seedSignature = /Signature=(\w+)/.exec(out.headers.authorization)![1];
  const datetime = date.toISOString().replace(/[:-]|\.\d{3}/g, '');
  const { body } = encodeAwsChunked(data, {
    sizes: [256, 300],
    signer: { secret: as.secret ?? SECRET, datetime, region: as.region ?? 'us-east-1', seedSignature },
    trailers: trailer ? [['x-amz-checksum-crc32c', checksumOf('CRC32C', data)]] : undefined,
  });
  return { method: 'PUT', target: `/${BUCKET}/chunked`, headers: Object.entries(out.headers), body };
}

/** A presigned PUT that pins the SHA-256 of its body (hole 2 of issue 11). */
async function pinnedPresign(as: SignAs): Promise<Wire> {
  const body = 'pinned body';
  const signer = smithySigner(as.secret ?? SECRET, as.accessKeyId ?? ACCESS_KEY, as.region ?? 'us-east-1');
  const out = await signer.presign(
    { method: 'PUT', protocol: 'http:', hostname: HOST, path: `/${BUCKET}/pinned`, query: {}, headers: { host: HOST, 'x-amz-content-sha256': sha256(body) } },
    { signingDate: signingDate(as), expiresIn: 300 },
  );
  return wire(new URL(`http://${HOST}/${BUCKET}/pinned?${wireQuery(Object.entries(out.query as Record<string, string>))}`), 'PUT', [], body);
}

const FAR = 4102444800;

/** A SigV2 presigned request (expired when signed with a skew). */
function v2(
  method: string,
  path: string,
  as: SignAs,
  o: { query?: string; headers?: Record<string, string>; body?: string; host?: string; authPath?: string } = {},
): Wire {
  const target = sigv2Target({
    method,
    path,
    authPath: o.authPath,
    query: o.query,
    headers: o.headers,
    expires: as.skewMs ? Math.floor(Date.now() / 1000) - 3600 : FAR,
    secret: as.secret,
    accessKeyId: as.accessKeyId,
  });
  return wire(new URL(`http://${o.host ?? HOST}${target}`), method, Object.entries(o.headers ?? {}), o.body);
}

/** A SigV2 header-signed request (Authorization: AWS key:sig); `amzDate`: the time in x-amz-date,
 *  the Date slot empty (s3cmd), else in the Date header (boto2, botocore). */
function v2h(
  method: string,
  path: string,
  as: SignAs,
  o: { query?: string; headers?: Record<string, string>; body?: string; host?: string; authPath?: string; amzDate?: boolean } = {},
): Wire {
  const time = new Date(Date.now() + (as.skewMs ?? 0)).toUTCString();
  const headers: Record<string, string> = { ...(o.headers ?? {}), ...(o.amzDate ? { 'x-amz-date': time } : { date: time }) };
  const authorization = sigv2Authorization({
    method,
    path,
    authPath: o.authPath,
    query: o.query,
    headers,
    date: o.amzDate ? '' : time,
    secret: as.secret,
    accessKeyId: as.accessKeyId,
  });
  const target = o.query ? `${path}?${o.query}` : path;
  return wire(new URL(`http://${o.host ?? HOST}${target}`), method, [...Object.entries(headers), ['authorization', authorization]], o.body);
}

/** Every base request, against `state`. */
export function baseCases(state: State): BaseCase[] {
  const { uploadId } = state;
  const header: Scheme = { kind: 'v4-header', body: 'unsigned' };
  const headerWhole: Scheme = { kind: 'v4-header', body: 'whole' };
  const query: Scheme = { kind: 'v4-query', body: 'unsigned' };
  const v2q: Scheme = { kind: 'v2-query', body: 'unsigned' };
  const v2hd: Scheme = { kind: 'v2-header', body: 'unsigned' };
  const B = BUCKET;
  const vhost = `${B}.${BASE_DOMAIN}`;
  return [
    {
      name: 'sdk PutObject (body digest, CRC32 header, metadata)',
      scheme: headerWhole,
      sign: (as) =>
        sdk(new PutObjectCommand({ Bucket: B, Key: 'dir/new obj.txt', Body: 'fuzzed body', ContentType: 'text/plain', Metadata: { a: 'one two' } }), as),
    },
    {
      name: 'sdk PutObject (WHEN_REQUIRED: digest only)',
      scheme: headerWhole,
      sign: (as) => sdk(new PutObjectCommand({ Bucket: B, Key: 'plain', Body: 'plain body' }), as, { whenRequired: true }),
    },
    {
      name: 'sdk PutObject stream (aws-chunked, unsigned trailer)',
      scheme: header,
      sign: (as) => sdk(new PutObjectCommand({ Bucket: B, Key: 'streamed', Body: Readable.from([Buffer.from('streamed body')]), ContentLength: 13 }), as),
    },
    {
      name: 'sdk GetObject (overrides, range)',
      scheme: header,
      sign: (as) => sdk(new GetObjectCommand({ Bucket: B, Key: 'obj', ResponseContentType: 'text/x-signed', Range: 'bytes=0-3' }), as),
    },
    { name: 'sdk HeadObject', scheme: header, sign: (as) => sdk(new HeadObjectCommand({ Bucket: B, Key: 'obj' }), as) },
    { name: 'sdk DeleteObject', scheme: header, sign: (as) => sdk(new DeleteObjectCommand({ Bucket: B, Key: 'obj' }), as) },
    { name: 'sdk ListObjectsV2', scheme: header, sign: (as) => sdk(new ListObjectsV2Command({ Bucket: B, Prefix: 'd', Delimiter: '/' }), as) },
    { name: 'sdk ListObjects', scheme: header, sign: (as) => sdk(new ListObjectsCommand({ Bucket: B, Marker: 'a' }), as) },
    { name: 'sdk ListBuckets', scheme: header, sign: (as) => sdk(new ListBucketsCommand({}), as) },
    { name: 'sdk CreateBucket', scheme: headerWhole, sign: (as) => sdk(new CreateBucketCommand({ Bucket: 'fz-new' }), as) },
    { name: 'sdk CreateMultipartUpload', scheme: header, sign: (as) => sdk(new CreateMultipartUploadCommand({ Bucket: B, Key: 'mpu2' }), as) },
    {
      name: 'sdk UploadPart',
      scheme: headerWhole,
      sign: (as) => sdk(new UploadPartCommand({ Bucket: B, Key: 'mpu', UploadId: uploadId, PartNumber: 1, Body: 'part one' }), as),
    },
    { name: 'sdk ListParts', scheme: header, sign: (as) => sdk(new ListPartsCommand({ Bucket: B, Key: 'mpu', UploadId: uploadId }), as) },
    { name: 'sdk ListMultipartUploads', scheme: header, sign: (as) => sdk(new ListMultipartUploadsCommand({ Bucket: B }), as) },
    { name: 'sdk AbortMultipartUpload', scheme: header, sign: (as) => sdk(new AbortMultipartUploadCommand({ Bucket: B, Key: 'mpu', UploadId: uploadId }), as) },
    { name: 'sdk CopyObject', scheme: header, sign: (as) => sdk(new CopyObjectCommand({ Bucket: B, Key: 'copy', CopySource: `${B}/obj` }), as) },
    { name: 'sdk DeleteObjects', scheme: headerWhole, sign: (as) => sdk(new DeleteObjectsCommand({ Bucket: B, Delete: { Objects: [{ Key: 'dir/a' }] } }), as) },
    { name: 'sdk GetObject, virtual-hosted', scheme: header, sign: (as) => sdk(new GetObjectCommand({ Bucket: B, Key: 'obj' }), as, { virtualHosted: true }) },
    {
      name: 'sdk PutObject, virtual-hosted',
      scheme: headerWhole,
      sign: (as) => sdk(new PutObjectCommand({ Bucket: B, Key: 'vh', Body: 'vhost body' }), as, { virtualHosted: true }),
    },
    {
      name: 'presigned GetObject (overrides)',
      scheme: query,
      sign: (as) => presigned(new GetObjectCommand({ Bucket: B, Key: 'obj', ResponseContentType: 'text/x-signed', ResponseContentDisposition: 'inline' }), as),
    },
    {
      name: 'presigned PutObject (hoisted metadata)',
      scheme: query,
      sign: (as) => presigned(new PutObjectCommand({ Bucket: B, Key: 'presigned', Metadata: { via: 'url' } }), as, 'presigned body'),
    },
    {
      name: 'presigned DeleteObject',
      scheme: query,
      sign: async (as) => ({ ...(await presigned(new DeleteObjectCommand({ Bucket: B, Key: 'obj' }), as)), method: 'DELETE' }),
    },
    { name: 'presigned ListObjectsV2', scheme: query, sign: (as) => presigned(new ListObjectsV2Command({ Bucket: B, Prefix: 'dir/' }), as) },
    {
      name: 'presigned UploadPart',
      scheme: query,
      sign: (as) => presigned(new UploadPartCommand({ Bucket: B, Key: 'mpu', UploadId: uploadId, PartNumber: 2 }), as, 'part two'),
    },
    {
      name: 'presigned GetObject, virtual-hosted',
      scheme: query,
      sign: (as) => presigned(new GetObjectCommand({ Bucket: B, Key: 'dir/obj.txt' }), as, undefined, { virtualHosted: true }),
    },
    { name: 'smithy aws-chunked, signed chunks', scheme: { kind: 'v4-header', body: 'chunked' }, sign: (as) => signedChunks(as, false) },
    { name: 'smithy aws-chunked, signed chunks and trailer', scheme: { kind: 'v4-header', body: 'chunked-trailer' }, sign: (as) => signedChunks(as, true) },
    { name: 'smithy presigned PUT pinning its SHA-256', scheme: { kind: 'v4-query', body: 'whole' }, sign: pinnedPresign },
    { name: 'aws4fetch ListObjectsV2', scheme: header, sign: (as) => aws4('GET', `http://${HOST}/${B}?list-type=2&prefix=dir%2F&max-keys=5`, as) },
    {
      name: 'aws4fetch PutObject (body digest)',
      scheme: headerWhole,
      sign: (as) => aws4('PUT', `http://${HOST}/${B}/a4f`, as, { body: 'aws4fetch body', headers: { 'x-amz-meta-signer': 'aws4fetch' } }),
    },
    {
      name: 'aws4fetch AbortMultipartUpload',
      scheme: header,
      sign: (as) => aws4('DELETE', `http://${HOST}/${B}/mpu?uploadId=${encodeURIComponent(uploadId)}`, as),
    },
    {
      name: 'aws4fetch presigned GetObject',
      scheme: query,
      sign: (as) => aws4('GET', `http://${HOST}/${B}/obj?response-cache-control=no-store`, as, { signQuery: true }),
    },
    { name: 'SigV2 GetObject (override)', scheme: v2q, sign: async (as) => v2('GET', `/${B}/obj`, as, { query: 'response-content-type=text%2Fx-signed' }) },
    {
      name: 'SigV2 PutObject (type, metadata)',
      scheme: v2q,
      sign: async (as) => v2('PUT', `/${B}/v2put`, as, { headers: { 'content-type': 'text/plain', 'x-amz-meta-a': 'one' }, body: 'sigv2 body' }),
    },
    { name: 'SigV2 DeleteObject', scheme: v2q, sign: async (as) => v2('DELETE', `/${B}/obj`, as) },
    { name: 'SigV2 ListObjects (unsigned prefix)', scheme: v2q, sign: async (as) => v2('GET', `/${B}`, as, { query: 'prefix=dir%2F' }) },
    {
      name: 'SigV2 UploadPart',
      scheme: v2q,
      sign: async (as) =>
        v2('PUT', `/${B}/mpu`, as, {
          query: `partNumber=3&uploadId=${encodeURIComponent(uploadId)}`,
          headers: { 'content-type': 'application/octet-stream' },
          body: 'part three',
        }),
    },
    { name: 'SigV2 GetObject, virtual-hosted', scheme: v2q, sign: async (as) => v2('GET', '/dir/obj.txt', as, { host: vhost, authPath: `/${B}/dir/obj.txt` }) },
    {
      name: 'SigV2 header GetObject (override)',
      scheme: v2hd,
      sign: async (as) => v2h('GET', `/${B}/obj`, as, { query: 'response-content-type=text%2Fx-signed' }),
    },
    {
      name: 'SigV2 header PutObject (type, metadata, x-amz-date)',
      scheme: v2hd,
      sign: async (as) =>
        v2h('PUT', `/${B}/v2hput`, as, { headers: { 'content-type': 'text/plain', 'x-amz-meta-a': 'one' }, body: 'sigv2 header body', amzDate: true }),
    },
    { name: 'SigV2 header DeleteObject', scheme: v2hd, sign: async (as) => v2h('DELETE', `/${B}/obj`, as) },
    { name: 'SigV2 header ListObjects (unsigned prefix)', scheme: v2hd, sign: async (as) => v2h('GET', `/${B}`, as, { query: 'prefix=dir%2F' }) },
    {
      name: 'SigV2 header PutObjectTagging',
      scheme: v2hd,
      sign: async (as) =>
        v2h('PUT', `/${B}/obj`, as, {
          query: 'tagging',
          headers: { 'content-type': 'application/xml' },
          body: '<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>',
        }),
    },
    {
      name: 'SigV2 header GetObject, virtual-hosted',
      scheme: v2hd,
      sign: async (as) => v2h('GET', '/dir/obj.txt', as, { host: vhost, authPath: `/${B}/dir/obj.txt` }),
    },
  ];
}
