/**
 * CodingBudget: how much memory the coded reads and writes of one isolate may hold at once.
 *
 * A Worker isolate has 128 MB for every request it serves together. Each coded read or write
 * holds buffers for its whole life (stripe or parity in wasm memory, shard buffers, the request
 * body's buffer), and wasm memory never shrinks once grown. So before it starts, a request asks
 * the budget for its working set (estimated from its geometry: `writeBytes`, `readBytes`) and
 * gets a `BudgetLease`; past the budget, requests wait in arrival order (backpressure: the
 * client's body stays unread), and one that has waited `maxWaitMs` is refused with 503 SlowDown,
 * which every S3 client retries. Small inline objects do not ask.
 * A request larger than the whole budget runs alone.
 *
 * Shares (issue 37): a holder names its tenant (the access key, or the client address of an
 * anonymous request), and one tenant holds at most `shareBytes` at once: a tenant at its share
 * waits for its own leases to end, while the others' requests pass it in the queue. So twelve
 * stalled uploads of one key can no longer hold the memory another tenant's PUT needs. A tenant
 * holding nothing may take one request larger than its share (it would never run otherwise).
 * Holders without a tenant (jobs, tests) are not limited. Among requests not held back by their
 * share, the order stays arrival order.
 *
 * Ownership (the contract every caller keeps): a lease has exactly one owner, the code that
 * called `acquire`, which releases it on every way its work ends. The lease is also handed to its
 * holder (`BudgetHolder.adopt`, the request it serves) the moment it is granted, even when the
 * waiter's own continuation never runs again: when the holder ends with leases still held, that is
 * a bug, and the holder reclaims them loudly (`reclaim`) instead of letting the isolate refuse
 * coded traffic for ever. A waiter whose holder's signal aborts (the client hung up) leaves the
 * queue at once.
 */
import { postponeDeadline } from '../model/request-deadline.ts';
import type { BudgetGauge } from '../model/budget-gauge.ts';
import { S3Error } from '../model/errors.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { BLOCK_CHECKSUM_BYTES } from '../format/layout.ts';
import { AHEAD_BLOCKS, MAX_READ_AHEAD } from './span-stream.ts';
import type { StoragePlan } from './unit-store.ts';

/** The gate's buffer for the request body (auth/body-stream.ts). */
const BODY_BUFFER_BYTES = 1 << 20;

/** Who a lease is for: the request (or job) it serves. */
export interface BudgetHolder {
  /** What holds it, for the operator: the S3 operation or the job's name. */
  readonly label: string;
  /** Whose share it counts against (an access key id, an anonymous client's address); absent: no share limit. */
  readonly tenant?: string;
  /** Aborts when the holder is gone (its client hung up): a waiter leaves the queue at once. */
  readonly signal?: AbortSignal;
  /** Told of every lease granted to it, at the moment it is granted. */
  adopt?(lease: BudgetLease): void;
}

/** Memory held from the budget until `release()` (idempotent). */
export interface BudgetLease {
  readonly bytes: number;
  readonly holder: string;
  /** When it was granted (epoch ms). */
  readonly since: number;
  readonly released: boolean;
  release(): void;
  /** Releases a lease its holder ended without releasing (a bug), counted and logged loudly. */
  reclaim(why: string): void;
  /** Whether other requests are waiting for budget now (a stalled holder should make way). */
  contended(): boolean;
}

/** What the budget holds and who waits for it, at one instant (the operator's gauge). */
/** The budget as status and metrics show it (the shape is model/budget-gauge.ts's). */
export type BudgetSnapshot = BudgetGauge;

const NO_HOLDER: BudgetHolder = { label: 'unattributed' };

export class CodingBudget {
  private free: number;
  private readonly waiting: { bytes: number; holder: BudgetHolder; grant: (lease: BudgetLease) => void }[] = [];
  private readonly held = new Set<Lease>();
  /** Bytes held per tenant (only tenants holding some). */
  private readonly tenantHeld = new Map<string, number>();
  private reclaimedCount = 0;

