// In-memory Backend for tests and local dev: a Map of byte arrays, copied on the way in and out
// so that callers can never alias stored bytes. Follows the Backend contract in types.ts exactly
// (it is the reference the contract suite is first proven against).
// Known gaps: unbounded memory; a list cursor is simply the last key returned.

import {
  BackendError,
  type Backend,
  type BlobInfo,
  type ByteRange,
  type GetOptions,
  type GetResult,
  type ListOptions,
  type ListPage,
  type PutBody,
  type PutOptions,
} from './types.ts';
import { assertValidLength, assertValidRange, bytesToStream, putBodyStream, readAll, withLengthCheck } from './streams.ts';

interface StoredBlob {
  bytes: Uint8Array;
  lastModified: Date;
}

export interface MemoryBackendOptions {
  id: string;
  domain: string;
}

const utf8 = new TextEncoder();

/** Orders keys by their UTF-8 bytes, as S3 and R2 do (UTF-16 order differs above U+D7FF). */
export function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

export class MemoryBackend implements Backend {
  readonly id: string;
  readonly domain: string;
  private readonly blobs = new Map<string, StoredBlob>();

  constructor(opts: MemoryBackendOptions) {
    this.id = opts.id;
    this.domain = opts.domain;
  }

  async put(key: string, body: PutBody, length: number, opts?: PutOptions): Promise<void> {
    assertValidLength(length);
    opts?.signal?.throwIfAborted();
    let bytes: Uint8Array;
    if (body instanceof Uint8Array) {
      if (body.byteLength !== length) throw this.corrupt(`body has ${body.byteLength} bytes, declared ${length}`);
      bytes = body.slice();
    } else {
      const checked = withLengthCheck(putBodyStream(body), length);
      try {
        bytes = await readAll(checked.stream);
      } catch (err) {
        const failure = checked.failure();
        throw failure?.reason === 'length' ? this.corrupt(failure.message) : err; // else the caller's stream failed
      }
    }
    opts?.signal?.throwIfAborted();
    this.blobs.set(key, { bytes, lastModified: new Date() });
  }

  async get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> {
    if (range) assertValidRange(range);
    opts?.signal?.throwIfAborted();
    const blob = this.blobs.get(key);
    if (!blob) throw new BackendError(this.id, 'NotFound', `no blob at ${JSON.stringify(key)}`);
    const size = blob.bytes.byteLength;
    if (!range) return { body: bytesToStream(blob.bytes), size };
    if (range.offset + range.length > size) {
      throw this.corrupt(`range ${range.offset}+${range.length} is past the end of ${size} bytes`);
    }
    return { body: bytesToStream(blob.bytes.subarray(range.offset, range.offset + range.length)), size };
  }

  async head(key: string): Promise<BlobInfo> {
    const blob = this.blobs.get(key);
    if (!blob) throw new BackendError(this.id, 'NotFound', `no blob at ${JSON.stringify(key)}`);
    return { size: blob.bytes.byteLength, lastModified: blob.lastModified };
  }

  async delete(key: string): Promise<void> {
    this.blobs.delete(key);
  }

  async list(prefix: string, cursor?: string, opts?: ListOptions): Promise<ListPage> {
    const limit = Math.min(Math.max(opts?.limit ?? 1000, 1), 1000);
    const keys = [...this.blobs.keys()].filter((k) => k.startsWith(prefix) && (cursor === undefined || compareUtf8(k, cursor) > 0)).sort(compareUtf8);
    const page = keys.slice(0, limit);
    const entries = page.map((key) => {
      const blob = this.blobs.get(key)!;
      return { key, size: blob.bytes.byteLength, lastModified: blob.lastModified };
    });
    return { entries, cursor: keys.length > limit ? page[page.length - 1] : undefined };
  }

  /** Test aid: number of blobs held. */
  get blobCount(): number {
    return this.blobs.size;
  }

  private corrupt(message: string): BackendError {
    return new BackendError(this.id, 'Corrupt', message);
  }
}
