// Stream helpers shared by the backend adapters: byte-exact length checks for puts, shaping of
// read bodies (skip/take, error mapping, early-end detection), and buffer <-> stream glue.
// WHATWG streams only, so the same code runs on workerd and Node 20.
// Known gap: chunk sizes are whatever the source and the reader's buffer make them: callers must
// not assume a chunk size.

import type { ByteRange, ChunkSource, PutBody } from './types.ts';

/** Throws RangeError unless `range` is a pair of non-negative safe integers (a caller bug). */
export function assertValidRange(range: ByteRange): void {
  const ok = (n: number) => Number.isSafeInteger(n) && n >= 0;
  if (!ok(range.offset) || !ok(range.length)) {
    throw new RangeError(`invalid byte range {offset: ${range.offset}, length: ${range.length}}`);
  }
}

export function assertValidLength(length: number): void {
  if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`invalid length ${length}`);
}

/** Why a checked put body failed: it had the wrong length, or the caller's own stream errored
 *  (then the error is the caller's, not the backend's). */
export type BodyFailure = { reason: 'length'; message: string } | { reason: 'source'; error: unknown };

/** Wraps a put body so that a byte count other than `length` errors the stream, and lets the
 *  adapter ask afterwards why an upload failed (fetch and R2 re-wrap stream errors). */
export function withLengthCheck(body: ReadableStream<Uint8Array>, length: number, onChunk?: () => void) {
  const reader = body.getReader();
  let seenBytes = 0;
  let failure: BodyFailure | undefined;
  const fail = (ctl: ReadableStreamDefaultController<Uint8Array>, f: BodyFailure) => {
    failure = f;
    ctl.error(f.reason === 'length' ? new Error(f.message) : f.error);
    if (f.reason === 'length') reader.cancel().catch(() => {});
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(ctl) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch (error) {
          return fail(ctl, { reason: 'source', error });
        }
        if (next.done) {
          if (seenBytes === length) return ctl.close();
          return fail(ctl, { reason: 'length', message: `body ended after ${seenBytes} of the declared ${length} bytes` });
        }
        seenBytes += next.value.byteLength;
        onChunk?.();
        const tooLong = { reason: 'length', message: `body is longer than the declared ${length} bytes` } as const;
        if (seenBytes > length) return fail(ctl, tooLong);
        if (seenBytes === length) {
          // Look ahead before handing over the last byte: an HTTP client stops reading at
          // Content-Length, so a longer body would otherwise be stored cut short.
          try {
            for (let after = await reader.read(); !after.done; after = await reader.read()) {
              if (after.value.byteLength > 0) return fail(ctl, tooLong);
            }
          } catch (error) {
            return fail(ctl, { reason: 'source', error });
          }
          ctl.enqueue(next.value);
          return ctl.close();
        }
        ctl.enqueue(next.value);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, failure: () => failure };
}

export interface ShapeOptions {
  /** Bytes of the source to drop first (a server that ignored or widened our Range). */
  skip?: number;
  /** Bytes to deliver; the source is cancelled once they are out. */
  take: number;
  /** Turns a source error into the error the consumer sees (a BackendError). */
  mapError: (err: unknown) => unknown;
  /** The error for a source that ends before `skip + take` bytes. */
  onShort: (deliveredBytes: number) => unknown;
  /** Called on every source chunk (idle timers). */
  onProgress?: () => void;
  /** Called once when the body is finished, failed or cancelled (to clear timers). */
  onDone?: () => void;
}

/** A body's own read buffer: a reader asking for more is served in several reads (readAtLeast). */
const SCRATCH_BYTES = 64 * 1024;

/**
 * A pull-through view of `source` yielding exactly `take` bytes after `skip`, or an error. It is
 * a byte stream: a consumer that reads with BYOB into its own buffer gets the source's bytes
 * copied into it from one scratch buffer this body reuses (no allocation per read; a runtime's
 * native reader may not hand a partial view's buffer back whole, so the consumer's view is
 * never given to the source); a default reader gets fresh pieces of up to 64 KiB.
 */
export function shapeBody(source: ReadableStream<Uint8Array>, o: ShapeOptions): ReadableStream<Uint8Array> {
  let byob: ByobReader | null = null;
  let plain: ReadableStreamDefaultReader<Uint8Array> | null = null;
  try {
    byob = source.getReader({ mode: 'byob' }) as ByobReader;
  } catch {
    plain = source.getReader();
  }
  let skipBytes = o.skip ?? 0;
  let leftBytes = o.take;
  let rest: Uint8Array | null = null; // unread part of a plain reader's last chunk
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    o.onDone?.();
  };
  let scratch = new ArrayBuffer(0);
  /** The next source bytes, up to `max`, as a view valid until the next call; null at the end. */
  const readNext = async (wanted: number): Promise<Uint8Array | null> => {
    const max = Math.min(wanted, SCRATCH_BYTES);
    if (!rest || rest.length === 0) {
      if (byob) {
        if (scratch.byteLength < max) scratch = new ArrayBuffer(max); // once, at most SCRATCH_BYTES
        const view = new Uint8Array(scratch, 0, max);
        const r: { done: boolean; value?: Uint8Array } = typeof byob.readAtLeast === 'function' ? await byob.readAtLeast(max, view) : await byob.read(view);
        if (r.value) scratch = r.value.buffer as ArrayBuffer;
        if (!r.value || r.value.length === 0) return r.done ? null : new Uint8Array(0);
        rest = r.value;
      } else {
        const r = await plain!.read();
        if (r.done) return null;
        rest = r.value;
      }
    }
    const out = rest.subarray(0, Math.min(max, rest.length));
    rest = rest.subarray(out.length);
    return out;
  };
  const underlying: UnderlyingByteSource = {
    type: 'bytes',
    autoAllocateChunkSize: 64 * 1024,
    async pull(ctl: ReadableByteStreamController) {
      const req = ctl.byobRequest!;
      try {
        for (;;) {
          if (leftBytes === 0) {
            finish();
            ctl.close();
            req.respond(0);
            (byob ?? plain)!.cancel().catch(() => {}); // drop any surplus the server sent
            return;
          }
          const view = req.view as Uint8Array;
          const got = await readNext(skipBytes > 0 ? skipBytes : Math.min(view.byteLength, leftBytes));
          if (got === null) {
            finish();
            ctl.error(o.onShort(o.take - leftBytes));
            return;
          }
          o.onProgress?.();
          if (skipBytes > 0) {
            skipBytes -= got.length; // a server that ignored or widened our range
            continue;
          }
          if (got.length === 0) continue;
          view.set(got);
          leftBytes -= got.length;
          req.respond(got.length);
          return;
        }
      } catch (err) {
        finish();
        ctl.error(o.mapError(err));
      }
    },
    cancel(reason) {
      finish();
      return (byob ?? plain)!.cancel(reason);
    },
  };
  return new ReadableStream(underlying) as ReadableStream<Uint8Array>;
}