  constructor(
    private readonly bytes: number,
    private readonly maxWaitMs: number,
    /** The most one tenant holds at once (default: the whole budget, no limit). */
    private readonly shareBytes: number = bytes,
  ) {
    this.free = bytes;
  }

  /**
   * Waits for `bytes` (at most the whole budget) for `holder`. Throws SlowDown after `maxWaitMs`,
   * or, when the holder's signal aborts first, the signal's reason; either way nothing is held.
   */
  async acquire(bytes: number, holder: BudgetHolder = NO_HOLDER): Promise<BudgetLease> {
    const want = Math.min(bytes, this.bytes);
    holder.signal?.throwIfAborted();
    // Nobody ahead that may go (those held back by their share do not count), and it fits.
    if (this.waiting.every((w) => this.overShare(w.bytes, w.holder)) && this.free >= want && !this.overShare(want, holder)) return this.grant(want, holder);
    const asked = Date.now();
    const lease = await this.wait(want, holder);
    postponeDeadline(Date.now() - asked); // queued for memory, not for a backend (request-deadline.ts)
    return lease;
  }

  /** Whether `holder`'s tenant must wait for its own leases before taking `bytes` more. */
  private overShare(bytes: number, holder: BudgetHolder): boolean {
    if (holder.tenant === undefined) return false;
    const held = this.tenantHeld.get(holder.tenant) ?? 0;
    return held > 0 && held + bytes > this.shareBytes;
  }

  private count(tenant: string | undefined, bytes: number): void {
    if (tenant === undefined) return;
    const n = (this.tenantHeld.get(tenant) ?? 0) + bytes;
    if (n > 0) this.tenantHeld.set(tenant, n);
    else this.tenantHeld.delete(tenant);
  }

  snapshot(now = Date.now()): BudgetSnapshot {
    const leases = [...this.held].sort((a, b) => a.since - b.since);
    return {
      capacityBytes: this.bytes,
      heldBytes: this.bytes - this.free,
      holders: leases.length,
      waiters: this.waiting.length,
      waitingBytes: this.waiting.reduce((n, w) => n + w.bytes, 0),
      oldestHeldMs: leases.length ? now - leases[0]!.since : null,
      reclaimed: this.reclaimedCount,
      leases: leases.slice(0, 20).map((l) => ({ holder: l.holder, bytes: l.bytes, ageMs: now - l.since })),
    };
  }

  /** Takes `bytes` for `holder` now: the one place a lease is made. */
  private grant(bytes: number, holder: BudgetHolder): BudgetLease {
    this.free -= bytes;
    const tenant = holder.tenant;
    this.count(tenant, bytes);
    const lease = new Lease(
      bytes,
      holder.label,
      () => {
        this.held.delete(lease);
        this.free += bytes;
        this.count(tenant, -bytes);
        this.wakeNext();
      },
      (why) => {
        this.reclaimedCount++;
        console.error(JSON.stringify({ msg: 'coding budget reclaimed', level: 'error', holder: lease.holder, bytes, heldMs: Date.now() - lease.since, why }));
      },
      () => this.waiting.length > 0,
    );
    this.held.add(lease);
    holder.adopt?.(lease);
    return lease;
  }

  private wait(bytes: number, holder: BudgetHolder): Promise<BudgetLease> {
    return new Promise<BudgetLease>((resolve, reject) => {
      const leave = (err: unknown) => {
        clearTimeout(timer);
        holder.signal?.removeEventListener('abort', onAbort);
        const at = this.waiting.indexOf(entry);
        if (at >= 0) this.waiting.splice(at, 1);
        this.wakeNext();
        reject(err);
      };
      const onAbort = () => leave(holder.signal!.reason);
      const entry = {
        bytes,
        holder,
        grant: (lease: BudgetLease) => {
          clearTimeout(timer);
          holder.signal?.removeEventListener('abort', onAbort);
          resolve(lease);
        },
      };
      const timer = setTimeout(
        () => leave(new S3Error('SlowDown', `This gateway is busy (coded requests waited ${this.maxWaitMs} ms for memory); retry.`)),
        this.maxWaitMs,
      );
      holder.signal?.addEventListener('abort', onAbort);
      this.waiting.push(entry);
    });
  }

