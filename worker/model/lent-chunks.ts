/**
 * Lent chunks: the one contract for every byte stream the engine and the object store hand out.
 *
 * A `LentStream`'s chunks are lent, not given: a chunk is valid until the consumer's next read of
 * the stream, and never after the stream has ended, failed or been cancelled. The producer owns
 * the memory behind it and reuses it (readers' block buffers, the isolate's pools, WebCrypto's
 * records detached once read: engine/buffer-pool.ts, engine/shard-reader.ts, engine/sealed-read.ts).
 * A consumer that keeps a chunk longer (collects a journal segment, buffers a record across reads)
 * copies it first: `keep(chunk)`, or `readAll(stream)` for the whole body.
 *
 * Nothing in TypeScript can stop a consumer from pushing a Uint8Array into an array, so the
 * contract is enforced at run time by poison mode (a debug setting; the test suite runs with it
 * on, see test/support/poison-setup.ts and SHARDGATE_POISON_BUFFERS):
 * - every chunk a lent stream hands out is a loan of its own, and at the consumer's next read (or
 *   the stream's end) the loan is filled with POISON and detached: a kept chunk then reads as
 *   empty, and copying it throws; `keep`, `readAll` and `assertLive` name the owner that took it back;
 * - a buffer given back to a pool is filled with POISON, and any chunk found holding POISON
 *   (handed on, hashed or served) is reported with the owner that gave its buffer back.
 * Off (production), `lend` returns the stream as it is: no copy, no cost.
 */

/** A stream whose chunks are lent until the consumer's next read (see the file's comment). */
export type LentStream = ReadableStream<Uint8Array> & { readonly lentChunks: true };

/** 16 bytes repeated over poisoned memory: "sg poisoned buf!" with its first byte flipped high. */
const POISON = Uint8Array.from([0xf3, 0x67, 0x20, 0x70, 0x6f, 0x69, 0x73, 0x6f, 0x6e, 0x65, 0x64, 0x20, 0x62, 0x75, 0x66, 0x21]);

let poisonOn = false;
/** Loans now out (poison mode): a lent stream over another hands them on as they are. */
const liveLoans = new WeakSet<ArrayBufferLike>();
/** Who let each poisoned or detached buffer go, for the error that names it. */
const letGo = new WeakMap<ArrayBufferLike, string>();
/** Poisoned buffers and chunks served: what poison mode saw (tests read it). */
export const poisonStats = { loans: 0, revoked: 0, poisonedBuffers: 0, caught: 0 };

/** Turns poison mode on or off for this isolate (tests, and SHARDGATE_POISON_BUFFERS=1). */
export function setPoisonMode(on: boolean): void {
  poisonOn = on;
}

export function poisonMode(): boolean {
  return poisonOn;
}

/** A chunk used after its owner let it go: a bug in the consumer named by `where`. */
export class ChunkOwnershipError extends Error {
  override readonly name = 'ChunkOwnershipError';
}

/**
 * A stream's cancel reason when a chunk it lent may still be held (the runtime's unfinished write
 * to a client that left): its producer must not reuse the buffers, only drop them.
 */
export class ChunkMayBeHeld extends Error {
  override readonly name = 'ChunkMayBeHeld';
  constructor(readonly reason: unknown) {
    super('a chunk of the stream may still be held', { cause: reason });
  }
}

/**
 * Poison mode: fills `buffer` with POISON and notes who let it go (`owner`). For a buffer given
 * back to a pool: no one may read it until it is taken again.
 */
export function poisonBuffer(buffer: ArrayBufferLike, owner: string): void {
  if (!poisonOn || buffer.byteLength === 0) return;
  fillPoison(new Uint8Array(buffer));
  letGo.set(buffer, owner);
  poisonStats.poisonedBuffers++;
}

/** Poison mode: `buffer` is being taken from a pool; it must still be all POISON (else someone wrote it after giving it back). */
export function claimPoisoned(buffer: ArrayBuffer, taker: string): void {
  if (!poisonOn) return;
  const owner = letGo.get(buffer);
  if (owner === undefined) return;
  const bytes = new Uint8Array(buffer);
  for (let i = 0; i < bytes.length; i += 4093) {
    if (bytes[i] !== POISON[i % 16]) {
      poisonStats.caught++;
      throw new ChunkOwnershipError(`${taker}: a pooled buffer was written after ${owner} gave it back (byte ${i})`);
    }
  }
  letGo.delete(buffer);
}

/**
 * Notes that `buffer` was transferred away (detached) by `owner`: a chunk of it used afterwards
 * is reported with that name (poison mode).
 */
export function noteDetached(buffer: ArrayBufferLike, owner: string): void {
  if (poisonOn) letGo.set(buffer, owner);
}

/**
 * Throws unless `chunk` may still be read: its buffer not detached, and not holding POISON
 * (checked at its two ends: a poisoned buffer is poisoned whole). `where` names the consumer.
 */
