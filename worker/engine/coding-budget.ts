/**
 * CodingBudget: how much memory the coded reads and writes of one isolate may hold at once.
 *
 * A Worker isolate has 128 MB for every request it serves together. Each coded read or write
 * holds buffers for its whole life (stripe or parity in wasm memory, shard buffers, the request
 * body's buffer), and wasm memory never shrinks once grown. So before it starts, a request asks
 * the budget for its working set (estimated from its geometry: `writeBytes`, `readBytes`) and
 * gives it back when it ends; past the budget, requests wait in arrival order (backpressure: the
 * client's body stays unread), and one that has waited `maxWaitMs` is refused with 503 SlowDown,
 * which every S3 client retries. Small inline objects do not ask.
 * A request larger than the whole budget runs alone.
 */
import { S3Error } from '../model/errors.ts';
import type { CodedUnit } from '../catalog/manifest.ts';
import { BLOCK_CHECKSUM_BYTES } from './layout.ts';
import type { StoragePlan } from './unit-store.ts';

/** The gate's buffer for the request body (auth/body-stream.ts). */
const BODY_BUFFER_BYTES = 1 << 20;
/** Open uploads of a column write, each with two framed-block buffers (ShardSink). */
const OPEN_UPLOADS = 6;

export class CodingBudget {
  private free: number;
  private readonly waiting: { bytes: number; wake: () => void }[] = [];

  constructor(
    private readonly bytes: number,
    private readonly maxWaitMs: number,
  ) {
    this.free = bytes;
  }

  /** Waits for `bytes` (at most the whole budget) and returns the function that gives them back. */
  async acquire(bytes: number): Promise<() => void> {
    const want = Math.min(bytes, this.bytes);
    if (this.waiting.length > 0 || this.free < want) await this.wait(want); // woken with its bytes taken
    else this.free -= want;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.free += want;
      this.wakeNext();
    };
  }

  private wait(bytes: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const entry = { bytes, wake: () => (clearTimeout(timer), resolve()) };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(entry);
        if (at >= 0) this.waiting.splice(at, 1);
        this.wakeNext();
        reject(new S3Error('SlowDown', `This gateway is busy (coded requests waited ${this.maxWaitMs} ms for memory); retry.`));
      }, this.maxWaitMs);
      this.waiting.push(entry);
    });
  }

  /** Hands freed memory to the waiters in order, taking it for them before they resume. */
  private wakeNext(): void {
    while (this.waiting.length > 0 && this.free >= this.waiting[0]!.bytes) {
      const next = this.waiting.shift()!;
      this.free -= next.bytes;
      next.wake();
    }
  }
}

/** Working set of a write planned as `plan` with `blockSize`-byte blocks. */
export function writeBytes(plan: StoragePlan, blockSize: number): number {
  const { k, m } = plan;
  const framed = 2 * (BLOCK_CHECKSUM_BYTES + blockSize);
  if (plan.mode === 'column') return m * plan.columnShardBytes! + blockSize + OPEN_UPLOADS * framed + BODY_BUFFER_BYTES;
  return (k + m) * blockSize + (k + m) * framed + BODY_BUFFER_BYTES;
}

/** A backend read body's own buffer (backends/streams.ts shapeBody). */
const BODY_SCRATCH_BYTES = 64 * 1024;

/** Working set of a read of `unit`: its readers' buffers, and stripe memory should it decode. */
export function readBytes(unit: CodedUnit): number {
  const framed = BLOCK_CHECKSUM_BYTES + unit.blockSize + BODY_SCRATCH_BYTES; // a reader's buffer and its body's
  const stripe = (unit.k + unit.m) * unit.blockSize;
  return (unit.layout === 'column' ? framed : unit.k * framed) + stripe;
}
