/**
 * BodyDigest: reads an object body once, hashing every byte in the same pass (MD5 for the ETag,
 * plus the requested flexible checksum), hands each chunk to a sink, and verifies the declared
 * length, Content-MD5 and checksum at the end. A store calls this before it commits, so a body
 * that fails verification never becomes visible.
 * Spec: S3 PutObject/UploadPart (Content-MD5 -> BadDigest, x-amz-checksum-* -> BadDigest,
 * short body -> IncompleteBody).
 */
import { createHash } from 'node:crypto';
import { S3Error } from './errors.ts';
import { createHasher } from './checksums.ts';
import { base64Equal, toBase64, toHex } from './bytes.ts';
import type { ChecksumRequest, ObjectChecksum } from './object-store.ts';

export interface DigestOptions {
  contentLength?: number | null;
  contentMD5?: string | null;
  checksum: ChecksumRequest | null;
}

export interface BodyDigestResult {
  size: number;
  md5: Uint8Array;
  etag: string; // quoted hex MD5
  checksum: ObjectChecksum | null;
}

/** Reads `body` to its end, calling `sink` with each chunk; throws S3Error on any mismatch. */
export async function digestBody(
  body: ReadableStream<Uint8Array>,
  options: DigestOptions,
  sink: (chunk: Uint8Array) => void | Promise<void>,
): Promise<BodyDigestResult> {
  const md5 = createHash('md5');
  const hasher = options.checksum ? createHasher(options.checksum.algorithm) : null;
  let size = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch (err) {
        throw err instanceof S3Error ? err : new S3Error('IncompleteBody');
      }
      if (next.done) break;
      const chunk = next.value;
      size += chunk.byteLength;
      if (options.contentLength != null && size > options.contentLength) {
        throw new S3Error('IncompleteBody', 'The request body is longer than the declared Content-Length.');
      }
      md5.update(chunk);
      hasher?.update(chunk);
      await sink(chunk);
    }
  } finally {
    reader.releaseLock(); // never cancel(): see limitBody
  }
  if (options.contentLength != null && size !== options.contentLength) throw new S3Error('IncompleteBody');

  const md5Bytes = new Uint8Array(md5.digest());
  if (options.contentMD5 != null && !base64Equal(options.contentMD5, toBase64(md5Bytes))) {
    throw new S3Error('BadDigest', 'The Content-MD5 you specified did not match what we received.');
  }
  let checksum: ObjectChecksum | null = null;
  if (options.checksum && hasher) {
    const value = hasher.digestBase64();
    const expected = await options.checksum.expected;
    if (expected != null && !base64Equal(expected, value)) {
      const alg = options.checksum.algorithm;
      throw new S3Error('BadDigest', `The ${alg} you specified did not match the calculated checksum.`);
    }
    checksum = { algorithm: options.checksum.algorithm, type: 'FULL_OBJECT', value };
  }
  return { size, md5: md5Bytes, etag: `"${toHex(md5Bytes)}"`, checksum };
}

/** MD5 of the given byte arrays, concatenated (multipart ETag). */
export function md5Of(parts: Uint8Array[]): Uint8Array {
  const h = createHash('md5');
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
}
