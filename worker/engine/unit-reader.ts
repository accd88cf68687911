/**
 * UnitReader: the streaming GET path for bytes [start, end] of one striped unit.
 *
 * A healthy read fetches only the data-shard blocks the range touches, verifies each block and
 * hands it on as a view of its reader's buffer: no decoding, no copy. Every shard has at most one
 * open read (ShardReader), which yields its blocks in row order.
 *
 * Per row, the reader waits for the data blocks it needs. When one of them fails (missing,
 * unreachable, corrupt), or has not arrived within `hedgeMs`, it also reads that row from other
 * shards (data first, then parity from the backends answering fastest), and the first k verified
 * blocks of the row are decoded. A slow read is never abandoned: it goes on, and from the next
 * row on it serves again as soon as it catches up.
 *
 * A replicated unit is read from one replica, chosen at the first row and kept (replicaShard).
 *
 * With priced backends (read-cost.ts) other shards are taken cheapest first, and a read whose
 * data shards cost more (egress) than k cheaper shards plus decoding reads those k and decodes
 * every row.
 *
 * Invariants:
 * - Fewer than k good shards: QuorumError (a 503 to the client), never wrong bytes. A busy but
 *   healthy pool never yields one: only failed reads count against the quorum, slow ones do not.
 * - Every shard found unhealthy is reported once through `onUnhealthy`; a slow one is not.
 * - The first row is read before the stream is returned: failures up front become errors, not
 *   truncated bodies.
 * - A chunk handed on is valid until the consumer reads again (readers reuse their buffers).
 * - No more than 6 reads are open at once: a striped unit has k+m <= 6 shards (wider codes are
 *   written as column units: column-reader.ts).
 */
import type { Backend } from '../../backends/types.ts';
import { createCoder, type Coder, type Stripe } from '../../coder-wasm/index.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { shardKey } from '../format/shard-key.ts';
import type { BackendLatency } from './backend-latency.ts';
import type { GrowBudget } from './column-rebuild.ts';
import { unitSalt } from '../format/shard-file.ts';
import { shardLayout, type UnitLayout } from '../format/layout.ts';
import type { PriceBook } from '../model/prices.ts';
import { planStripedRead, type StripedReadPlan } from './read-cost.ts';
import { QuorumError } from './shard-set.ts';
import { ShardReadError, ShardReader } from './shard-reader.ts';
import { MAX_OPEN_SUBREQUESTS } from './subrequests.ts';

export interface ReadUnitInput {
  bucket: string;
  unit: CodedUnit;
  backends: Map<string, Backend>;
  /** Inclusive byte offsets within the unit; start <= end < size. */
  start: number;
  end: number;
  onUnhealthy?: (err: ShardReadError) => void;
  /** A row's data blocks not in after this long are also read from other shards (hedging). */
  hedgeMs?: number;
  /** How fast each backend has answered: other shards are taken fastest first. */
  latency?: BackendLatency;
  /** What each backend charges: reads fetch the cheapest k shards (read-cost.ts). */
  prices?: PriceBook;
  /** More of the isolate's coding budget for a degraded read's rebuilt rows (column units; column-rebuild.ts). */
  grow?: GrowBudget;
  /** Bytes a degraded column read's rebuild may hold (syndromes and kept columns): a unit writer's parity bound. */
  rebuildHoldBytes?: number;
}

/** One shard's read: its reader, the next row it will read, and the block it is fetching. */
interface Lane {
  reader: ShardReader;
  nextRow: number;
  /** The row `block` is for; `block` is null once taken. */
  row: number;
  block: Promise<Uint8Array> | null;
}

export class UnitReader {
  private readonly unit: CodedUnit;
  private readonly n: number;
  private readonly replica: boolean;
  private readonly layouts: UnitLayout[];
  private readonly layout: UnitLayout;
  private readonly first: number;
  private readonly last: number;
  private readonly backends: Map<string, Backend>;
  private readonly salt: bigint;
  /** Shards known missing or damaged: never read again in this request. */
  private readonly bad: Set<number>;
  private readonly lanes = new Map<number, Lane>();
  /** Shards read besides the needed data ones, since a row needed them (they stay on). */
  private readonly extra = new Set<number>();
  /** Read-cost plan (priced backends only): source order, and whether to decode from k cheapest. */
  private readonly costPlan: StripedReadPlan | null;
  /** Made on the first decode: stripe memory and a buffer for decoded bytes handed on. */
  private coder: Coder | null = null;
  private stripe: Stripe | null = null;
  private decodedOut: Uint8Array | null = null;
  /** Replicated units: the replica every row is read from (replicaShard). */
  private replicaChoice: number | null = null;

