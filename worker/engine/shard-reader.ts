/**
 * ShardReader: one ranged read of consecutive blocks of one shard file, checked block by block.
 * Each framed block (checksum + block) is read into a buffer this reader owns and reuses for every
 * block (with BYOB from the backend's body: no allocation per block) and its XXH64 (seeded with
 * row and shard index) verified. Any
 * failure (backend error, short body, checksum mismatch) surfaces as ShardReadError, which the
 * unit reader answers by using other shards.
 */
import type { Backend } from '../../backends/types.ts';
import { checksums } from '../../coder-wasm/index.ts';
import type { BackendLatency } from './backend-latency.ts';
import { blockSeed } from '../format/shard-file.ts';
import { BLOCK_CHECKSUM_BYTES, type UnitLayout } from '../format/layout.ts';
import { READ_POOL } from './buffer-pool.ts';
import { noteDetached } from '../model/lent-chunks.ts';
import { errorMessage } from '../model/error-message.ts';

export class ShardReadError extends Error {
  override readonly name = 'ShardReadError';
  constructor(
    readonly shardIndex: number,
    readonly reason: 'unavailable' | 'missing' | 'corrupt',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`shard ${shardIndex}: ${message}`, options);
  }
}

/** workerd's BYOB readers have readAtLeast (fill the view at least this far); Node's do not. */
type ByobReader = ReadableStreamBYOBReader & {
  readAtLeast?: (min: number, view: Uint8Array) => Promise<ReadableStreamReadResult<Uint8Array>>;
};

export class ShardReader {
  private byob: ByobReader | null = null;
  private plain: ReadableStreamDefaultReader<Uint8Array> | null = null;
  private opening: Promise<void> | null = null;
  /** Set by cancel(): no byte may land in stripe memory afterwards (the slot may be rebuilt). */
  private closed = false;
  private readonly abort = new AbortController();
  /** The framed block being read; reused (with BYOB, transferred back and forth) for every block. */
  private buffer: ArrayBuffer;
  /** A read into `buffer` is under way (the runtime may be writing into it). */
  private reading = false;
  /** The row last read (named when a view of its block is used after the next read). */
  private lastRow = -1;
  /** A plain reader's unread rest of its last chunk. */
  private rest: Uint8Array = new Uint8Array(0);
  /** The last row of the range has been read: the backend has sent every byte asked of it. */
  private rangeRead = false;

  constructor(
    readonly shardIndex: number,
    private readonly backend: Backend,
    private readonly key: string,
    private readonly layout: UnitLayout,
    readonly firstStripe: number,
    readonly lastStripe: number,
    private readonly salt: bigint,
    /** Where time-to-first-byte and failures of this backend are recorded, if anywhere. */
    private readonly latency?: BackendLatency,
  ) {
    const size = BLOCK_CHECKSUM_BYTES + Math.min(layout.blockSize, layout.blockLen(firstStripe) || layout.blockSize);
    this.buffer = READ_POOL.take(size) ?? new ArrayBuffer(size);
  }

  private open(): Promise<void> {
    const l = this.layout;
    const offset = l.blockOffset(this.firstStripe);
    const length = l.blockOffset(this.lastStripe) + BLOCK_CHECKSUM_BYTES + l.blockLen(this.lastStripe) - offset;
    const asked = performance.now();
    return (this.opening ??= this.backend.get(this.key, { offset, length }, { signal: this.abort.signal }).then(
      (r) => {
        this.latency?.record(this.backend.id, performance.now() - asked);
        if (this.closed) {
          r.body.cancel().catch(() => {});
          throw new ShardReadError(this.shardIndex, 'unavailable', 'reader closed');
        }
        try {
          this.byob = r.body.getReader({ mode: 'byob' }) as ByobReader;
        } catch {
          this.plain = r.body.getReader();
        }
      },
      (err) => {
        if (!this.closed) this.latency?.recordFailure(this.backend.id);
        throw this.fail(err);
      },
    ));
  }

  private fail(err: unknown): ShardReadError {
    if (err instanceof ShardReadError) return err;
    const kind = (err as { kind?: string }).kind;
    const reason = kind === 'NotFound' ? 'missing' : kind === 'Corrupt' ? 'corrupt' : 'unavailable';
    return new ShardReadError(this.shardIndex, reason, errorMessage(err), { cause: err });
  }

