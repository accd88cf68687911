/**
 * The server-side encryption headers of a request (model/sse.ts), checked as S3 checks them:
 * - `x-amz-server-side-encryption`: AES256 (SSE-S3) is accepted; aws:kms and aws:kms:dsse are
 *   NotImplemented (no KMS here); anything else InvalidArgument. With SSE-C as well: InvalidArgument.
 * - SSE-C: algorithm AES256 (else InvalidEncryptionAlgorithmError), a key of 32 bytes in base64
 *   and its MD5 in base64 (a missing part, a short key or a mismatching MD5: InvalidArgument).
 * The copy-source form (`x-amz-copy-source-server-side-encryption-customer-*`) names the key of a
 * copy's source. Nothing is read or stored before these checks pass.
 */
import { S3Error } from '../model/errors.ts';
import type { SseRecord, SseRequest } from '../model/sse.ts';
import { fromBase64, toBase64 } from '../model/bytes.ts';
import { md5Of } from '../model/digest.ts';

const KMS = /^aws:kms(:dsse)?$/;

/** The SSE a write asks for (PutObject, CopyObject's target, CreateMultipartUpload, UploadPart). */
export function readSseRequest(headers: Headers): SseRequest | null {
  const sse = headers.get('x-amz-server-side-encryption');
  const customer = readCustomerKey(headers, 'x-amz-server-side-encryption-customer-');
  for (const name of ['x-amz-server-side-encryption-aws-kms-key-id', 'x-amz-server-side-encryption-context']) {
    if (headers.has(name))
      throw new S3Error(
        'NotImplemented',
        `The '${name}' header is not implemented: this gateway has no KMS (use SSE-C, or its own encryption, on by default).`,
      );
  }
  if (sse === null) return customer;
  if (KMS.test(sse))
    throw new S3Error('NotImplemented', `Server-side encryption with ${sse} is not implemented: this gateway has no KMS (AES256 and SSE-C are supported).`);
  if (sse !== 'AES256')
    throw new S3Error('InvalidArgument', 'The encryption method specified is not supported', {
      ArgumentName: 'x-amz-server-side-encryption',
      ArgumentValue: sse,
    });
  if (customer)
    throw new S3Error('InvalidArgument', 'Server Side Encryption with Customer provided key is incompatible with the encryption method specified', {
      ArgumentName: 'x-amz-server-side-encryption',
      ArgumentValue: sse,
    });
  return { kind: 's3' };
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
  return { 'x-amz-server-side-encryption-customer-algorithm': 'AES256', 'x-amz-server-side-encryption-customer-key-MD5': record.keyMD5 };
}
