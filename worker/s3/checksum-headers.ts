/**
 * Flexible-checksum and Content-MD5 request headers, and the checksum response headers.
 * Spec: S3 "Checking object integrity": one `x-amz-checksum-{crc32,crc32c,crc64nvme,sha1,sha256}`
 * (base64 of the big-endian digest) as a header or an aws-chunked trailer;
 * `x-amz-sdk-checksum-algorithm` alone asks the server to compute; CreateMultipartUpload's
 * `x-amz-checksum-algorithm` + `x-amz-checksum-type` (CRC64NVME is FULL_OBJECT only, SHA*
 * COMPOSITE only, CRC32/CRC32C either, COMPOSITE by default).
 */
import { fromBase64 } from '../model/bytes.ts';
import type { ChecksumAlgorithm, ChecksumRequest, MultipartChecksumSpec, ObjectChecksum } from '../model/object-store.ts';
import { S3Error } from '../model/errors.ts';

export const CHECKSUM_BYTES: Readonly<Record<ChecksumAlgorithm, number>> = { CRC32: 4, CRC32C: 4, CRC64NVME: 8, SHA1: 20, SHA256: 32 };
const ALGORITHMS = Object.keys(CHECKSUM_BYTES) as ChecksumAlgorithm[];

export const checksumHeader = (alg: ChecksumAlgorithm) => `x-amz-checksum-${alg.toLowerCase()}`;
/** The element name in XML: ChecksumCRC32, ChecksumSHA256, ... */
export const checksumElement = (alg: ChecksumAlgorithm) => `Checksum${alg}`;

export function parseChecksumAlgorithm(value: string): ChecksumAlgorithm {
  const alg = ALGORITHMS.find((a) => a === value.toUpperCase());
  if (!alg) throw new S3Error('InvalidRequest', `Checksum algorithm provided is unsupported. Please try again with any of the valid types: [${ALGORITHMS.join(', ')}]`);
  return alg;
}

/** Validates a base64 value; the "-N" suffix of a composite value is accepted when `allowParts`. */
export function assertChecksumValue(alg: ChecksumAlgorithm, value: string, allowParts = false): string {
  const digest = allowParts ? value.replace(/-\d+$/, '') : value;
  if (fromBase64(digest)?.length !== CHECKSUM_BYTES[alg]) {
    throw new S3Error('InvalidRequest', `Value for ${checksumHeader(alg)} header is invalid.`);
  }
  return value;
}

/** The one x-amz-checksum-* header present, if any. */
export function readChecksumHeader(headers: Headers, allowParts = false): { algorithm: ChecksumAlgorithm; value: string } | null {
  const present = ALGORITHMS.filter((a) => headers.has(checksumHeader(a)));
  if (present.length > 1) throw new S3Error('InvalidRequest', 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.');
  if (present.length === 0) return null;
  const algorithm = present[0];
  return { algorithm, value: assertChecksumValue(algorithm, headers.get(checksumHeader(algorithm))!.trim(), allowParts) };
}

/** What a PutObject/UploadPart asks the store to verify or compute. */
export function readChecksumRequest(headers: Headers, trailer: ChecksumRequest | undefined): ChecksumRequest | null {
  const header = readChecksumHeader(headers);
  const sdkHeader = headers.get('x-amz-sdk-checksum-algorithm');
  const sdk = sdkHeader ? parseChecksumAlgorithm(sdkHeader) : null;
  const declared = header?.algorithm ?? trailer?.algorithm;
  if (header && trailer) throw new S3Error('InvalidRequest', 'Expecting a single checksum: got both a header and a trailer.');
  if (sdk && declared && sdk !== declared) {
    throw new S3Error('InvalidRequest', `Value for x-amz-sdk-checksum-algorithm header is invalid: ${sdkHeader} does not match ${declared}.`);
  }
  if (header) return { algorithm: header.algorithm, expected: header.value };
  if (trailer) return trailer;
  return sdk ? { algorithm: sdk, expected: null } : null;
}

/** Content-MD5 (base64 of 16 bytes) or null; anything else is InvalidDigest. */
export function readContentMD5(headers: Headers): string | null {
  const value = headers.get('content-md5');
  if (value === null) return null;
  if (fromBase64(value)?.length !== 16) throw new S3Error('InvalidDigest');
  return value.trim();
}

export function readMultipartChecksumSpec(headers: Headers): MultipartChecksumSpec | null {
  const algHeader = headers.get('x-amz-checksum-algorithm');
  const typeHeader = headers.get('x-amz-checksum-type')?.toUpperCase();
  if (typeHeader !== undefined && typeHeader !== 'COMPOSITE' && typeHeader !== 'FULL_OBJECT') {
    throw new S3Error('InvalidRequest', 'Value for x-amz-checksum-type header is invalid.');
  }
  if (!algHeader) {
    if (typeHeader) throw new S3Error('InvalidRequest', 'The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.');
    return null;
  }
  const algorithm = parseChecksumAlgorithm(algHeader);
  const type = typeHeader ?? (algorithm === 'CRC64NVME' ? 'FULL_OBJECT' : 'COMPOSITE');
  const fullOnly = algorithm === 'CRC64NVME';
  const compositeOnly = algorithm === 'SHA1' || algorithm === 'SHA256';
  if ((fullOnly && type !== 'FULL_OBJECT') || (compositeOnly && type !== 'COMPOSITE')) {
    throw new S3Error('InvalidRequest', `The ${type} checksum type cannot be used with the ${algorithm.toLowerCase()} checksum algorithm.`);
  }
  return { algorithm, type };
}

/** x-amz-checksum-<alg> (+ x-amz-checksum-type when `withType`). */
export function checksumResponseHeaders(checksum: ObjectChecksum | null, withType = true): Record<string, string> {
  if (!checksum) return {};
  const headers: Record<string, string> = { [checksumHeader(checksum.algorithm)]: checksum.value };
  if (withType) headers['x-amz-checksum-type'] = checksum.type;
  return headers;
}