  /** Fills the first `len` bytes of the reader's buffer from the shard; returns a view of them. */
  private async readFramed(len: number): Promise<Uint8Array> {
    if (this.buffer.byteLength < len) this.buffer = new ArrayBuffer(len); // the longest block, once
    // The last block's views go stale now: detach them (a zero-copy move of the memory), so a
    // consumer that kept one sees an empty view, never the next block's bytes. (A BYOB read
    // below detaches them anyway; a plain reader's copy would not.)
    const last = this.buffer;
    if (!this.byob) this.buffer = structuredClone(this.buffer, { transfer: [this.buffer] });
    noteDetached(last, `shard reader ${this.key} (its block ${this.lastRow} detached at the next block's read)`);
    let got = 0;
    while (got < len) {
      let n: number;
      if (this.byob) {
        const view = new Uint8Array(this.buffer, got, len - got);
        const r: { done: boolean; value?: Uint8Array } =
          typeof this.byob.readAtLeast === 'function' ? await this.byob.readAtLeast(len - got, view) : await this.byob.read(view);
        if (r.value) this.buffer = r.value.buffer as ArrayBuffer;
        if (this.closed) throw new ShardReadError(this.shardIndex, 'unavailable', 'reader closed');
        n = r.value?.length ?? 0;
        if (r.done && got + n < len) throw new ShardReadError(this.shardIndex, 'corrupt', 'shard is shorter than its layout');
      } else {
        if (this.rest.length === 0) {
          const r = await this.plain!.read();
          if (this.closed) throw new ShardReadError(this.shardIndex, 'unavailable', 'reader closed');
          if (r.done) throw new ShardReadError(this.shardIndex, 'corrupt', 'shard is shorter than its layout');
          this.rest = r.value;
        }
        n = Math.min(len - got, this.rest.length);
        new Uint8Array(this.buffer, got, n).set(this.rest.subarray(0, n));
        this.rest = this.rest.subarray(n);
      }
      got += n;
    }
    return new Uint8Array(this.buffer, 0, len);
  }

  /**
   * Reads row `s`'s block and verifies it (XXH64, seeded with row and shard index). Rows come in
   * order. Returns the block as a view of this reader's buffer: verified, and valid until the
   * next readBlock (the buffer is reused), so a healthy read can hand it on without a copy; a
   * caller that decodes copies it into stripe memory.
   */
  async readBlock(s: number): Promise<Uint8Array> {
    this.reading = true;
    try {
      await this.open();
      const b = this.layout.blockLen(s);
      const framed = await this.readFramed(BLOCK_CHECKSUM_BYTES + b);
      this.lastRow = s;
      if (s === this.lastStripe) this.rangeRead = true;
      const want = new DataView(framed.buffer, framed.byteOffset).getBigUint64(0, true);
      const block = framed.subarray(BLOCK_CHECKSUM_BYTES);
      if (checksums().xxh64(block, blockSeed(this.salt, s, this.shardIndex)) !== want) {
        throw new ShardReadError(this.shardIndex, 'corrupt', `block ${s} fails its checksum`);
      }
      return block;
    } catch (err) {
      const failure = this.fail(err);
      this.cancel();
      throw failure;
    } finally {
      this.reading = false;
    }
  }

  cancel(): void {
    if (this.closed) return;
    this.closed = true;
    // A call that has sent its whole range has nothing left to stop, and the abort (an error
    // with its stack, and the signal's listeners) was a few percent of a small GET's Worker CPU
    // (bench:profile): every healthy read cancels its readers once their blocks are in.
    if (!this.rangeRead) this.abort.abort(new ShardReadError(this.shardIndex, 'unavailable', 'reader closed'));
    (this.byob ?? this.plain)?.cancel().catch(() => {});
    this.opening ??= Promise.reject(new ShardReadError(this.shardIndex, 'unavailable', 'reader closed'));
    this.opening.catch(() => {});
  }

  /**
   * Cancels, and gives this reader's buffer to the isolate's READ_POOL for the next reader. Only
   * for a caller that holds no view of any block it was given (it copied them, or sent them on
   * and they were consumed); a read still under way keeps the buffer out of the pool.
   */
  recycle(): void {
    this.cancel();
    if (this.reading || this.buffer.byteLength !== BLOCK_CHECKSUM_BYTES + this.layout.blockSize) return;
    READ_POOL.give(this.buffer, `shard reader ${this.key}`);
    this.buffer = new ArrayBuffer(0);
  }
}
