/**
 * RowDecoder: row j of a unit rebuilt from any k good shards (data shards first), for repairs
 * (shard-rebuild.ts), which write the rebuilt rows out as they go. Reads of column units rebuild
 * in one pass instead (column-rebuild.ts: each source opened once, not once per round). Each source's blocks are read a round of
 * rows at a time: with streaming readers when the k sources fit in Workers' 6 open subrequests,
 * else drained one source at a time within them (so memory is k blocks per row of the round, not
 * k shards). A source that fails is marked bad and another one is taken; fewer than k good
 * shards is a QuorumError, never wrong bytes. Rows asked for in increasing order share readers.
 */
import type { Backend } from '../../backends/types.ts';
import type { Stripe } from '../../coder-wasm/index.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { shardKey } from '../format/shard-key.ts';
import type { BackendLatency } from './backend-latency.ts';
import { unitSalt } from '../format/shard-file.ts';
import { shardLayout, type UnitLayout } from '../format/layout.ts';
import { QuorumError } from './shard-set.ts';
import { ShardReadError, ShardReader } from './shard-reader.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore, drainingBackend } from './subrequests.ts';

export interface RowDecoderOptions {
  bucket: string;
  unit: CodedUnit;
  backends: Map<string, Backend>;
  /** Shards never to read (missing, damaged, being rebuilt); failed sources are added. */
  bad: Set<number>;
  /** The last row that will be asked for (readers are not opened past it). */
  lastRow: number;
  /** Rows whose source blocks are read at once when sources must be drained. */
  rowsPerRound: number;
  /** Subrequests the caller keeps for itself (uploads of rebuilt shards). */
  reservedSlots?: number;
  /** Shared with the caller's own uploads, when it has any. */
  slots?: Semaphore;
  onUnhealthy?: (err: ShardReadError) => void;
  latency?: BackendLatency;
  /** Source order to use instead of data-first-then-fastest (read-cost.ts: cheapest first). */
  preference?: number[];
}

export class RowDecoder {
  private readonly n: number;
  private readonly layouts: UnitLayout[];
  private readonly salt: bigint;
  private readonly sources: Map<string, Backend>;
  private readonly drained: boolean;
  private readers = new Map<number, ShardReader>();
  private roundEnd = -1;
  private lastAsked = -1;

  constructor(private readonly o: RowDecoderOptions) {
    const { unit } = o;
    this.n = unit.k + unit.m;
    this.layouts = unit.headerLens.map((_, i) => shardLayout(unit, i));
    this.salt = unitSalt(unit.unitId);
    this.drained = unit.k + (o.reservedSlots ?? 0) > MAX_OPEN_SUBREQUESTS;
    const slots = o.slots ?? new Semaphore(MAX_OPEN_SUBREQUESTS);
    this.sources = this.drained ? new Map([...o.backends].map(([id, b]) => [id, drainingBackend(b, slots)])) : o.backends;
  }

  /**
   * Puts row j of k good shards into `stripe` and rebuilds the rest (only data shards with
   * `dataOnly`). Returns the shards it read.
   */
  async decodeRow(j: number, stripe: Stripe, dataOnly: boolean): Promise<number[]> {
    const { unit } = this.o;
    const replica = unit.codec === 'replica';
    const need = replica ? 1 : unit.k;
    // Readers go forward only: a row past the round, or one at or before the last asked (a read
    // that moves on to the next data shard starts its rows again), starts a new round.
    if (j > this.roundEnd || j <= this.lastAsked) this.startRound(j);
    this.lastAsked = j;
    const loaded = new Set<number>();
    for (;;) {
      const chosen = this.preference()
        .filter((i) => !this.o.bad.has(i))
        .slice(0, need);
      if (chosen.length < need)
        throw new QuorumError(`only ${this.n - this.o.bad.size} of ${this.n} shards of unit ${unit.unitId} are readable; ${need} needed`, []);
      const results = await Promise.allSettled(
        chosen
          .filter((i) => !loaded.has(i))
          .map(async (i) => {
            const block = await this.readerFor(i, j).readBlock(j);
            stripe.shard(replica ? 0 : i).set(block);
            loaded.add(i);
          }),
      );
      let failed = false;
      for (const r of results) {
        if (r.status === 'fulfilled') continue;
        if (!(r.reason instanceof ShardReadError)) throw r.reason;
        failed = true;
        this.o.bad.add(r.reason.shardIndex);
        this.readers.get(r.reason.shardIndex)?.cancel();
        this.readers.delete(r.reason.shardIndex);
        this.o.onUnhealthy?.(r.reason);
      }
      if (failed) continue;
      if (!replica)
        stripe.reconstruct(
          [...Array(this.n).keys()].map((i) => chosen.includes(i)),
          { len: this.layouts[0]!.blockLen(j), dataOnly },
        );
      return chosen;
    }
  }

  release(): void {
    for (const r of this.readers.values()) r.cancel();
    this.readers = new Map();
  }

  /** Data shards first (no decoding needed for them), then the others by backend speed; or the caller's order. */
  private preference(): number[] {
    if (this.o.preference) return this.o.preference;
    const { unit, latency } = this.o;
    const speed = (i: number) => latency?.of(unit.placement[i]!) ?? 0;
    const all = [...Array(this.n).keys()];
    return [...all.slice(0, unit.k), ...all.slice(unit.k).sort((a, b) => speed(a) - speed(b))];
  }

  private startRound(j: number): void {
    this.release();
    this.roundEnd = this.drained ? Math.min(this.o.lastRow, j + this.o.rowsPerRound - 1) : this.o.lastRow;
  }

  private readerFor(i: number, j: number): ShardReader {
    let r = this.readers.get(i);
    if (!r) {
      const b = this.sources.get(this.o.unit.placement[i]!);
      if (!b) throw new ShardReadError(i, 'unavailable', `backend ${this.o.unit.placement[i]} is not configured`);
      r = new ShardReader(i, b, shardKey(this.o.bucket, this.o.unit.unitId, i), this.layouts[i]!, j, this.roundEnd, this.salt, this.o.latency);
      this.readers.set(i, r);
    }
    return r;
  }
}
