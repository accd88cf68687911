/**
 * BodyDigest: the one pass of hashing an object body needs, MD5 for the ETag plus the client's
 * flexible checksum, fed chunk by chunk by whoever reads the body (the engine's writers, the XML
 * reader), and the check of what the client declared at the end (Content-MD5, the checksum
 * header or aws-chunked trailer). A store verifies before it commits, so a body that fails never
 * becomes visible.
 * Spec: S3 PutObject/UploadPart (Content-MD5 -> BadDigest, x-amz-checksum-* -> BadDigest,
 * short or long body -> IncompleteBody).
 */
import { createHash, type Hash } from 'node:crypto';
import { base64Equal, fromBase64, toBase64, toHex } from './bytes.ts';
import { badDigest, createHasher, type Hasher } from './checksums.ts';
import { S3Error } from './errors.ts';
import type { ChecksumRequest, ObjectChecksum } from './object-store.ts';

export interface BodyDigestResult {
  size: number;
  md5: Uint8Array;
  etag: string; // quoted hex MD5
  checksum: ObjectChecksum | null;
  /** The checksum's raw big-endian digest (what a shard footer records), or null. */
  checksumDigest: Uint8Array | null;
}

export class BodyDigest {
  private readonly md5: Hash = createHash('md5');
  private readonly hasher: Hasher | null;
  private done: BodyDigestResult | null = null;
  size = 0;

  constructor(private readonly checksum: ChecksumRequest | null) {
    this.hasher = checksum ? createHasher(checksum.algorithm) : null;
  }

  update(chunk: Uint8Array): void {
    this.size += chunk.byteLength;
    this.md5.update(chunk);
    this.hasher?.update(chunk);
  }

  /** The digests of every byte seen. Ends hashing: later updates are a bug. */
  result(): BodyDigestResult {
    if (this.done) return this.done;
    const md5 = new Uint8Array(this.md5.digest());
    const value = this.hasher?.digestBase64() ?? null;
    const checksum = this.checksum && value !== null ? { algorithm: this.checksum.algorithm, type: 'FULL_OBJECT' as const, value } : null;
    this.done = { size: this.size, md5, etag: `"${toHex(md5)}"`, checksum, checksumDigest: value === null ? null : fromBase64(value) };
    return this.done;
  }

  /** BadDigest unless Content-MD5 and the declared checksum (a trailer's, once it has arrived) match. */
  async verify(contentMd5?: string | null): Promise<BodyDigestResult> {
    const r = this.result();
    if (contentMd5 != null && !base64Equal(contentMd5, toBase64(r.md5))) {
      throw new S3Error('BadDigest', 'The Content-MD5 you specified did not match what we received.');
    }
    const expected = this.checksum ? await this.checksum.expected : null;
    if (expected != null && r.checksum && !base64Equal(expected, r.checksum.value)) throw badDigest(r.checksum.algorithm);
    return r;
  }
}

export interface DigestOptions {
  contentLength?: number | null;
  contentMD5?: string | null;
  checksum: ChecksumRequest | null;
}

/** Reads `body` to its end, hashing it and calling `sink` with each chunk; throws S3Error on any mismatch. */
export async function digestBody(
  body: ReadableStream<Uint8Array>,
  options: DigestOptions,
  sink: (chunk: Uint8Array) => void | Promise<void>,
): Promise<BodyDigestResult> {
  const digest = new BodyDigest(options.checksum);
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
      digest.update(next.value);
      if (options.contentLength != null && digest.size > options.contentLength) {
        throw new S3Error('IncompleteBody', 'The request body is longer than the declared Content-Length.');
      }
      await sink(next.value);
    }
  } finally {
    reader.releaseLock(); // never cancel(): see limitBody
  }
  if (options.contentLength != null && digest.size !== options.contentLength) throw new S3Error('IncompleteBody');
  return digest.verify(options.contentMD5);
}

/** MD5 of the given byte arrays, concatenated (multipart ETag). */
export function md5Of(parts: Uint8Array[]): Uint8Array {
  const h = createHash('md5');
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
}
