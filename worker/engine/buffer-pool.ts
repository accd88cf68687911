/**
 * BufferPool: free block buffers by size, shared by one isolate's requests; a bounded handful.
 *
 * A wide code opens k+m uploads per column unit on a write and k ranged reads per unit on a read,
 * each with block buffers of its own. Left to the garbage collector those are ~120-160 MiB of
 * garbage per GiB moved, which V8 frees only after tens of MiB of it: the 1 GiB streaming test
 * (test/engine-s3rver/stream-1gib.test.ts) saw the worker's RSS grow by 97 MiB for one wide-code
 * GET. Owners give a buffer back only when nothing (the runtime, a consumer) can still hold a view
 * of it; a buffer whose fate is unknown is left to the collector. Consumers never see these
 * buffers as their own: the streams that hand out views of them are lent (model/lent-chunks.ts).
 * In poison mode (the test suite) a buffer given back is filled with poison until it is taken
 * again, and one found written in between fails the taker: a view kept past its loan then shows
 * poison (or, once reused, another request's bytes: the tests' MD5 checks), never silence.
 */
import { claimPoisoned, poisonBuffer } from '../model/lent-chunks.ts';

export class BufferPool {
  private readonly bySize = new Map<number, ArrayBuffer[]>();
  /** At most `maxSizes` sizes are kept (block sizes in use are one or two): odd sizes are not hoarded. */
  constructor(
    /** Named in poison mode's reports. */
    readonly name: string,
    private readonly maxPerSize: number,
    private readonly maxSizes = 4,
  ) {}

  /** A free buffer of exactly `size` bytes, if one is pooled. */
  take(size: number): ArrayBuffer | undefined {
    const buffer = this.bySize.get(size)?.pop();
    if (buffer) claimPoisoned(buffer, `${this.name}.take`);
    return buffer;
  }

  /**
   * Keeps `buffer` for the next taker (dropped when the pool holds enough of its size, or it is
   * detached). The caller gives up every view of it: `owner` names the caller in poison mode.
   */
  give(buffer: ArrayBuffer, owner: string): void {
    if (buffer.byteLength === 0) return; // detached (transferred away): nothing to reuse
    poisonBuffer(buffer, `${owner} (${this.name})`);
    let list = this.bySize.get(buffer.byteLength);
    if (!list) {
      if (this.bySize.size >= this.maxSizes) return;
      this.bySize.set(buffer.byteLength, (list = []));
    }
    if (list.length < this.maxPerSize) list.push(buffer);
  }
}

/** Upload chunk buffers (shard-sink.ts): 16 of a size, 4 MiB kept at the default 256 KiB blocks. */
export const SINK_POOL = new BufferPool('SINK_POOL', 16);

/** Read block buffers (shard-reader.ts, span-stream.ts): 16 of a size. Separate from the sinks'
 *  so that a fault in one side's ownership cannot hand the other side a buffer in use. */
export const READ_POOL = new BufferPool('READ_POOL', 16);
