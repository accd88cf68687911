/**
 * Two independent SigV4 signers for cross-checking the gate: aws4fetch (AwsV4Signer) and
 * @smithy/signature-v4 (what @aws-sdk/client-s3 uses), plus the wire encoding SDKs use for
 * keys and query parameters. @aws-crypto/sha256-js is not installed, so smithy gets a small
 * node:crypto hash class.
 */

import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { AwsV4Signer } from 'aws4fetch';

export const ACCESS_KEY = 'AKIDTESTSIGNERS';
export const SECRET = 'test/secret+key=with/odd/chars';
export const REGION = 'us-east-1';

/** @smithy's Checksum interface on node:crypto: a hash, or an HMAC when given a secret. */
export class NodeSha256 {
  private readonly h;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    if (secret === undefined) this.h = createHash('sha256');
    else if (typeof secret === 'string') this.h = createHmac('sha256', secret);
    else if (secret instanceof ArrayBuffer) this.h = createHmac('sha256', new Uint8Array(secret));
    else this.h = createHmac('sha256', new Uint8Array(secret.buffer, secret.byteOffset, secret.byteLength));
  }
  update(data: Uint8Array): void {
    this.h.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.h.digest());
  }
  reset(): void {
    throw new Error('not needed');
  }
}

/** Every byte but A-Z a-z 0-9 - . _ ~ percent-encoded (what SDKs put on the wire). */
export function wireEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

/** `/bucket/<key>` with each key segment encoded, '/' kept. */
export function wirePath(bucket: string, key: string): string {
  return '/' + bucket + '/' + key.split('/').map(wireEncode).join('/');
}

/** A query as SDKs send it; a `null` value is a flag sent without '=' (`?uploads`). */
export function wireQuery(params: Array<[string, string | null]>): string {
  return params.map(([n, v]) => (v === null ? wireEncode(n) : `${wireEncode(n)}=${wireEncode(v)}`)).join('&');
}

export function smithySigner(secret = SECRET, accessKeyId = ACCESS_KEY, region = REGION): SignatureV4 {
  return new SignatureV4({
    credentials: { accessKeyId, secretAccessKey: secret },
    region,
    service: 's3',
    sha256: NodeSha256,
    // S3: the path is already encoded once and must not be normalised or encoded again.
    uriEscapePath: false,
  });
}

export function aws4fetchSigner(init: {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: string;
  datetime: string;
  signQuery?: boolean;
}): AwsV4Signer {
  return new AwsV4Signer({
    ...init,
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET,
    service: 's3',
    region: REGION,
  });
}

/** botocore's HmacV1 sub-resources (QSAOfInterest): the query names a SigV2 signature covers. */
const SIGV2_SUBRESOURCES = new Set([
  'accelerate',
  'acl',
  'analytics',
  'cors',
  'defaultObjectAcl',
  'delete',
  'inventory',
  'lifecycle',
  'location',
  'logging',
  'metrics',
  'notification',
  'object-lock',
  'partNumber',
  'policy',
  'replication',
  'requestPayment',
  'restore',
  'select',
  'select-type',
  'storageClass',
  'tagging',
  'torrent',
  'uploadId',
  'uploads',
  'versionId',
  'versioning',
  'versions',
  'website',
  'response-cache-control',
  'response-content-disposition',
  'response-content-encoding',
  'response-content-language',
  'response-content-type',
  'response-expires',
]);

export interface SigV2Init {
  method: string;
  /** The path as sent (raw). */
  path: string;
  /** The path-style resource botocore signs (`auth_path`): `/bucket` + path for virtual-hosted URLs. */
  authPath?: string;
  /** The query as sent, without the signature parameters. */
  query?: string;
  /** Absolute expiry, epoch seconds. */
  expires: number;
  /** Content-MD5, Content-Type and x-amz-* headers the request will carry. */
  headers?: Record<string, string>;
  secret?: string;
  accessKeyId?: string;
}

/**
 * A SigV2 presigned target (`path?query&AWSAccessKeyId=&Signature=&Expires=`) signed the way
 * botocore's HmacV1QueryAuth signs: raw query names matched against the sub-resources, values
 * unquoted, node:crypto HMAC-SHA1 (independent of worker/auth/sigv2.ts).
 */
export function sigv2Target(init: SigV2Init): string {
  const signature = sigv2Signature(init, String(init.expires));
  const auth = `AWSAccessKeyId=${init.accessKeyId ?? ACCESS_KEY}&Signature=${wireEncode(signature)}&Expires=${init.expires}`;
  return `${init.path}?${init.query ? init.query + '&' : ''}${auth}`;
}

/**
 * The `Authorization: AWS <key>:<signature>` value of a SigV2 header-signed request, signed the
 * way botocore's HmacV1Auth signs: the Date header in the date slot (`date` '' when only
 * x-amz-date is sent, as s3cmd does), the rest as sigv2Target.
 */
export function sigv2Authorization(init: Omit<SigV2Init, 'expires'> & { date: string }): string {
  return `AWS ${init.accessKeyId ?? ACCESS_KEY}:${sigv2Signature({ ...init, expires: 0 }, init.date)}`;
}

function sigv2Signature(init: SigV2Init, dateSlot: string): string {
  const headers = Object.entries(init.headers ?? {}).map(([n, v]) => [n.toLowerCase(), v] as const);
  const header = (name: string) => headers.find(([n]) => n === name)?.[1] ?? '';
  const amz = headers
    .filter(([n]) => n.startsWith('x-amz-'))
    .map(([n, v]) => `${n}:${v.trim()}\n`)
    .sort()
    .join('');
  const query = init.query ?? '';
  const sub = query
    .split('&')
    .filter((p) => p !== '')
    .map((p) => p.split(/=(.*)/s, 2))
    .filter(([n]) => SIGV2_SUBRESOURCES.has(n))
    .map(([n, v]) => (v === undefined ? n : `${n}=${decodeURIComponent(v)}`))
    .sort((a, b) => (a.split('=')[0] < b.split('=')[0] ? -1 : a.split('=')[0] > b.split('=')[0] ? 1 : 0));
  const resource = (init.authPath ?? init.path) + (sub.length ? '?' + sub.join('&') : '');
  const toSign = `${init.method}\n${header('content-md5')}\n${header('content-type')}\n${dateSlot}\n${amz}${resource}`;
  return createHmac('sha1', init.secret ?? SECRET)
    .update(toSign)
    .digest('base64');
}
