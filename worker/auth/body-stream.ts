/**
 * The verified request body as the gate hands it on: one pull-based stream over the raw body,
 * read with BYOB into one buffer of the request's own that is reused for every piece (a body of
 * any size allocates nothing per piece: workerd's default reads yield ~4 KiB chunks, and a fresh
 * buffer per piece piles up garbage that V8 frees only after 64 MiB of it), each piece run
 * through the scheme's verifier (`step`) and its output handed on.
 *
 * Contract with the consumer: a chunk is valid until the consumer reads again. The stream has
 * no queue (high-water mark 0): a piece is read only when the consumer asks for more, after it
 * is done with the previous one, so the buffer is never overwritten under it. A consumer that
 * keeps chunks copies them. `finish` runs at the end of the raw body and may throw (a failed
 * check): the stream then errors instead of ending.
 * When the client goes away mid-upload the platform errors the raw body (workerd: "Network
 * connection lost."); handed on as is, that would be an InternalError logged as a bug. Any error
 * of the raw body becomes `clientAborted` (model/errors.ts): IncompleteBody to the client, a
 * client abort in the log. Errors of the verifiers themselves are handed on as they are.
 * A client that sends nothing for `idleMs` while the gateway waits for its body gets S3's 400
 * RequestTimeout (never a 503 about backends: backend uploads open only once body bytes are
 * there, and they are aborted with the request). A piece is handed on once MIN_PIECE_BYTES have
 * arrived (or the body ended), so a client slower than MIN_PIECE_BYTES per `idleMs` (3 KB/s at
 * the default) is taken for an idle one.
 * A stalled body is cut sooner when it holds what others wait for (issue 37: twelve stalled
 * uploads of one key held the coding budget for 20 s each while another tenant's PUT waited):
 * with `stall`, a body that sends nothing for `stall.ms` while `stall.contended()` (its request
 * holds budget others are queued for) gets RequestTimeout then, checked every `stall.ms`.
 */
import { clientAborted, S3Error } from '../model/errors.ts';
import { lend, type LentStream } from '../model/lent-chunks.ts';

const PIECE_BYTES = 1 << 20;
const MIN_PIECE_BYTES = 64 << 10;
/** The smallest read buffer: a body declared smaller is still read into this much. */
const MIN_BUFFER_BYTES = 4 << 10;
export const DEFAULT_CLIENT_IDLE_MS = 20_000;

/** workerd's BYOB readers have readAtLeast (fill the view at least this far); Node's do not. */
type ByobReader = ReadableStreamBYOBReader & {
  readAtLeast?: (min: number, view: Uint8Array) => Promise<ReadableStreamReadResult<Uint8Array>>;
};

export type BodyStep = (piece: Uint8Array) => Uint8Array[] | Promise<Uint8Array[]>;

/** The shorter limit of a stalled body whose request holds what others wait for. */
export interface BodyStall {
  ms: number;
  /** Whether the request's holdings are wanted by others now (RequestScope.contended). */
  contended(): boolean;
}

export function verifyingBody(
  raw: ReadableStream<Uint8Array>,
  step: BodyStep,
  finish: () => void | Promise<void>,
  idleMs = DEFAULT_CLIENT_IDLE_MS,
  stall?: BodyStall,
  /**
   * The raw body's declared length (Content-Length), when known: a smaller body is read into a
   * buffer of its own size instead of PIECE_BYTES. Allocating and dropping 1 MiB per request was
   * about 8% of a 64 KiB PUT's Worker CPU (bench:profile, issue 42).
   */
  declaredBytes: number | null = null,
): LentStream {
  const bufferBytes = declaredBytes === null ? PIECE_BYTES : Math.min(PIECE_BYTES, Math.max(MIN_BUFFER_BYTES, declaredBytes));
  let byob: ByobReader | null = null;
  let plain: ReadableStreamDefaultReader<Uint8Array> | null = null;
  let buffer: ArrayBuffer | null = null;
  // The raw body is locked at the first read, not before: a request whose body nobody reads (an
  // admin call, an error answered first) leaves it unlocked, for the platform to drain.
  const lock = () => {
    if (byob || plain) return;
    try {
      byob = raw.getReader({ mode: 'byob' }) as ByobReader;
    } catch {
      plain = raw.getReader();
    }
  };
  const read = async (): Promise<Uint8Array | null> => {
    lock();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let check: ReturnType<typeof setInterval> | undefined;
    const idle = new Promise<never>((_, reject) => {
      const giveUp = (why: string) => {
        reject(new S3Error('RequestTimeout', why));
        (byob ?? plain)!.cancel('client idle').catch(() => {});
      };
      timer = setTimeout(() => giveUp(`The request body sent nothing for ${idleMs / 1000} s.`), idleMs);
      if (stall && stall.ms < idleMs) {
        check = setInterval(() => {
          if (stall.contended()) giveUp(`The request body sent nothing for ${stall.ms / 1000} s while other requests waited for the memory it holds.`);
        }, stall.ms);
      }
    });
    try {
      return await Promise.race([readRaw(), idle]);
    } catch (err) {
      throw err instanceof S3Error ? err : clientAborted(err);
    } finally {
      clearTimeout(timer);
      clearInterval(check);
    }
  };
  const readRaw = async (): Promise<Uint8Array | null> => {
    if (plain) {
      const r = await plain.read();
      return r.done ? null : r.value;
    }
    buffer ??= new ArrayBuffer(bufferBytes); // at the first read: a request still waiting holds none
    const view = new Uint8Array(buffer);
    const r: { done: boolean; value?: Uint8Array } =
      typeof byob!.readAtLeast === 'function' ? await byob!.readAtLeast(Math.min(MIN_PIECE_BYTES, view.length), view) : await byob!.read(view);
    if (r.value) buffer = r.value.buffer as ArrayBuffer; // the same memory, handed back
    if (r.value && r.value.length > 0) return r.value;
    return r.done ? null : new Uint8Array(0);
  };
  // Its chunks are views of the one reused buffer: lent until the next read (model/lent-chunks.ts).
  return lend(
    new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          try {
            for (;;) {
              const piece = await read();
              if (piece === null) {
                // Unlocked at its end, so the platform sees a consumed body (workerd otherwise logs
                // "Failed to drain the unused request body" when the response goes out).
                (byob ?? plain)!.releaseLock();
                await finish();
                controller.close();
                return;
              }
              const out = await step(piece);
              if (out.length === 0) continue;
              for (const chunk of out) controller.enqueue(chunk);
              return;
            }
          } catch (err) {
            // A failed check: the rest of the body is not wanted (and a locked body cannot be drained).
            (byob ?? plain)?.cancel(err).catch(() => {});
            throw err;
          }
        },
        cancel: (reason) => (byob ?? plain ?? raw).cancel(reason),
      },
      { highWaterMark: 0 },
    ),
    'the request body',
  );
}
