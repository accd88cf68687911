/**
 * Server-side encryption as S3 clients ask for it. Everything this gateway stores is sealed
 * under its own keys anyway (format/seal.ts); these are the two forms a client can ask for:
 * - SSE-S3 (`x-amz-server-side-encryption: AES256`): accepted, recorded and echoed; the object is
 *   sealed under the gateway's key ring, as every object is by default.
 * - SSE-KMS (`x-amz-server-side-encryption: aws:kms`, model/kms-key.ts): the object's data keys are
 *   wrapped under a named key of the gateway's key table (its current version), which a client
 *   names, a bucket default gives, or the gateway's default key (as AWS's aws/s3 key) stands for.
 * - SSE-C (`x-amz-server-side-encryption-customer-*`): the object's data key is wrapped under the
 *   client's key, which the gateway never stores: only a salted fingerprint (HMAC-SHA256 keyed by
 *   a random salt) to tell a wrong key (403) from a right one before any byte is read.
 *   Its ETag is not the MD5 of its plaintext (issue 37: that told a client without the key whether
 *   a guess of the contents was right, in listings and HEAD answers): `sseCEtag`, an HMAC of that
 *   MD5 under the fingerprint, stable for the object and opaque without the key, as AWS's SSE-C
 *   ETags are not MD5s either. Objects written before are rewritten once by the catalog
 *   (schema-migrations.ts, `sse-c-etags`).
 */

export type SseRequest =
  | { kind: 's3' }
  | { kind: 'c'; key: Uint8Array; keyMD5: string }
  /** SSE-KMS: the key as named (bare id or ARN; absent: the bucket default's or the gateway default), context (base64 JSON) and bucket key as sent. */
  | { kind: 'kms'; keyId?: string; context?: string; bucketKey?: boolean };

/**
 * What an object's metadata records of how the client asked it to be encrypted. SSE-KMS: the key
 * (its id, and the ARN answers name it by), the bucket key flag and encryption context as asked,
 * and a random salt for its ETag (etagFor). Which version of the key wraps each unit's data key is
 * in the unit's seal (`~kms/<id>/<version>`), which rotation changes; this record never changes.
 */
export type SseRecord =
  | { kind: 's3' }
  | { kind: 'c'; keyMD5: string; salt: string; fingerprint: string }
  | { kind: 'kms'; keyId: string; arn: string; bucketKey?: boolean; context?: string; salt: string };

/** The record of an SSE-KMS write under key `key` (resolved by engine/kms-keys.ts). */
export function kmsRecordOf(req: Extract<SseRequest, { kind: 'kms' }>, key: { id: string; arn: string }): SseRecord {
  return {
    kind: 'kms',
    keyId: key.id,
    arn: key.arn,
    ...(req.bucketKey ? { bucketKey: true } : {}),
    ...(req.context !== undefined ? { context: req.context } : {}),
    salt: toBase64(crypto.getRandomValues(new Uint8Array(16))),
  };
}

import { createHmac } from 'node:crypto';
import { fromBase64, toHex, timingSafeEqual, toBase64 } from './bytes.ts';
import { S3Error } from './errors.ts';

async function fingerprintOf(key: Uint8Array, salt: Uint8Array): Promise<string> {
  const hmac = await crypto.subtle.importKey('raw', salt, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return toBase64(await crypto.subtle.sign('HMAC', hmac, key));
}

/** The record of a request (a fresh salt for SSE-C). */
export async function sseRecordOf(req: SseRequest | null | undefined): Promise<SseRecord | undefined> {
  if (!req) return undefined;
  if (req.kind === 's3') return { kind: 's3' };
  if (req.kind === 'kms') throw new Error('sseRecordOf: an SSE-KMS record needs its key resolved (kmsRecordOf)');
  const salt = crypto.getRandomValues(new Uint8Array(16));
  return { kind: 'c', keyMD5: req.keyMD5, salt: toBase64(salt), fingerprint: await fingerprintOf(req.key, salt) };
}

/** Whether `key` is the customer key `record` was made with. */
export async function sseKeyMatches(record: Extract<SseRecord, { kind: 'c' }>, key: Uint8Array): Promise<boolean> {
  const salt = fromBase64(record.salt);
  return salt !== null && timingSafeEqual(await fingerprintOf(key, salt), record.fingerprint);
}

/**
 * The ETag of bytes whose MD5 is `md5Hex`, quoted, as an object (or part) encrypted as `record`
 * shows it: the MD5 itself, but for SSE-C the first 128 bits of HMAC-SHA256(fingerprint, MD5), in
 * hex (an ETag's usual shape). Synchronous, so the catalog's migration computes the same.
 */
export function etagFor(md5Hex: string, record: SseRecord | null | undefined): string {
  // SSE-KMS: AWS's ETag of such an object is not the MD5 of its data either; an HMAC under the record's own salt.
  if (record?.kind === 'kms') return `"${createHmac('sha256', record.salt).update(`sse-kms etag ${md5Hex}`).digest('hex').slice(0, 32)}"`;
  if (record?.kind !== 'c') return `"${md5Hex}"`;
  return `"${createHmac('sha256', record.fingerprint).update(`sse-c etag ${md5Hex}`).digest('hex').slice(0, 32)}"`;
}

/** The customer key of a request, if it is SSE-C. */
export function customerKeyOf(req: SseRequest | { kind: string } | null | undefined): Uint8Array | undefined {
  return req?.kind === 'c' ? (req as Extract<SseRequest, { kind: 'c' }>).key : undefined;
}

/**
 * A read of an object (or a copy's source, or a part of an upload) with the SSE-C key the request
 * gives, checked before any byte is read: an SSE-C object without its key is 400 InvalidRequest,
 * with another key 403 AccessDenied (as AWS answers; RGW answers 400); a key for an object that
 * has none is 400 InvalidRequest.
 */
export async function checkSseRead(
  record: SseRecord | undefined,
  req: SseRequest | null | undefined,
  of: 'object' | 'copy-source' | 'part' = 'object',
): Promise<void> {
  const what = of === 'copy-source' ? 'The copy source' : of === 'part' ? 'The multipart upload' : 'The object';
  if (record?.kind === 'c') {
    if (req?.kind !== 'c')
      throw new S3Error(
        'InvalidRequest',
        `${what} was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.`,
      );
    if (!(await sseKeyMatches(record, req.key))) {
      // A part with another key than its upload's is bad input (400, as AWS and RGW answer); a read with another key is denied (403, AWS).
      if (of === 'part')
        throw new S3Error('InvalidArgument', 'The provided customer key does not match the one the multipart upload was initiated with (SSE-C).');
      throw new S3Error('AccessDenied', `${what} was encrypted with another customer key (SSE-C) than the one given.`);
    }
    return;
  }
  if (req?.kind === 'c')
    throw new S3Error(
      'InvalidRequest',
      `The encryption parameters are not applicable to this object (${what.toLowerCase()} is not encrypted with a customer key).`,
    );
}