/** Reads a stream to its end into one fresh buffer (never a chunk of the source). */
export async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let totalBytes = 0;
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
    totalBytes += value.byteLength;
  }
  const out = new Uint8Array(totalBytes);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** A stream over a copy of `bytes`, in chunks of at most `chunkBytes`, pulled on demand. */
export function bytesToStream(bytes: Uint8Array, chunkBytes = 64 * 1024): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(ctl) {
        if (at >= bytes.byteLength) return ctl.close();
        const end = Math.min(at + chunkBytes, bytes.byteLength);
        ctl.enqueue(bytes.slice(at, end));
        at = end;
        if (at >= bytes.byteLength) ctl.close();
      },
    },
    { highWaterMark: 0 },
  );
}

/** workerd's BYOB readers have readAtLeast (fill the view at least this far); Node's do not. */
type ByobReader = ReadableStreamBYOBReader & {
  readAtLeast?: (min: number, view: Uint8Array) => Promise<ReadableStreamReadResult<Uint8Array>>;
};

export function isChunkSource(body: PutBody): body is ChunkSource {
  return !(body instanceof Uint8Array) && !(body instanceof ReadableStream);
}

/** A ChunkSource as a stream of copies of its chunks (for consumers that keep what they read). */
export function chunkSourceStream(source: ChunkSource): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(ctl) {
        const chunk = await source.read();
        if (chunk === null) return ctl.close();
        ctl.enqueue(chunk.slice());
      },
      cancel: (reason) => source.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/** A put body as a ReadableStream (ChunkSource chunks copied); bytes stay bytes. */
export function putBodyStream(body: ReadableStream<Uint8Array> | ChunkSource): ReadableStream<Uint8Array> {
  return body instanceof ReadableStream ? body : chunkSourceStream(body);
}

/** A put body that failed on our side of the upload: wrong length, or the caller's source broke. */
export class PutBodyError extends Error {
  constructor(readonly failure: BodyFailure) {
    super(failure.reason === 'length' ? failure.message : 'the put body failed', failure.reason === 'source' ? { cause: failure.error } : undefined);
  }
}

/**
 * Feeds a ChunkSource into a runtime-native writable (the writable half of workerd's
 * FixedLengthStream) with no copy and no allocation: each write resolves once the runtime has
 * consumed the chunk, and only then is the next one read, so the source may reuse its buffer.
 * (Measured in workerd for R2 puts and fetch bodies: a buffer rewritten after every resolved
 * write arrives intact.) Rejects with PutBodyError when the source breaks or does not yield
 * exactly `length` bytes, else with the writable's own error; cancels the source on failure.
 */
export async function pumpChunks(
  source: ChunkSource,
  writable: WritableStream<Uint8Array>,
  length: number,
  onChunk?: () => void,
  beforeAbort?: (err: unknown) => void,
): Promise<void> {
  const writer = writable.getWriter();
  let seenBytes = 0;
  try {
    for (;;) {
      let chunk: Uint8Array | null;
      try {
        chunk = await source.read();
      } catch (error) {
        throw new PutBodyError({ reason: 'source', error });
      }
      if (chunk === null) break;
      seenBytes += chunk.byteLength;
      if (seenBytes > length) throw new PutBodyError({ reason: 'length', message: `body is longer than the declared ${length} bytes` });
      if (chunk.byteLength > 0) await writer.write(chunk);
      onChunk?.();
    }
    if (seenBytes !== length) throw new PutBodyError({ reason: 'length', message: `body ended after ${seenBytes} of the declared ${length} bytes` });
    await writer.close();
  } catch (err) {
    source.cancel(err);
    // Stop the upload that reads the stream first (a fetch's signal): aborting only the stream
    // under a native upload leaves workerd an internal rejection it logs as uncaught.
    beforeAbort?.(err);
    await writer.abort(err).catch(() => {});
    throw err;
  }
}

/** Runs a native put and the pump that feeds it; a failure of our body wins over the put's own error. */
export async function putWithPump(put: Promise<unknown>, pump: Promise<void>): Promise<void> {
  const [p, q] = await Promise.allSettled([put, pump]);
  if (q.status === 'rejected' && q.reason instanceof PutBodyError) throw q.reason;
  if (p.status === 'rejected') throw p.reason;
  if (q.status === 'rejected') throw q.reason;
}
