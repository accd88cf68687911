/** Stream helpers for the auth tests: bodies fed in chosen splits, read back whole. */

import type { AwsChunkedDecoder } from '../../../worker/auth/aws-chunked.ts';
import { verifyingBody } from '../../../worker/auth/body-stream.ts';
import { prng } from '../../support/random.ts';

/** Piece lengths covering `total` bytes: random in 1..maxPiece (seeded, so a failing split can
 *  be replayed). */
export function randomSplit(total: number, seed: number, maxPiece: number): number[] {
  const next = prng(seed);
  const out: number[] = [];
  for (let left = total; left > 0; ) {
    const n = Math.min(left, 1 + Math.floor(next() * maxPiece));
    out.push(n);
    left -= n;
  }
  return out;
}

/** A stream of `bytes` cut into pieces of the given lengths (the last piece takes the rest). */
export function streamOf(bytes: Uint8Array, pieces: number[] = [bytes.length]): ReadableStream<Uint8Array> {
  const parts: Uint8Array[] = [];
  let off = 0;
  for (const n of pieces) {
    if (off >= bytes.length) break;
    parts.push(bytes.slice(off, off + n));
    off += n;
  }
  if (off < bytes.length) parts.push(bytes.slice(off));
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < parts.length) controller.enqueue(parts[i++]);
      else controller.close();
    },
  });
}

/** Reads a stream to its end; rejects with the stream's error. */
/** Reads a stream to its end. Each piece is copied: the gate's body reuses its buffer, so a
 *  chunk is valid only until the next read (worker/auth/body-stream.ts). */
export async function readAll(stream: ReadableStream<Uint8Array>): Promise<{ bytes: Uint8Array; pieces: Uint8Array[] }> {
  const pieces: Uint8Array[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    pieces.push(value.slice());
  }
  return { bytes: concat(pieces), pieces };
}

export function concat(pieces: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of pieces) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Bytes as a string of code points 0-255 (framing is ASCII; data bytes survive the round trip). */
export function latin1(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return s;
}

export function fromLatin1(s: string): Uint8Array {
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

export function hexToBase64(hex: string): string {
  return btoa(String.fromCharCode(...(hex.match(/../g) ?? []).map((h) => parseInt(h, 16))));
}

/** `n` bytes of `char`. */
export function fill(n: number, char: string): Uint8Array {
  return new Uint8Array(n).fill(char.charCodeAt(0));
}

/** The decoder run over `source` as the gate runs it (worker/auth/body-stream.ts). */
export function decodeStream(source: ReadableStream<Uint8Array>, decoder: AwsChunkedDecoder): ReadableStream<Uint8Array> {
  return verifyingBody(
    source,
    (piece) => decoder.push(piece),
    () => decoder.finish(),
  );
}
