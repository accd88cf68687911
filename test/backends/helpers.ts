// Helpers shared by the backend tests: deterministic bytes, chunked streams, byte comparison
// that stays fast on megabytes, BackendError kind checks, UTF-8 key order, full listings.

import { expect } from 'vitest';
import { isBackendError, type Backend, type BackendErrorKind, type ChunkSource } from '../../backends/types.ts';
import { readAll } from '../../backends/streams.ts';

/**
 * An S3 backend's options for a test that brings its own fetch or server: nothing listens at the
 * endpoint, and the keys sign for no one.
 */
export const OFFLINE_S3 = {
  domain: 'test',
  endpoint: 'http://127.0.0.1:9',
  bucket: 'b',
  region: 'us-east-1',
  accessKeyId: 'AK',
  secretAccessKey: 'SK',
} as const;

/** Deterministic test bytes: distinct per `seed`, no short period. */
export function pattern(bytes: number, seed = 1): Uint8Array {
  const out = new Uint8Array(bytes);
  let x = seed * 2654435761 || 1;
  for (let i = 0; i < bytes; i++) {
    x ^= x << 13; // xorshift32
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** A stream of `bytes` cut into the given chunk sizes, repeated until the end. */
/**
 * A ChunkSource over `bytes` that, like the engine's shard sinks, reuses ONE buffer: every read
 * overwrites the chunk the backend got before, so a backend that keeps a chunk past its next read
 * stores wrong bytes. `failAt`: the read that throws instead (the producer broke).
 */
export function reusingSource(bytes: Uint8Array, chunkBytes = 65536, failAt?: number): ChunkSource & { cancelled: unknown } {
  const buffer = new Uint8Array(chunkBytes);
  let at = 0;
  let reads = 0;
  const source = {
    cancelled: undefined as unknown,
    async read(): Promise<Uint8Array | null> {
      if (++reads === failAt) throw new Error('source broke');
      if (at >= bytes.byteLength) return null;
      buffer.fill(0xee); // scribble over the previous chunk first
      const n = Math.min(chunkBytes, bytes.byteLength - at);
      buffer.set(bytes.subarray(at, at + n));
      at += n;
      return buffer.subarray(0, n);
    },
    cancel(reason: unknown) {
      source.cancelled = reason ?? true;
    },
  };
  return source;
}

export function chunked(bytes: Uint8Array, chunkSizes: number[] = [1000, 7, 65536, 1]): ReadableStream<Uint8Array> {
  let at = 0;
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (at >= bytes.byteLength) return ctl.close();
      const end = Math.min(bytes.byteLength, at + chunkSizes[i++ % chunkSizes.length]);
      ctl.enqueue(bytes.slice(at, end));
      at = end;
    },
  });
}

export async function expectKind(promise: Promise<unknown>, kind: BackendErrorKind, backendId?: string): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isBackendError(err), `expected BackendError ${kind}, got ${String(err)}`).toBe(true);
  expect((err as { kind: string }).kind).toBe(kind);
  if (backendId !== undefined) expect((err as { backendId: string }).backendId).toBe(backendId);
}

/** Byte equality that stays fast on megabytes (vitest's deep equality walks element by element)
 *  and names the first differing offset. */
export function expectSameBytes(got: Uint8Array, want: Uint8Array): void {
  expect(got.byteLength, 'byte length').toBe(want.byteLength);
  const at = got.findIndex((v, i) => v !== want[i]);
  expect(at, `first differing byte offset`).toBe(-1);
}

const utf8 = new TextEncoder();
export function byUtf8(a: string, b: string): number {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

export async function listAll(backend: Backend, prefix: string, limit?: number): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const page = await backend.list(prefix, cursor, { limit });
    keys.push(...page.entries.map((e) => e.key));
    cursor = page.cursor;
    if (cursor === undefined) return keys;
  }
  throw new Error('listing did not end within 1000 pages');
}

export async function getBytes(backend: Backend, key: string, range?: { offset: number; length: number }) {
  const { body, size } = await backend.get(key, range);
  return { bytes: await readAll(body), size };
}