  constructor(private readonly input: ReadUnitInput) {
    const { unit, start, end } = input;
    this.unit = unit;
    this.replica = unit.codec === 'replica';
    this.n = unit.k + unit.m;
    this.layouts = unit.headerLens.map((_, i) => shardLayout(unit, i));
    this.layout = this.layouts[0]!;
    ({ first: this.first, last: this.last } = this.layout.stripeRange(start, end));
    if (this.n > MAX_OPEN_SUBREQUESTS && !this.replica)
      throw new TypeError(`unit ${unit.unitId}: a striped unit has at most ${MAX_OPEN_SUBREQUESTS} shards (wide codes are column units)`);
    this.backends = input.backends;
    this.salt = unitSalt(unit.unitId);
    this.bad = new Set(unit.missing);
    // Priced backends: the cheapest shards first, decoding every row when parity on cheap
    // backends costs less than the data shards' egress. Unpriced: null, the order below.
    this.costPlan = planStripedRead({ unit, prices: input.prices, latency: input.latency, bad: this.bad }, this.layout, start, end);
  }

  /** Reads the first row, then streams the range row by row. */
  async open(): Promise<ReadableStream<Uint8Array>> {
    let s = this.first;
    let chunks: Uint8Array[];
    try {
      chunks = await this.row(s);
    } catch (err) {
      this.release();
      throw err;
    }
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          try {
            if (s > this.last) {
              this.release();
              controller.close();
              return;
            }
            if (chunks.length === 0) chunks = await this.row(s);
            for (const c of chunks) controller.enqueue(c);
            chunks = [];
            s++;
          } catch (err) {
            this.release();
            controller.error(err);
          }
        },
        cancel: () => this.release(),
      },
      { highWaterMark: 0 },
    );
  }

  /** Row s's requested bytes: its data blocks as they are, or decoded from k verified blocks. */
  private async row(s: number): Promise<Uint8Array[]> {
    // Decoding by plan: no block is needed as such; any k of the cheapest make the row.
    const planned = !this.replica && this.costPlan?.decode === true;
    const needed = planned ? [] : this.replica ? [this.replicaShard()] : this.neededData(s);
    const blocks = new Map<number, Uint8Array>();
    for (const i of [...needed, ...this.extra]) this.read(i, s);
    // How many reads of this row to keep going: the needed ones (k when decoding by plan); k once
    // a needed one has failed; k plus the late ones once the hedge fires (a late read may never come).
    let target = planned || needed.some((i) => this.bad.has(i)) ? this.need : needed.length;
    let hedged = !this.input.hedgeMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hedge = hedged ? null : new Promise<'hedge'>((resolve) => (timer = setTimeout(() => resolve('hedge'), this.input.hedgeMs)));
    try {
      for (;;) {
        if (!planned && needed.every((i) => blocks.has(i))) return this.chunksOut(s, blocks, false);
        if (blocks.size >= this.need) {
          if (this.replica) this.keepReplica([...blocks.keys()][0]!);
          return this.chunksOut(s, blocks, true);
        }
        if (needed.some((i) => this.bad.has(i))) target = Math.max(target, this.need);
        this.ensure(s, blocks, target);
        const inFlight = this.inFlight(s, blocks);
        if (inFlight.length === 0)
          throw new QuorumError(`only ${this.n - this.bad.size} of ${this.n} shards of unit ${this.unit.unitId} are readable; ${this.need} needed`, []);
        const next = await Promise.race([
          ...inFlight.map(([i, l]) =>
            l.block!.then(
              (v) => ({ i, v }),
              (e: unknown) => ({ i, e }),
            ),
          ),
          ...(hedged ? [] : [hedge!]),
        ]);
        if (next === 'hedge') {
          hedged = true;
          const late = planned ? this.inFlight(s, blocks).length : needed.filter((i) => !blocks.has(i) && !this.bad.has(i)).length;
          target = Math.max(target, this.need + late);
          continue;
        }
        this.lanes.get(next.i)!.block = null;
        if ('v' in next) blocks.set(next.i, next.v);
        else this.failed(next.i, next.e);
      }
    } finally {
      clearTimeout(timer); // one timer per row must not outlive it
    }
  }

  /**
   * The replica a replicated read takes its rows from: chosen once (the cheapest or fastest) and
   * kept for the whole read, so a read is one backend request unless that replica fails (then
   * the next one) or stalls past the hedge (then the one that answered instead).
   */
  private replicaShard(): number {
    if (this.replicaChoice === null || this.bad.has(this.replicaChoice)) this.replicaChoice = this.preference()[0] ?? 0;
    return this.replicaChoice;
  }

  /** A row of a replicated read came from replica i: it serves the rows after. */
  private keepReplica(i: number): void {
    if (i === this.replicaChoice) return;
    this.replicaChoice = i;
    this.extra.delete(i);
  }

  private get need(): number {
    return this.replica ? 1 : this.unit.k;
  }

  /**
   * Starts shard i's read of row s, unless it is running. A lane still fetching an earlier row
   * (it was slow) finishes that first and its late block is dropped; rows a lane was not asked
   * for are read and dropped too (its reader reads the shard's rows in order).
   */
  private read(i: number, s: number): void {
    if (this.bad.has(i)) return;
    let lane = this.lanes.get(i);
    if (!lane) {
      const b = this.backends.get(this.unit.placement[i]!);
      if (!b) return this.failed(i, new ShardReadError(i, 'unavailable', `backend ${this.unit.placement[i]} is not configured`));
      const reader = new ShardReader(i, b, shardKey(this.input.bucket, this.unit.unitId, i), this.layouts[i]!, s, this.last, this.salt, this.input.latency);
      lane = { reader, nextRow: s, row: -1, block: null };
      this.lanes.set(i, lane);
    }
    if (lane.block && lane.row === s) return;
    const l = lane;
    const previous = l.block;
    l.row = s;
    l.block = (async () => {
      if (previous) await previous; // a late block of an earlier row, dropped (its failure is this lane's)
      while (l.nextRow < s) await l.reader.readBlock(l.nextRow++);
      l.nextRow = s + 1;
      return l.reader.readBlock(s);
    })();
    l.block.catch(() => {});
  }

  /** Reads of row s running and not yet in. */
  private inFlight(s: number, blocks: Map<number, Uint8Array>): [number, Lane][] {
    return [...this.lanes.entries()].filter(([i, l]) => l.block && l.row === s && !blocks.has(i));
  }

  /** Starts reads of row s from the preferred shards until `target` are in or running. */
  private ensure(s: number, blocks: Map<number, Uint8Array>, target: number): void {
    for (const i of this.preference()) {
      if (blocks.size + this.inFlight(s, blocks).length >= target) return;
      if (blocks.has(i) || this.inFlight(s, blocks).some(([j]) => j === i)) continue;
      this.extra.add(i);
      this.read(i, s);
    }
  }

  private failed(i: number, err: unknown): void {
    if (!(err instanceof ShardReadError)) throw err;
    this.bad.add(i);
    this.extra.delete(i);
    this.lanes.get(i)?.reader.cancel();
    this.lanes.delete(i);
    this.input.onUnhealthy?.(err);
  }

  /** Data shards first (no decoding needed for them), then the others by backend speed; priced: cheapest first. */
  private preference(): number[] {
    if (this.costPlan) return this.costPlan.preference.filter((i) => !this.bad.has(i));
    const speed = (i: number) => this.input.latency?.of(this.unit.placement[i]!) ?? 0;
    const all = [...Array(this.n).keys()].filter((i) => !this.bad.has(i));
    if (this.replica) return all.sort((a, b) => speed(a) - speed(b) || a - b);
    return [...all.filter((i) => i < this.unit.k), ...all.filter((i) => i >= this.unit.k).sort((a, b) => speed(a) - speed(b))];
  }

  /** Data shards whose bytes in row s overlap [start, end]. */
  private neededData(s: number): number[] {
    const { start, end } = this.input;
    return [...Array(this.unit.k).keys()].filter((i) => {
      const span = this.layout.dataSpan(s, i);
      return span.length > 0 && span.offset <= end && span.offset + span.length > start;
    });
  }

  /**
   * Row s's requested bytes, in order: views of the verified data blocks, or (`decode`) the row
   * rebuilt from k verified blocks in stripe memory, copied to a buffer of this reader's.
   */
  private chunksOut(s: number, blocks: Map<number, Uint8Array>, decode: boolean): Uint8Array[] {
    const { start, end } = this.input;
    const { stripeData } = this.layout;
    const b = this.layout.blockLen(s);
    const from = Math.max(start, s * stripeData);
    const to = Math.min(end + 1, s * stripeData + Math.min(stripeData, this.layout.size - s * stripeData));
    const data = (i: number): Uint8Array => blocks.get(this.replica ? [...blocks.keys()][0]! : i)!;
    if (decode && !this.replica) {
      this.coder ??= createCoder(this.unit.k, this.unit.m);
      this.stripe ??= this.coder.stripe(this.unit.blockSize);
      const sources = [...blocks.keys()].filter((i) => !this.bad.has(i)).slice(0, this.unit.k);
      for (const i of sources) this.stripe.shard(i).set(blocks.get(i)!);
      this.stripe.reconstruct(
        [...Array(this.n).keys()].map((i) => sources.includes(i)),
        { dataOnly: true, len: b },
      );
      this.decodedOut ??= new Uint8Array(this.unit.k * this.unit.blockSize);
      for (let i = 0; i < this.unit.k; i++) this.decodedOut.set(this.stripe.shard(i).subarray(0, b), i * b);
    }
    const out: Uint8Array[] = [];
    for (let i = 0; i < this.unit.k; i++) {
      const span = this.layout.dataSpan(s, i);
      const lo = Math.max(from, span.offset) - span.offset,
        hi = Math.min(to, span.offset + span.length) - span.offset;
      if (hi <= lo) continue;
      out.push(decode && !this.replica ? this.decodedOut!.subarray(i * b + lo, i * b + hi) : data(i).subarray(lo, hi));
    }
    return out;
  }

  private release(): void {
    for (const l of this.lanes.values()) l.reader.cancel();
    this.lanes.clear();
    this.stripe?.free();
    this.coder?.free();
    this.stripe = null;
    this.coder = null;
  }
}

export function readUnit(input: ReadUnitInput): Promise<ReadableStream<Uint8Array>> {
  return new UnitReader(input).open();
}
