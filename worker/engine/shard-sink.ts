/**
 * ShardSink: one shard's write to one backend, as a stream of known length. Writes honour the
 * backend's backpressure, and a backend failure never stalls the others: once its put rejects,
 * the sink is marked failed and further writes to it are dropped (the write quorum decides).
 */
import type { Backend } from '../../backends/types.ts';

export class ShardSink {
  failure: unknown = null;
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly done: Promise<boolean>;

  constructor(
    readonly shardIndex: number,
    readonly backend: Backend,
    readonly key: string,
    length: number,
    signal: AbortSignal,
  ) {
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(undefined, { highWaterMark: 2 });
    this.writer = writable.getWriter();
    this.done = backend.put(key, readable, length, { signal }).then(
      () => true,
      (err) => {
        this.failure = err;
        this.writer.abort(err).catch(() => {});
        return false;
      },
    );
  }

  get ok(): boolean {
    return this.failure === null;
  }

  /** Resolves when the chunk is queued (or the sink has failed). Chunks must not be reused. */
  async write(chunk: Uint8Array): Promise<void> {
    if (!this.ok) return;
    try {
      // `ready` rejects once the backend stops reading (its put failed and aborted the writer):
      // that is this shard's failure, not the write's; the quorum decides. (No race against a
      // promise that may never settle: each such race would stay in memory until it does.)
      await this.writer.ready;
    } catch (err) {
      if (this.ok) this.failure = err;
      return;
    }
    if (this.ok) this.writer.write(chunk).catch(() => {});
  }

  async close(): Promise<boolean> {
    if (this.ok) await this.writer.close().catch(() => {});
    return this.done;
  }

  abort(reason: unknown): void {
    if (this.ok) this.failure = reason;
    this.writer.abort(reason).catch(() => {});
  }
}

/**
 * BufferedShardSink: the same contract, for units too wide to stream (see subrequests.ts): the
 * shard is collected in memory and put as one known-length body when closed.
 */
export class BufferedShardSink {
  failure: unknown = null;
  private readonly chunks: Uint8Array[] = [];
  private settle!: (ok: boolean) => void;
  readonly done: Promise<boolean> = new Promise((resolve) => (this.settle = resolve));

  constructor(
    readonly shardIndex: number,
    readonly backend: Backend,
    readonly key: string,
    private readonly length: number,
    private readonly signal: AbortSignal,
    private readonly put: (fn: () => Promise<void>) => Promise<void>,
  ) {}

  get ok(): boolean {
    return this.failure === null;
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (this.ok) this.chunks.push(chunk);
  }

  async close(): Promise<boolean> {
    if (this.ok) {
      const body = new Uint8Array(this.length);
      let at = 0;
      for (const c of this.chunks) body.set(c.subarray(0, Math.max(0, this.length - at)), at), (at += c.length);
      this.chunks.length = 0;
      try {
        if (at !== this.length) throw new Error(`shard ${this.shardIndex}: ${at} bytes framed, ${this.length} expected`);
        await this.put(() => this.backend.put(this.key, body, this.length, { signal: this.signal }));
      } catch (err) {
        this.failure = err;
      }
    }
    this.settle(this.ok);
    return this.ok;
  }

  abort(reason: unknown): void {
    if (this.ok) this.failure = reason;
    this.chunks.length = 0;
    this.settle(false);
  }
}
