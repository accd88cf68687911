/**
 * ShardReader: one ranged read of consecutive blocks of one shard file, checked block by block.
 * Each block is read straight into the coder's stripe memory and its XXH64 (seeded with stripe
 * and shard index) verified in place. Any failure — backend error, short body, checksum
 * mismatch — surfaces as ShardReadError, which the unit reader answers by using other shards.
 */
import type { Backend } from '../../backends/types.ts';
import type { BackendLatency } from './backend-latency.ts';
import type { Stripe } from '../../coder-wasm/index.ts';
import { blockSeed } from './format.ts';
import { BLOCK_CHECKSUM_BYTES, type UnitLayout } from './layout.ts';

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

export class ShardReader {
  private reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  private opening: Promise<void> | null = null;
  /** Set by cancel(): no byte may land in stripe memory afterwards (the slot may be rebuilt). */
  private closed = false;
  private readonly abort = new AbortController();
  private rest: Uint8Array = new Uint8Array(0);
  private readonly sum = new Uint8Array(BLOCK_CHECKSUM_BYTES);

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
  ) {}

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
        this.reader = r.body.getReader();
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
    return new ShardReadError(this.shardIndex, reason, (err as Error).message ?? String(err), { cause: err });
  }

  /**
   * Reads exactly `len` bytes into `target()` (a fresh view each call: wasm memory may move);
   * with `pieces`, also collects the same bytes as views of the backend's own chunks.
   */
  private async readExact(len: number, target: () => Uint8Array, pieces?: Uint8Array[]): Promise<void> {
    let got = 0;
    while (got < len) {
      if (this.rest.length === 0) {
        const r = await this.reader!.read();
        if (this.closed) throw new ShardReadError(this.shardIndex, 'unavailable', 'reader closed');
        if (r.done) throw new ShardReadError(this.shardIndex, 'corrupt', 'shard is shorter than its layout');
        this.rest = r.value;
      }
      const take = Math.min(len - got, this.rest.length);
      target().set(this.rest.subarray(0, take), got);
      pieces?.push(this.rest.subarray(0, take));
      this.rest = this.rest.subarray(take);
      got += take;
    }
  }

  /**
   * Reads stripe `s`'s block into stripe shard `dest` and verifies it. Stripes come in order.
   * Returns the block's bytes as views of the backend's chunks (valid once verified, never
   * modified: chunks belong to the reader), so a healthy read can hand them on without a copy.
   */
  async readBlock(s: number, stripe: Stripe, dest: number): Promise<Uint8Array[]> {
    try {
      await this.open();
      const b = this.layout.blockLen(s);
      const pieces: Uint8Array[] = [];
      await this.readExact(BLOCK_CHECKSUM_BYTES, () => this.sum);
      await this.readExact(b, () => stripe.shard(dest), pieces);
      const want = new DataView(this.sum.buffer).getBigUint64(0, true);
      if (stripe.xxh64(dest, 0, b, blockSeed(this.salt, s, this.shardIndex)) !== want) {
        throw new ShardReadError(this.shardIndex, 'corrupt', `block ${s} fails its checksum`);
      }
      return pieces;
    } catch (err) {
      const failure = this.fail(err);
      this.cancel();
      throw failure;
    }
  }

  cancel(): void {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort(new ShardReadError(this.shardIndex, 'unavailable', 'reader closed'));
    this.reader?.cancel().catch(() => {});
    this.opening ??= Promise.reject(new ShardReadError(this.shardIndex, 'unavailable', 'reader closed'));
    this.opening.catch(() => {});
  }
}
