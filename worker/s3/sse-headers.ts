/**
 * The server-side encryption headers of a request (model/sse.ts), checked as S3 checks them:
 * - `x-amz-server-side-encryption`: AES256 (SSE-S3) and aws:kms (SSE-KMS, with an optional
 *   `-aws-kms-key-id`, `-context` and `-bucket-key-enabled`) are accepted; aws:kms:dsse is
 *   NotImplemented; anything else InvalidArgument. With SSE-C as well: InvalidArgument. A KMS key
 *   id or context without aws:kms: InvalidArgument, as S3 answers.
 * - SSE-C: algorithm AES256 (else InvalidEncryptionAlgorithmError), a key of 32 bytes in base64
 *   and its MD5 in base64 (a missing part, a short key or a mismatching MD5: InvalidArgument).
 * The copy-source form (`x-amz-copy-source-server-side-encryption-customer-*`) names the key of a
 * copy's source. Nothing is read or stored before these checks pass.
 */
import { S3Error } from '../model/errors.ts';
import type { SseRecord, SseRequest } from '../model/sse.ts';
import { fromBase64, toBase64 } from '../model/bytes.ts';
import { md5Of } from '../model/digest.ts';

/** The SSE a write asks for (PutObject, CopyObject's target, CreateMultipartUpload, a POST form). */
export function readSseRequest(headers: Headers): SseRequest | null {
  const sse = headers.get('x-amz-server-side-encryption');
  const customer = readCustomerKey(headers, 'x-amz-server-side-encryption-customer-');
  const keyId = headers.get('x-amz-server-side-encryption-aws-kms-key-id');
  const context = headers.get('x-amz-server-side-encryption-context');
  const bucketKey = headers.get('x-amz-server-side-encryption-bucket-key-enabled');
  if (sse !== 'aws:kms' && (keyId !== null || context !== null)) {
    // As S3 answers a KMS key id (or context) without aws:kms, AES256 included.
    throw new S3Error('InvalidArgument', 'Server Side Encryption with AWS KMS managed key requires HTTP header x-amz-server-side-encryption : aws:kms', {
      ArgumentName: 'x-amz-server-side-encryption',
      ArgumentValue: sse ?? 'null',
    });
  }
  if (sse === null) return customer;
  if (sse === 'aws:kms:dsse')
    throw new S3Error(
      'NotImplemented',
      'Dual-layer server-side encryption (aws:kms:dsse) is not implemented: use aws:kms (one layer under a named key) or AES256.',
    );
  if (sse !== 'AES256' && sse !== 'aws:kms')
    throw new S3Error('InvalidArgument', 'The encryption method specified is not supported', {
      ArgumentName: 'x-amz-server-side-encryption',
      ArgumentValue: sse,
    });
  if (customer)
    throw new S3Error('InvalidArgument', 'Server Side Encryption with Customer provided key is incompatible with the encryption method specified', {
      ArgumentName: 'x-amz-server-side-encryption',
      ArgumentValue: sse,
    });
  if (sse === 'AES256') return { kind: 's3' };
  return {
    kind: 'kms',
    ...(keyId !== null && keyId.trim() !== '' ? { keyId: keyId.trim() } : {}),
    ...(context !== null ? { context: checkContext(context) } : {}),
    ...(bucketKey !== null ? { bucketKey: readBucketKey(bucketKey) } : {}),
  };
}

/**
 * An encryption context as S3 takes it: base64 of a JSON object of string values. Recorded with
 * the object and echoed on its reads (docs/COMPATIBILITY.md "SSE-KMS"); anything else is 400.
 */
function checkContext(value: string): string {
  const bad = () =>
    new S3Error('InvalidArgument', 'The header x-amz-server-side-encryption-context must be base64 of a JSON object of strings', {
      ArgumentName: 'x-amz-server-side-encryption-context',
    });
  const bytes = fromBase64(value.trim());
  if (!bytes) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes));
  } catch {
    throw bad();
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || Object.values(parsed).some((v) => typeof v !== 'string')) throw bad();
  return value.trim();
}

function readBucketKey(value: string): boolean {
  const v = value.trim().toLowerCase();
  if (v !== 'true' && v !== 'false')
    throw new S3Error('InvalidArgument', 'x-amz-server-side-encryption-bucket-key-enabled must be true or false', {
      ArgumentName: 'x-amz-server-side-encryption-bucket-key-enabled',
      ArgumentValue: value,
    });
  return v === 'true';
}

/** The customer key a read gives (GetObject, HeadObject), or of a copy's source (`copySource`). */
export function readCustomerKeyHeaders(headers: Headers, copySource = false): SseRequest | null {
  return readCustomerKey(headers, copySource ? 'x-amz-copy-source-server-side-encryption-customer-' : 'x-amz-server-side-encryption-customer-');
}

function readCustomerKey(headers: Headers, prefix: string): SseRequest | null {
  const algorithm = headers.get(`${prefix}algorithm`);
  const key = headers.get(`${prefix}key`);
  const keyMD5 = headers.get(`${prefix}key-md5`);
  if (algorithm === null && key === null && keyMD5 === null) return null;
  if (algorithm === null) {
    throw new S3Error('InvalidArgument', 'Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.', {
      ArgumentName: `${prefix}algorithm`,
    });
  }
  if (algorithm !== 'AES256')
    throw new S3Error('InvalidEncryptionAlgorithmError', 'The encryption request you specified is not valid. The valid value is AES256.', {
      ArgumentName: `${prefix}algorithm`,
      ArgumentValue: algorithm,
    });
  if (key === null)
    throw new S3Error('InvalidArgument', 'Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key.', {
      ArgumentName: `${prefix}key`,
    });
  const bytes = fromBase64(key);
  if (!bytes || bytes.length !== 32)
    throw new S3Error('InvalidArgument', 'The secret key was invalid for the specified algorithm.', { ArgumentName: `${prefix}key` });
  if (keyMD5 === null)
    throw new S3Error(
      'InvalidArgument',
      'Requests specifying Server Side Encryption with Customer provided keys must provide the client calculated MD5 of the secret key.',
      { ArgumentName: `${prefix}key-MD5` },
    );
  if (toBase64(md5Of([bytes])) !== keyMD5)
    throw new S3Error('InvalidArgument', 'The calculated MD5 hash of the key did not match the hash that was provided.', { ArgumentName: `${prefix}key-MD5` });
  return { kind: 'c', key: bytes, keyMD5 };
}

/** Response headers saying how an object is encrypted, as S3 echoes them. */
export function sseResponseHeaders(record: SseRecord | undefined): Record<string, string> {
  if (!record) return {};
  if (record.kind === 's3') return { 'x-amz-server-side-encryption': 'AES256' };
  if (record.kind === 'kms')
    return {
      'x-amz-server-side-encryption': 'aws:kms',
      'x-amz-server-side-encryption-aws-kms-key-id': record.arn,
      ...(record.bucketKey ? { 'x-amz-server-side-encryption-bucket-key-enabled': 'true' } : {}),
      ...(record.context !== undefined ? { 'x-amz-server-side-encryption-context': record.context } : {}),
    };
  return { 'x-amz-server-side-encryption-customer-algorithm': 'AES256', 'x-amz-server-side-encryption-customer-key-MD5': record.keyMD5 };
}
