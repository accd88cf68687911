/**
 * The checksum request and response headers of the front door, read with the model's vocabulary
 * (worker/model/checksums.ts).
 * Spec: S3 "Checking object integrity": one `x-amz-checksum-{crc32,crc32c,crc64nvme,sha1,sha256}`
 * as a header or an aws-chunked trailer; `x-amz-sdk-checksum-algorithm` alone asks the server to
 * compute; CreateMultipartUpload's `x-amz-checksum-algorithm` + `x-amz-checksum-type` (CRC64NVME
 * is FULL_OBJECT only, SHA* COMPOSITE only, CRC32/CRC32C either, COMPOSITE by default).
 */
import { CHECKSUM_ALGORITHMS, assertChecksumValue, checksumHeaderName, parseChecksumAlgorithm, type ChecksumAlgorithm } from '../model/checksums.ts';
import { S3Error } from '../model/errors.ts';
import type { ChecksumRequest, MultipartChecksumSpec, ObjectChecksum } from '../model/object-store.ts';

/** The one x-amz-checksum-* header present, if any. */
export function readChecksumHeader(headers: Headers, allowParts = false): { algorithm: ChecksumAlgorithm; value: string } | null {
  const present = CHECKSUM_ALGORITHMS.filter((a) => headers.has(checksumHeaderName(a)));
  if (present.length > 1) throw new S3Error('InvalidRequest', 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.');
  if (present.length === 0) return null;
  const algorithm = present[0];
  return { algorithm, value: assertChecksumValue(algorithm, headers.get(checksumHeaderName(algorithm))!.trim(), 'header', allowParts) };
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
  const headers: Record<string, string> = { [checksumHeaderName(checksum.algorithm)]: checksum.value };
  if (withType) headers['x-amz-checksum-type'] = checksum.type;
  return headers;
}
