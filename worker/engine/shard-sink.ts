/**
 * ShardSink: one shard's upload to one backend, fed by the writer a chunk at a time.
 *
 * The sink is the upload's ChunkSource (backends/types.ts): `write()` copies the writer's bytes
 * (a block in wasm stripe memory, a header, a footer) into one of `depth` buffers this sink owns,
 * and the backend takes them in order; a buffer comes back to the sink when the backend reads
 * the next chunk. So an upload of any size allocates `depth` buffers, once, and memory per shard
 * is bounded by them: when both are waiting for the backend, `write()` waits (backpressure).
 *
 * The upload starts at the first write, not before (a request whose body never comes opens no
 * backend request), inside `open`, which bounds how many uploads run at once (Workers allow 6
 * open subrequests per invocation: subrequests.ts).
 * A backend failure never stalls the writer: once the put rejects, the sink is marked failed and
 * further writes to it are dropped (the write quorum decides whether the unit survives).
 * A sink whose upload was stored gives its buffers to the isolate's SINK_POOL for the next sink:
 * a wide code opens k+m uploads per column unit, and two fresh block buffers for each were
 * ~120 MiB of garbage per GiB written, which V8 frees only after 64 MiB of it (BENCHMARKS.md).
 * A failed upload's buffers are not reused (the runtime may still hold one).
 */
import type { Backend, ChunkSource } from '../../backends/types.ts';
import { SINK_POOL } from './buffer-pool.ts';
import { assertLive } from '../model/lent-chunks.ts';

interface Slot {
  buffer: Uint8Array;
  len: number;
}

export class ShardSink {
  failure: unknown = null;
  /** Settles when the upload has ended: true when stored, false when it failed or was aborted. */
  readonly done: Promise<boolean>;
  private settle!: (ok: boolean) => void;
  private started = false;
  private closed = false;
  private readonly free: Uint8Array[] = [];
  private readonly filled: Slot[] = [];
  /** The chunk the backend holds; it is returned to `free` on the backend's next read. */
  private lent: Uint8Array | null = null;
  private wakeWriter: (() => void) | null = null;
  private wakeReader: (() => void) | null = null;

  constructor(
    readonly shardIndex: number,
    readonly backend: Backend,
    readonly key: string,
    private readonly length: number,
    private readonly signal: AbortSignal,
    /** Buffer size: the largest chunk the writer sends in one write (a framed block). */
    private readonly chunkBytes: number,
    /** Runs the upload when a subrequest slot is free. */
    private readonly open: (upload: () => Promise<void>) => Promise<void> = (upload) => upload(),
    private readonly depth = 2,
    /** Whether its buffers come from and go back to SINK_POOL (blocks of the policy's full size). */
    private readonly pooled = true,
  ) {
    this.done = new Promise((resolve) => (this.settle = resolve));
  }

  get ok(): boolean {
    return this.failure === null;
  }

  /**
   * Queues the bytes `parts()` returns (copied back to back) as one chunk; resolves when they are
   * copied, which may first wait for the backend to take an earlier chunk. `parts` is called only
   * then, synchronously before the copy: views of wasm memory must not be taken across an await
   * (memory growth detaches them), so the writer passes a function that takes them.
   */
  async write(parts: () => readonly Uint8Array[]): Promise<void> {
    if (!this.ok) return;
    this.start();
    while (this.ok && this.free.length === 0 && this.allocated >= this.depth) await new Promise<void>((r) => (this.wakeWriter = r));
    if (!this.ok) return;
    const views = parts();
    const len = views.reduce((n, p) => n + p.byteLength, 0);
    // A chunk larger than a block (a big header) gets a buffer of its own, once.
    const buffer = len > this.chunkBytes ? new Uint8Array(len) : (this.free.pop() ?? this.allocate());
    let at = 0;
    for (const p of views) {
      assertLive(p, `shard sink ${this.key}`);
      buffer.set(p, at);
      at += p.byteLength;
    }
    this.filled.push({ buffer, len });
    this.wake('reader');
  }

  /** No more chunks; resolves with whether the shard was stored. */
  async close(): Promise<boolean> {
    if (this.ok) {
      this.start(); // an empty shard is still uploaded
      this.closed = true;
      this.wake('reader');
    }
    return this.done;
  }

  abort(reason: unknown): void {
    if (this.ok) this.failure = reason;
    this.closed = true;
    this.wake('reader');
    this.wake('writer');
    if (!this.started) this.settle(false);
  }

  private allocated = 0;

  private allocate(): Uint8Array {
    this.allocated++;
    const pooled = this.pooled ? SINK_POOL.take(this.chunkBytes) : undefined;
    return pooled ? new Uint8Array(pooled) : new Uint8Array(this.chunkBytes);
  }

  /** The upload was stored: the runtime has read every chunk, so the buffers are free again. */
  private recycle(): void {
    if (this.lent?.byteLength === this.chunkBytes) this.free.push(this.lent);
    this.lent = null;
    const free = this.free.splice(0);
    if (this.pooled) for (const b of free) SINK_POOL.give(b.buffer as ArrayBuffer, `shard sink ${this.key}`);
  }

  private wake(who: 'reader' | 'writer'): void {
    const w = who === 'reader' ? this.wakeReader : this.wakeWriter;
    if (who === 'reader') this.wakeReader = null;
    else this.wakeWriter = null;
    w?.();
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    const source: ChunkSource = {
      read: () => this.next(),
      cancel: (reason) => {
        if (this.ok) this.failure = reason ?? new Error('the backend stopped reading');
        this.wake('writer');
      },
    };
    const upload = async () => {
      if (!this.ok) throw this.failure; // aborted while waiting for a slot
      await this.backend.put(this.key, source, this.length, { signal: this.signal });
    };
    this.open(upload).then(
      () => {
        if (this.ok) this.recycle();
        this.settle(this.ok);
      },
      (err) => {
        if (this.ok) this.failure = err;
        this.wake('writer');
        this.settle(false);
      },
    );
  }

  /** The backend's read: returns the previous chunk's buffer to the pool, hands out the next. */
  private async next(): Promise<Uint8Array | null> {
    if (this.lent) {
      if (this.lent.byteLength === this.chunkBytes) this.free.push(this.lent);
      this.lent = null;
      this.wake('writer');
    }
    while (this.filled.length === 0) {
      if (!this.ok) throw this.failure;
      if (this.closed) return null;
      await new Promise<void>((r) => (this.wakeReader = r));
    }
    if (!this.ok) throw this.failure;
    const slot = this.filled.shift()!;
    this.lent = slot.buffer;
    return slot.buffer.subarray(0, slot.len);
  }
}
