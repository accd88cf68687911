/**
 * The object's bytes as a response body of known length, streamed under the request's ownership
 * (request-scope.ts): the one way a store body leaves the gateway.
 *
 * The store's chunks are valid only until its next read (it reuses its buffers), so each is
 * written, and its write awaited (the runtime has taken the bytes), before the next is read.
 * workerd sends a plain stream chunked; its FixedLengthStream sends Content-Length, fed by a pump
 * that the request keeps alive (`ResponseOwner.stream`) until it settles. The pump ends, and
 * cancels the store body (which gives back its budget and its backend streams), on every way a
 * download ends: read to the end; the client gone (a write fails, or the request's signal
 * aborts); an error from the store; no progress for RESPONSE_IDLE_MS (a client connected but
 * no longer reading); or no progress for STALLED_MS while other requests wait for the budget this
 * download holds (a client that stops reading must not keep others out: 17 stalled readers would
 * otherwise fill an isolate's budget and every coded request would wait, then get SlowDown).
 * Without FixedLengthStream (Node), chunks are copied into a pull stream whose cancel does the same.
 */

import { assertLive, ChunkMayBeHeld } from '../model/lent-chunks.ts';

/** What the response body needs of the request that owns it (RequestScope). */
export interface ResponseOwner {
  readonly signal?: AbortSignal;
  /** Whether budget the request holds is wanted by requests waiting for it. */
  contended(): boolean;
  /** `body` is streamed by `pump`: the request ends when it settles. */
  stream(pump: Promise<void>, body: ReadableStream<Uint8Array>): void;
}

/** A download whose client takes nothing for this long is ended (S3 drops idle connections too). */
export const RESPONSE_IDLE_MS = 5 * 60_000;
/** ... or for this long while others wait for its budget (well within their 30 s wait). */
export const STALLED_MS = 10_000;
const CHECK_MS = 1_000;

class ResponseIdle extends Error {
  constructor(ms: number, contended: boolean) {
    super(`the client took no bytes for ${ms} ms${contended ? ' while other requests waited for coding memory' : ''}`);
  }
}

export function responseBody(body: ReadableStream<Uint8Array>, length: number, owner: ResponseOwner): ReadableStream<Uint8Array> {
  if (typeof FixedLengthStream !== 'function') return copyingBody(body, owner);
  const sized = new FixedLengthStream(length);
  owner.stream(pump(body, sized.writable, owner), sized.readable);
  return sized.readable;
}

async function pump(body: ReadableStream<Uint8Array>, out: WritableStream<Uint8Array>, owner: ResponseOwner): Promise<void> {
  const reader = body.getReader();
  const writer = out.getWriter();
  const gone = clientGone(owner);
  /** The runtime holds the chunk of a write until the write settles. */
  let writing = false;
  try {
    for (let r = await Promise.race([reader.read(), gone.promise]); !r.done; r = await Promise.race([reader.read(), gone.promise])) {
      assertLive(r.value, 'the response pump');
      writing = true;
      const written = writer.write(r.value).finally(() => (writing = false));
      await Promise.race([written, gone.promise, gone.idle()]);
    }
    await writer.close();
  } catch (err) {
    // A client gone or idle may leave a write unfinished, its chunk still the runtime's: the
    // store then ends its reads without reusing their buffers (ChunkMayBeHeld), else as usual.
    await reader.cancel(writing ? new ChunkMayBeHeld(err) : err).catch(() => {});
    await writer.abort(err).catch(() => {});
  } finally {
    gone.dispose();
  }
}

/**
 * A promise that rejects when the client is gone, and one per write that rejects when the write
 * takes too long: RESPONSE_IDLE_MS, or STALLED_MS while the owner's budget is contended.
 */
function clientGone(owner: ResponseOwner) {
  const { signal } = owner;
  let fail!: (err: unknown) => void;
  const promise = new Promise<never>((_, reject) => (fail = reject));
  promise.catch(() => {});
  const onAbort = () => fail(signal!.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort);
  let timer: ReturnType<typeof setInterval> | undefined;
  return {
    promise,
    idle(): Promise<never> {
      clearInterval(timer);
      const since = Date.now();
      return new Promise<never>((_, reject) => {
        timer = setInterval(() => {
          const ms = Date.now() - since;
          const contended = ms >= STALLED_MS && owner.contended();
          if (contended || ms >= RESPONSE_IDLE_MS) reject(new ResponseIdle(ms, contended));
        }, CHECK_MS);
      });
    },
    dispose() {
      clearInterval(timer);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}

function copyingBody(body: ReadableStream<Uint8Array>, owner: ResponseOwner): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const copy = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const r = await reader.read();
          if (r.done) {
            controller.close();
            finish();
          } else controller.enqueue(r.value.slice());
        } catch (err) {
          controller.error(err);
          finish();
        }
      },
      async cancel(reason) {
        await reader.cancel(reason).catch(() => {});
        finish();
      },
    },
    { highWaterMark: 0 },
  );
  owner.stream(finished, copy);
  return copy;
}
