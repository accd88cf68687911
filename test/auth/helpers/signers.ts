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

export function aws4fetchSigner(init: { method: string; url: string; headers?: Record<string, string>; body?: string; datetime: string; signQuery?: boolean }): AwsV4Signer {
  return new AwsV4Signer({
    ...init,
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET,
    service: 's3',
    region: REGION,
  });
}