export function assertLive(chunk: Uint8Array, where: string): void {
  if (!poisonOn) return;
  const buffer = chunk.buffer;
  if (isDetached(buffer)) {
    poisonStats.caught++;
    throw new ChunkOwnershipError(`${where}: a chunk was used after ${letGo.get(buffer) ?? 'its owner'} let it go (its buffer is detached)`);
  }
  if (chunk.length >= 16 && holdsPoison(chunk, 0) && holdsPoison(chunk, chunk.length - 16)) {
    poisonStats.caught++;
    throw new ChunkOwnershipError(`${where}: a chunk holds poison: ${letGo.get(buffer) ?? 'its owner'} gave its buffer back while the chunk was still lent`);
  }
}

/** Whether `bytes` holds POISON at `at` (16 bytes, in the phase of its buffer). */
function holdsPoison(bytes: Uint8Array, at: number): boolean {
  const phase = bytes.byteOffset + at;
  for (let i = 0; i < 16; i++) if (bytes[at + i] !== POISON[(phase + i) % 16]) return false;
  return true;
}

/** Bytes of POISON in `bytes` at their buffer's phase: what a test counts in a served body. */
export function countPoisonRuns(bytes: Uint8Array): number {
  let runs = 0;
  for (let at = (16 - (bytes.byteOffset % 16)) % 16; at + 16 <= bytes.length; at += 16) if (holdsPoison(bytes, at)) runs++;
  return runs;
}

function fillPoison(bytes: Uint8Array): void {
  const phase = bytes.byteOffset % 16;
  for (let i = 0; i < Math.min(16, bytes.length); i++) bytes[i] = POISON[(phase + i) % 16]!;
  for (let filled = 16; filled < bytes.length; filled *= 2) bytes.copyWithin(filled, 0, Math.min(filled, bytes.length - filled));
}

function isDetached(buffer: ArrayBufferLike): boolean {
  const b = buffer as ArrayBuffer & { detached?: boolean };
  // Node 20 lacks `detached`; a detached buffer's byteLength is 0 there (so is an empty one, which holds nothing).
  return b.detached === true || (b.detached === undefined && b.byteLength === 0);
}

/** Detaches `buffer` (its memory moves to a clone that is dropped): views of it read as empty and copying them throws. */
function detach(buffer: ArrayBuffer): void {
  structuredClone(buffer, { transfer: [buffer] });
}

/**
 * Declares `stream` lent by `owner` (see the file's comment). Poison mode: each chunk handed out
 * is a loan copied from the stream's own, checked for poison, and taken back (poisoned, detached)
 * at the consumer's next read, when the stream ends, fails or is cancelled.
 */
export function lend(stream: ReadableStream<Uint8Array>, owner: string): LentStream {
  if (!poisonOn) return stream as LentStream;
  const reader = stream.getReader();
  let loan: Uint8Array | null = null;
  let count = 0;
  const takeBack = (when: string) => {
    if (!loan) return;
    const buffer = loan.buffer as ArrayBuffer;
    liveLoans.delete(buffer);
    fillPoison(loan);
    detach(buffer);
    letGo.set(buffer, `${owner} (chunk ${count}, taken back at ${when})`);
    poisonStats.revoked++;
    loan = null;
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        takeBack("the consumer's next read");
        let r: ReadableStreamReadResult<Uint8Array>;
        try {
          r = await reader.read();
        } catch (err) {
          takeBack("the stream's failure");
          controller.error(err);
          return;
        }
        if (r.done) {
          takeBack("the stream's end");
          return controller.close();
        }
        assertLive(r.value, `${owner}, handing chunk ${count + 1} on`);
        // A loan of a lent stream under this one: its own stream takes it back at the next read.
        if (liveLoans.has(r.value.buffer)) return controller.enqueue(r.value);
        loan = r.value.slice();
        liveLoans.add(loan.buffer);
        count++;
        poisonStats.loans++;
        controller.enqueue(loan);
      },
      async cancel(reason) {
        // A loan the runtime may still be writing out is left alone (and to the collector).
        if (reason instanceof ChunkMayBeHeld) loan = null;
        else takeBack("the stream's cancellation");
        await reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  ) as LentStream;
}

/** A copy of `chunk` the caller owns (a lent chunk kept past the next read must be one). */
export function keep(chunk: Uint8Array, where = 'keep'): Uint8Array {
  assertLive(chunk, where);
  return chunk.slice();
}

/**
 * The whole of `stream` in one buffer the caller owns, each chunk copied as it is read (within
 * its loan). `expected`, when known, sizes the buffer once; more bytes than it fail.
 */
export async function readAll(stream: ReadableStream<Uint8Array>, where: string, expected?: number): Promise<Uint8Array> {
  const reader = stream.getReader();
  let out = new Uint8Array(expected ?? 64 * 1024);
  let at = 0;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      assertLive(r.value, where);
      if (at + r.value.length > out.length) {
        if (expected !== undefined) throw new Error(`${where}: the stream holds more than its ${expected} bytes`);
        const grown = new Uint8Array(Math.max(out.length * 2, at + r.value.length));
        grown.set(out.subarray(0, at));
        out = grown;
      }
      out.set(r.value, at);
      at += r.value.length;
    }
  } catch (err) {
    await reader.cancel(err).catch(() => {});
    throw err;
  }
  return at === out.length ? out : out.subarray(0, at);
}
