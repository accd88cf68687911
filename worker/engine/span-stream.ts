/**
 * SpanStream: one data shard's rows of a column read, fetched ahead of the consumer. A healthy
 * column read (column-reader.ts) keeps the span it sends and the next ones streaming at once, so
 * a column's time to first byte and a backend's own pace overlap with sending the one before,
 * instead of adding up one column after the other.
 *
 * Each stream is one ranged GET (a ShardReader) over its rows, verified block by block, and
 * holds at most `AHEAD_BLOCKS` verified blocks that the consumer has not taken, copied into
 * buffers of its own that it allocates once and reuses (AHEAD_BLOCKS + 1: one more for the
 * block the consumer holds). A block handed out is valid until the consumer takes the next one,
 * as with ShardReader: no allocation per block, which left to the garbage collector grew a
 * 1 GiB read's RSS by the object's size. Rows are taken in order. A failure (missing, unreachable, corrupt) is
 * kept and thrown to the consumer when it asks for the row that failed, never before: the rows
 * before it are good. `cancel()` ends the GET; it may be called at any time and more than once.
 */
import { READ_POOL } from './buffer-pool.ts';
import { ShardReadError, type ShardReader } from './shard-reader.ts';

/** Verified blocks a stream may hold beyond the consumer. */
export const AHEAD_BLOCKS = 2;
/**
 * Data shards a healthy column read streams ahead of the one it sends (each one open request)
 * when their backends answer fast: none. Stream and reader buffers come from the isolate's
 * READ_POOL (buffer-pool.ts), which took a 1 GiB 10+4 GET from +92 MiB RSS to +50 MiB (the whole
 * PUT and GET, from idle); with 2 ahead the same run still grew to +65 (8+3) / +77 (10+4) MiB,
 * climbing through the GET, and was slower over local backends (10+4 GET 129 vs 153 MiB/s): a
 * backend that answers in a few milliseconds has nothing to hide.
 */
export const COLUMN_READ_AHEAD = 0;
/**
 * A backend whose reads have taken this long to answer (engine/backend-latency.ts) is far: a
 * column read opens that backend's next span one ahead (FAR_READ_AHEAD), so its time to first
 * byte passes while the span before it is sent instead of after. Over backends 40 ms away a
 * healthy 16 MiB 8+3 GET read its eight columns one round trip after the other (34 MB/s against
 * 4+2's 101: BENCHMARKS.md, issue 42 sixth stop).
 */
export const FAR_BACKEND_MS = 10;
export const FAR_READ_AHEAD = 1;
/** The most spans a column read streams ahead of the one it sends, whatever its backends (the budget counts them). */
export const MAX_READ_AHEAD = Math.max(COLUMN_READ_AHEAD, FAR_READ_AHEAD);

export class SpanStream {
  private readonly blocks: Uint8Array[] = [];
  /** Buffers not holding a queued block or the one the consumer has (allocated on first need). */
  private readonly free: ArrayBuffer[] = [];
  /** The block the consumer holds: its buffer goes back to `free` at the next take. */
  private held: Uint8Array | null = null;
  /** Row of blocks[0]. */
  private firstQueued: number;
  private failure: ShardReadError | null = null;
  private failedRow = Infinity;
  /** The consumer waiting for a block, or the pump waiting for room (never both: see AHEAD_BLOCKS). */
  private wake: (() => void) | null = null;
  private closed = false;
  /** Settles once the first row is in, or the stream has failed or been cancelled. */
  readonly started: Promise<void>;
  private markStarted!: () => void;

  constructor(
    readonly shard: number,
    private readonly reader: ShardReader,
    private readonly from: number,
    private readonly to: number,
    /** The unit's block size: every buffer is this long, so streams can share them (READ_POOL). */
    private readonly blockSize: number,
  ) {
    this.firstQueued = from;
    this.started = new Promise<void>((resolve) => (this.markStarted = resolve));
    void this.pump(from);
  }

  private signal(): void {
    this.markStarted();
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private async pump(from: number): Promise<void> {
    for (let j = from; j <= this.to; j++) {
      while (this.blocks.length >= AHEAD_BLOCKS && !this.closed) await new Promise<void>((r) => (this.wake = r));
      if (this.closed) return this.markStarted();
      try {
        const block = await this.reader.readBlock(j);
        if (this.closed) return this.markStarted();
        this.blocks.push(this.copy(block));
      } catch (err) {
        this.failure = err instanceof ShardReadError ? err : new ShardReadError(this.shard, 'unavailable', String(err));
        this.failedRow = j;
        return this.signal();
      }
      this.signal();
    }
  }

  /** A copy of `block` in a buffer of this stream's (one is free: at most AHEAD_BLOCKS are queued, one held). */
  private copy(block: Uint8Array): Uint8Array {
    let buffer = this.free.pop();
    if (!buffer || buffer.byteLength < block.length) {
      const size = Math.max(block.length, this.blockSize);
      buffer = READ_POOL.take(size) ?? new ArrayBuffer(size);
    }
    const out = new Uint8Array(buffer, 0, block.length);
    out.set(block);
    return out;
  }

  /**
   * Row j's verified block (rows are taken in order), valid until the next take; throws the
   * stream's failure at the row that failed.
   */
  async take(j: number): Promise<Uint8Array> {
    if (this.held) this.free.push(this.held.buffer as ArrayBuffer);
    this.held = null;
    for (;;) {
      if (j < this.firstQueued) throw new Error(`SpanStream: row ${j} was taken already`);
      while (this.blocks.length && this.firstQueued < j) {
        this.free.push(this.blocks.shift()!.buffer as ArrayBuffer); // a row the consumer skips
        this.firstQueued++;
        this.signal();
      }
      if (this.blocks.length) {
        const block = this.blocks.shift()!;
        this.firstQueued++;
        this.held = block;
        this.signal();
        return block;
      }
      if (j >= this.failedRow) throw this.failure!;
      if (this.closed) throw new ShardReadError(this.shard, 'unavailable', 'reader closed');
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  /** The stream's failure, if it has failed before yielding any row (the shard is simply bad). */
  failedAtStart(): ShardReadError | null {
    return this.failedRow === this.firstQueued && this.blocks.length === 0 && this.firstQueued === this.from ? this.failure : null;
  }

  /**
   * Ends the stream. Its buffers go to the isolate's READ_POOL: the consumer calls this only when
   * the block it holds has been consumed (the next pull of the body, or the body's end, error or
   * cancellation), and the pump only copies into a buffer synchronously. `recycle` false: the
   * consumer may still hold a block (ChunkMayBeHeld), so nothing goes to the pool.
   */
  cancel(recycle = true): void {
    if (this.closed) return;
    this.closed = true;
    if (!recycle) {
      // A chunk of a block may still be held: the buffers are dropped, not pooled.
      this.reader.cancel();
      this.blocks.length = 0;
      this.free.length = 0;
      this.held = null;
      return this.signal();
    }
    this.reader.recycle();
    const buffers = [...this.free, ...this.blocks.map((b) => b.buffer as ArrayBuffer), ...(this.held ? [this.held.buffer as ArrayBuffer] : [])];
    this.blocks.length = 0;
    this.free.length = 0;
    this.held = null;
    for (const b of buffers) if (b.byteLength === this.blockSize) READ_POOL.give(b, `span stream of shard ${this.shard}`);
    this.signal();
  }
}
