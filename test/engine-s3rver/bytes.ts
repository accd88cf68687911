/**
 * Deterministic pseudo-random test bodies (AES-128-CTR keystream of a seed), produced in pieces
 * so that a test never holds a large body: `bodyStream` for uploads, `bodyBytes` for small
 * objects and `bodySlice` for the expected bytes of a range.
 */
import { createCipheriv, createHash } from 'node:crypto';
import { Readable } from 'node:stream';

const PIECE = 1 << 20;
const ZEROS = Buffer.alloc(PIECE);

function keystream(seed: string, offset = 0) {
  const key = createHash('sha256').update(seed).digest().subarray(0, 16);
  const iv = Buffer.alloc(16);
  // CTR: the counter is the block index of `offset` (big-endian, low 8 bytes here).
  iv.writeBigUInt64BE(BigInt(Math.floor(offset / 16)), 8);
  const cipher = createCipheriv('aes-128-ctr', key, iv);
  if (offset % 16) cipher.update(ZEROS.subarray(0, offset % 16));
  return (n: number): Buffer => cipher.update(n <= PIECE ? ZEROS.subarray(0, n) : Buffer.alloc(n));
}

/** Bytes [offset, offset + size) of body `seed`. */
export function bodySlice(seed: string, offset: number, size: number): Buffer {
  return keystream(seed, offset)(size);
}

export function bodyBytes(seed: string, size: number): Buffer {
  return bodySlice(seed, 0, size);
}

export function sha256Of(seed: string, size: number): string {
  const next = keystream(seed);
  const h = createHash('sha256');
  for (let done = 0; done < size; done += PIECE) h.update(next(Math.min(PIECE, size - done)));
  return h.digest('hex');
}

export interface BodyStream {
  stream: Readable;
  /** sha256 of everything produced so far (complete once the stream has ended). */
  digest(): string;
  produced(): number;
}

/**
 * Body `seed` of `size` bytes as a Readable with backpressure. `pauseAt`: once this many bytes
 * are out, waits for `resume` before producing more (to act in the middle of an upload).
 */
export function bodyStream(seed: string, size: number, gate?: { pauseAt: number; reached: () => void; resume: Promise<void> }): BodyStream {
  const next = keystream(seed);
  const hash = createHash('sha256');
  let produced = 0;
  let gated = gate !== undefined;
  const stream = new Readable({
    highWaterMark: PIECE,
    read() {
      if (gated && produced >= gate!.pauseAt) {
        gated = false;
        gate!.reached();
        void gate!.resume.then(() => produce(this));
        return;
      }
      produce(this);
    },
  });
  function produce(s: Readable): void {
    if (produced >= size) return void s.push(null);
    let n = Math.min(PIECE, size - produced);
    if (gated) n = Math.min(n, gate!.pauseAt - produced);
    const piece = next(n);
    hash.update(piece);
    produced += n;
    s.push(piece);
  }
  return { stream, digest: () => hash.copy().digest('hex'), produced: () => produced };
}