  /**
   * Hands freed memory to the waiters in order, granting their leases before they resume. A
   * waiter held back by its tenant's share is passed; the first that does not fit stops the
   * round (the ones behind it wait their turn).
   */
  private wakeNext(): void {
    for (let i = 0; i < this.waiting.length; ) {
      const next = this.waiting[i]!;
      if (this.overShare(next.bytes, next.holder)) {
        i++;
        continue;
      }
      if (this.free < next.bytes) return;
      this.waiting.splice(i, 1);
      next.grant(this.grant(next.bytes, next.holder));
    }
  }
}

class Lease implements BudgetLease {
  readonly since = Date.now();
  released = false;

  constructor(
    readonly bytes: number,
    readonly holder: string,
    private readonly giveBack: () => void,
    private readonly reported: (why: string) => void,
    private readonly waitersExist: () => boolean,
  ) {}

  contended(): boolean {
    return !this.released && this.waitersExist();
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.giveBack();
  }

  reclaim(why: string): void {
    if (this.released) return;
    this.reported(why);
    this.release();
  }
}

/** Working set of a write planned as `plan` with `blockSize`-byte blocks. */
export function writeBytes(plan: StoragePlan, blockSize: number): number {
  if (plan.mode === 'inline') return 0;
  const { k, m } = plan;
  // Blocks as long as the body's first unit needs (a body of one row has shorter ones): the
  // writer's stripe and its uploads' buffers are that long (unit-writer.ts, shard-set.ts). At 256
  // KiB for every write, eight 64 KiB 4+2 PUTs filled the 48 MiB budget (5.6 MiB each); now 1.4 MiB.
  const block = plan.firstBlockBytes ?? blockSize;
  const framed = 2 * (BLOCK_CHECKSUM_BYTES + block);
  // A sealed write holds a record of plaintext (sealing-feed.ts) and the record WebCrypto sealed.
  const sealing = plan.sealed ? 2 * (plan.sealRecord ?? 0) : 0;
  // A column unit's parity is m of its own shard length, not of the largest a unit may have: a
  // small wide write asking for m x columnShardBytes (24 MiB under 8+3) kept a second one out.
  // Its uploads' buffers are counted for all k+m of them, as a striped write's are, not for the 6
  // open at once: a finished upload holds its buffers until its backend has answered, and with
  // only 6 counted, 128 concurrent 10+4 PUTs held 41-96 MiB of live buffers under the 48 MiB
  // budget (BENCHMARKS.md, issue 42 sixth stop).
  if (plan.mode === 'column') return m * (plan.firstShardBytes ?? plan.columnShardBytes!) + block + (k + m) * framed + BODY_BUFFER_BYTES + sealing;
  return (k + m) * block + (k + m) * framed + BODY_BUFFER_BYTES + sealing;
}

/** A backend read body's own buffer (backends/streams.ts shapeBody). */
const BODY_SCRATCH_BYTES = 64 * 1024;

/**
 * Working set of a read of `unit`: its readers' buffers (a column read: the span it sends and
 * the ones it streams ahead, each with its blocks held ahead; span-stream.ts), and stripe memory
 * should it decode.
 */
export function readBytes(unit: CodedUnit): number {
  const framed = BLOCK_CHECKSUM_BYTES + unit.blockSize + BODY_SCRATCH_BYTES; // a reader's buffer and its body's
  const stripe = (unit.k + unit.m) * unit.blockSize;
  const streams = (1 + MAX_READ_AHEAD) * (framed + AHEAD_BLOCKS * unit.blockSize);
  return (unit.layout === 'column' ? streams : unit.k * framed) + stripe;
}

/** Working set of reading any unit of `storage` (they are read one after another); 0 when inline. */
export function storageReadBytes(storage: { kind: string; units?: CodedUnit[] }): number {
  return storage.kind === 'coded' ? Math.max(0, ...storage.units!.map(readBytes)) : 0;
}
