// A Backend wrapper that bounds every wait for a backend (issue 37): a call that neither answers
// nor makes progress within the bound its caller's context gives (`WaitBound`: the gateway derives
// it from the request being served, see worker/model/request-deadline.ts) is aborted and rejects
// with 'Timeout', so a hung backend costs a request that bound, not the adapter's own 30-60 s.
// What is bounded: get, head, delete, list and retain until they answer (a get's body streams
// afterwards at the reader's pace); a put until its answer, the bound starting again at every
// chunk the backend takes of a ChunkSource body (the engine's uploads) and paused while the
// backend waits for the next chunk (a slow client is not the backend's wait), so a long upload
// that flows is never cut; a put of bytes or a stream (journal segments, tag records) gets the
// bound plus the time its length takes at BODY_BYTES_PER_SECOND. The call's own signal and the
// bound's abort it too.
// An adapter that ignores signals (the R2 binding) is raced: the caller is answered at the bound
// while the call ends in the background.

import { isChunkSource } from './streams.ts';
import {
  BackendError,
  type Backend,
  type BlobInfo,
  type BlobRetention,
  type ByteRange,
  type ChunkSource,
  type GetOptions,
  type GetResult,
  type ListOptions,
  type ListPage,
  type PutBody,
  type PutOptions,
} from './types.ts';

/** The slowest upload a whole-body put is given time for, beyond the wait itself. */
export const BODY_BYTES_PER_SECOND = 256 * 1024;

/** How long a call made now may wait, and a signal that ends it earlier (absent: none). */
export type WaitBound = () => { ms: number; signal?: AbortSignal };

export class DeadlineBackend implements Backend {
  readonly id: string;
  readonly domain: string;

  constructor(
    readonly inner: Backend,
    private readonly bound: WaitBound,
  ) {
    this.id = inner.id;
    this.domain = inner.domain;
  }

  put(key: string, body: PutBody, length: number, opts?: PutOptions): Promise<void> {
    const chunked = isChunkSource(body);
    const sending = chunked ? 0 : Math.ceil((length / BODY_BYTES_PER_SECOND) * 1000);
    return this.bounded(opts?.signal, (signal, bound) => this.inner.put(key, chunked ? paced(body, bound) : body, length, { signal }), undefined, sending);
  }

  get(key: string, range?: ByteRange, opts?: GetOptions): Promise<GetResult> {
    return this.bounded(
      opts?.signal,
      (signal) => this.inner.get(key, range, { signal }),
      (r) => void r.body.cancel().catch(() => {}),
    );
  }

  head(key: string): Promise<BlobInfo> {
    return this.bounded(undefined, () => this.inner.head(key));
  }

  delete(key: string): Promise<void> {
    return this.bounded(undefined, () => this.inner.delete(key));
  }

  list(prefix: string, cursor?: string, opts?: ListOptions): Promise<ListPage> {
    return this.bounded(undefined, () => this.inner.list(prefix, cursor, opts));
  }

  get retain(): Backend['retain'] {
    const inner = this.inner;
    return inner.retain ? (key: string, retention: BlobRetention) => this.bounded(undefined, () => inner.retain!(key, retention)) : undefined;
  }

  /**
   * Runs `call` with a signal that aborts at the bound (paused and started again by the call's
   * `pause`/`arm`), the caller's signal or the bound's; resolves or rejects with the first of the
   * call and the bound. A result the call delivers after its signal aborted is given to `drop` (a
   * get's body is cancelled: nobody reads it).
   */
  private bounded<T>(
    callerSignal: AbortSignal | undefined,
    call: (signal: AbortSignal, bound: { pause(): void; arm(): void }) => Promise<T>,
    drop?: (late: T) => void,
    extraMs = 0,
  ): Promise<T> {
    const { ms: waitMs, signal: boundSignal } = this.bound();
    const ms = waitMs + extraMs;
    const ctl = new AbortController();
    const signals = [ctl.signal, ...(callerSignal ? [callerSignal] : []), ...(boundSignal ? [boundSignal] : [])];
    const signal = signals.length === 1 ? ctl.signal : AbortSignal.any(signals);
    let timer: ReturnType<typeof setTimeout> | undefined;
    let settled = false;
    // The bound runs from the last progress (`arm`) while not paused. Arming and pausing set no
    // timer: a put calls both once per chunk, and clearing and setting a timer there was a few
    // percent of a large PUT's Worker CPU (bench:profile). One timer checks instead, and when the
    // call is not yet due (progress since, or paused) looks again when it next could be.
    let paused = false;
    let lastProgress = Date.now();
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      const check = () => {
        timer = undefined;
        if (settled) return;
        const quiet = Date.now() - lastProgress;
        if (paused || quiet < ms) {
          timer = setTimeout(check, paused ? ms : ms - quiet);
          return;
        }
        ctl.abort(new BackendError(this.id, 'Timeout', `no answer within ${ms} ms (the request's wait bound)`));
      };
      const arm = () => {
        if (settled) return; // a body read that ends after the answer
        paused = false;
        lastProgress = Date.now();
        timer ??= setTimeout(check, ms);
      };
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      arm();
      call(signal, {
        pause: () => {
          paused = true;
        },
        arm,
      })
        .then(
          (v) => (signal.aborted && drop ? drop(v) : resolve(v)),
          (err) => reject(signal.aborted ? signal.reason : err),
        )
        .finally(() => {
          settled = true;
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
        });
    });
  }
}

/**
 * `source`, with the bound paused while the backend waits for a chunk (the body is late, not the
 * backend) and started again when it has it (progress).
 */
function paced(source: ChunkSource, bound: { pause(): void; arm(): void }): ChunkSource {
  return {
    read: async () => {
      bound.pause();
      try {
        return await source.read();
      } finally {
        bound.arm();
      }
    },
    cancel: (reason) => source.cancel(reason),
  };
}
