/**
 * UnitReader: the streaming GET path for bytes [start, end] of one coded unit.
 *
 * A healthy read fetches only the data-shard blocks the range touches, verifies each block and
 * hands it on, with no decoding. When a data shard is missing, unreachable, corrupt or slower than
 * `hedgeMs`, the reader switches, from that stripe on, to k good shards (data first, then parity
 * from the backends answering fastest) and reconstructs each stripe in place. With priced
 * backends (read-cost.ts) the sources are the cheapest shards, and a read whose data shards cost
 * more (egress) than k cheaper shards plus decoding decodes from its first stripe.
 *
 * Invariants:
 * - Fewer than k good shards: QuorumError (a 503 to the client), never wrong bytes.
 * - Every shard found unhealthy is reported once through `onUnhealthy` (the caller queues its
 *   repair); a shard that was only slow is not unhealthy and is not reported.
 * - The first stripe is read before the stream is returned: failures up front become errors,
 *   not truncated bodies.
 * - A block lands in stripe memory only from a reader that is still wanted: reads abandoned by a
 *   hedge are cancelled (ShardReader.cancel) and their results ignored (`generation`).
 * - No more than 6 shard reads are open at once: with k > 6 each shard range is drained into
 *   memory, 6 at a time (units of wide policies are kept small for this).
 * Known gap: no read-ahead; stripe s+1 is requested when the client has taken stripe s.
 */
import type { Backend } from '../../backends/types.ts';
import { createCoder, type Coder, type Stripe } from '../../coder-wasm/index.ts';
import { shardKey, type CodedUnit } from '../catalog/manifest.ts';
import type { BackendLatency } from './backend-latency.ts';
import { unitSalt } from './format.ts';
import { shardLayout, type UnitLayout } from './layout.ts';
import type { PriceBook } from './prices.ts';
import { planStripedRead } from './read-cost.ts';
import { ShardReadError, ShardReader } from './shard-reader.ts';
import { MAX_OPEN_SUBREQUESTS, Semaphore, drainingBackend } from './subrequests.ts';
import { QuorumError } from './unit-writer.ts';

export interface ReadUnitInput {
  bucket: string;
  unit: CodedUnit;
  backends: Map<string, Backend>;
  /** Inclusive byte offsets within the unit; start <= end < size. */
  start: number;
  end: number;
  onUnhealthy?: (err: ShardReadError) => void;
  /** A healthy read waits this long for the data shards of a stripe, then decodes from others. */
  hedgeMs?: number;
  /** How fast each backend has answered: decoding sources are taken fastest first. */
  latency?: BackendLatency;
  /** What each backend charges: reads fetch the cheapest k shards (read-cost.ts). */
  prices?: PriceBook;
}

/** More views than this for one block and it is copied instead: small chunks cost per chunk downstream. */
const MAX_VIEWS_PER_BLOCK = 4;

export class UnitReader {
  private readonly unit: CodedUnit;
  private readonly n: number;
  private readonly replica: boolean;
  private readonly layouts: UnitLayout[];
  private readonly layout: UnitLayout;
  private readonly first: number;
  private readonly last: number;
  private readonly backends: Map<string, Backend>;
  private readonly coder: Coder;
  private readonly stripe: Stripe;
  private readonly salt: bigint;
  /** Decoding sources in order of preference: data shards (no decoding needed), then the others by speed. */
  private readonly preference: number[];
  /** Shards known missing or damaged: never read again in this request. */
  private readonly bad: Set<number>;
  /** Data shards left behind by a hedge: used only when nothing else is left. */
  private readonly slow = new Set<number>();
  /** True once the read reconstructs stripes (from k shards) instead of copying data blocks. */
  private decoding: boolean;
  private readers = new Map<number, ShardReader>();
  /** Shard index -> its verified block of the current stripe, as views of the backend's chunks. */
  private blockViews = new Map<number, Uint8Array[]>();
  /** Blocks of the current stripe already in stripe memory. */
  private loaded = new Set<number>();
  /** Bumped when reads are abandoned: their late results are ignored. */
  private generation = 0;

  constructor(private readonly input: ReadUnitInput) {
    const { unit, start, end } = input;
    this.unit = unit;
    this.replica = unit.codec === 'replica';
    this.n = unit.k + unit.m;
    this.layouts = unit.headerLens.map((_, i) => shardLayout(unit, i));
    this.layout = this.layouts[0]!;
    ({ first: this.first, last: this.last } = this.layout.stripeRange(start, end));
    this.backends = unit.k > MAX_OPEN_SUBREQUESTS ? drainAll(input.backends) : input.backends;
    this.coder = createCoder(unit.k, this.replica ? 0 : unit.m);
    this.stripe = this.coder.stripe(unit.blockSize);
    this.salt = unitSalt(unit.unitId);
    this.bad = new Set(unit.missing);
    const speed = (i: number) => input.latency?.of(unit.placement[i]!) ?? 0;
    const bySpeed = (a: number, b: number) => speed(a) - speed(b);
    const all = [...Array(this.n).keys()];
    this.preference = this.replica ? all.sort(bySpeed) : [...all.slice(0, unit.k), ...all.slice(unit.k).sort(bySpeed)];
    this.decoding = this.replica || all.slice(0, unit.k).some((i) => this.bad.has(i));
    // Priced backends: the cheapest shards first, decoding from the start when parity on cheap
    // backends costs less than the data shards' egress. Equal prices give the order above.
    const plan = planStripedRead({ unit, prices: input.prices, latency: input.latency, bad: this.bad }, this.layout, start, end);
    if (plan) {
      this.preference = plan.preference;
      this.decoding ||= plan.decode;
    }
  }

  /** Reads the first stripe, then streams the range stripe by stripe. */
  async open(): Promise<ReadableStream<Uint8Array>> {
    let s = this.first;
    try {
      await this.loadStripe(s);
    } catch (err) {
      this.release();
      throw err;
    }
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          if (s > this.last) {
            this.release();
            controller.close();
            return;
          }
          if (s > this.first) await this.loadStripe(s);
          for (const chunk of this.chunksOut(s)) controller.enqueue(chunk);
          s++;
        } catch (err) {
          this.release();
          controller.error(err);
        }
      },
      cancel: () => this.release(),
    }, { highWaterMark: 0 });
  }

  /** Puts stripe s's needed blocks in stripe memory: the data blocks, or k shards decoded. */
  private async loadStripe(s: number): Promise<void> {
    this.loaded = new Set();
    this.blockViews = new Map();
    if (!this.decoding && (await this.readDataBlocks(s))) return;
    await this.decodeStripe(s);
  }

  /**
   * The healthy path: the data blocks the range needs, raced against the hedge timer. True when
   * they all arrived; otherwise the read switches to decoding from this stripe on.
   */
  private async readDataBlocks(s: number): Promise<boolean> {
    const needed = this.neededData(s);
    const reads = this.readInto(s, needed, (i) => this.lastNeeded(i));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hedgeMs = this.input.hedgeMs;
    const outcome = hedgeMs
      ? await Promise.race([reads, new Promise<'slow'>((resolve) => (timer = setTimeout(() => resolve('slow'), hedgeMs)))])
      : await reads;
    clearTimeout(timer); // one timer per stripe must not outlive it
    if (outcome === true) return true;
    if (outcome === 'slow') this.abandonSlow(needed, reads);
    this.startDecoding();
    return false;
  }

  /**
   * Hedge: shards that have not delivered in time are left out (not reported: their data is
   * fine) and the stripe is decoded from the others. cancel() guarantees a late block never
   * lands in stripe memory.
   */
  private abandonSlow(needed: number[], reads: Promise<boolean>): void {
    for (const i of needed) if (!this.loaded.has(i)) this.slow.add(i);
    this.generation++;
    reads.catch(() => {});
  }

  /**
   * From this stripe on, read k good shards and decode. Data shards that delivered this stripe
   * keep their open reads when those reach the last stripe (a degraded read adds parity readers
   * rather than reopening healthy ones); their blocks stay loaded.
   */
  private startDecoding(): void {
    this.decoding = true;
    for (const [i, r] of this.readers) {
      if (this.loaded.has(i) && r.lastStripe >= this.last) continue;
      r.cancel();
      this.readers.delete(i);
    }
  }

  /** Reads k good shards of stripe s (retrying with others as shards fail) and reconstructs it. */
  private async decodeStripe(s: number): Promise<void> {
    const need = this.replica ? 1 : this.unit.k;
    for (;;) {
      const sources = this.chooseSources(need);
      if (await this.readInto(s, sources.filter((i) => !this.loaded.has(i)), () => this.last)) {
        if (!this.replica) {
          const present = [...Array(this.n).keys()].map((i) => sources.includes(i));
          this.stripe.reconstruct(present, { dataOnly: true, len: this.layout.blockLen(s) });
        }
        return;
      }
    }
  }

  /** The `need` preferred shards not known bad; slow ones only as a last resort. */
  private chooseSources(need: number): number[] {
    let sources = this.preference.filter((i) => !this.bad.has(i) && !this.slow.has(i)).slice(0, need);
    if (sources.length < need) sources = this.preference.filter((i) => !this.bad.has(i)).slice(0, need);
    if (sources.length < need) {
      throw new QuorumError(`only ${this.n - this.bad.size} of ${this.n} shards of unit ${this.unit.unitId} are readable; ${need} needed`, []);
    }
    return sources;
  }

  /** Reads stripe s's block of each shard; failed shards are marked bad. True when all arrived. */
  private async readInto(s: number, shards: number[], to: (i: number) => number): Promise<boolean> {
    const gen = this.generation;
    const results = await Promise.allSettled(
      shards.map(async (i) => {
        const views = await this.readerFor(i, s, to(i)).readBlock(s, this.stripe, this.replica ? 0 : i);
        if (gen !== this.generation) return;
        this.loaded.add(i);
        this.blockViews.set(i, views);
      }),
    );
    if (gen !== this.generation) return false;
    for (const r of results) {
      if (r.status === 'fulfilled') continue;
      if (r.reason instanceof ShardReadError) this.markBad(r.reason);
      else throw r.reason;
    }
    return results.every((r) => r.status === 'fulfilled');
  }

  private readerFor(i: number, from: number, to: number): ShardReader {
    let r = this.readers.get(i);
    if (!r) {
      const b = this.backends.get(this.unit.placement[i]!);
      if (!b) throw new ShardReadError(i, 'unavailable', `backend ${this.unit.placement[i]} is not configured`);
      r = new ShardReader(i, b, shardKey(this.input.bucket, this.unit.unitId, i), this.layouts[i]!, from, to, this.salt, this.input.latency);
      this.readers.set(i, r);
    }
    return r;
  }

  private markBad(err: ShardReadError): void {
    this.bad.add(err.shardIndex);
    this.readers.get(err.shardIndex)?.cancel();
    this.readers.delete(err.shardIndex);
    this.input.onUnhealthy?.(err);
  }

  /** Data shards whose bytes in stripe s overlap [start, end]. */
  private neededData(s: number): number[] {
    const { start, end } = this.input;
    return [...Array(this.unit.k).keys()].filter((i) => {
      const span = this.layout.dataSpan(s, i);
      return span.length > 0 && span.offset <= end && span.offset + span.length > start;
    });
  }

  /** The last stripe in [first, last] where data shard i holds requested bytes. */
  private lastNeeded(i: number): number {
    for (let s = this.last; s > this.first; s--) if (this.neededData(s).includes(i)) return s;
    return this.first;
  }

  /**
   * Stripe s's requested bytes, in order. A data block read as it is stored goes out as views of
   * the backend's chunks, verified and never modified (no copy); a rebuilt one, or one that came
   * in many small chunks (each costs downstream), is copied out of stripe memory.
   */
  private chunksOut(s: number): Uint8Array[] {
    const { start, end } = this.input;
    const { stripeData } = this.layout;
    const from = Math.max(start, s * stripeData);
    const to = Math.min(end + 1, s * stripeData + Math.min(stripeData, this.unit.size - s * stripeData));
    const out: Uint8Array[] = [];
    for (let i = 0; i < this.unit.k; i++) {
      const span = this.layout.dataSpan(s, i);
      const lo = Math.max(from, span.offset) - span.offset, hi = Math.min(to, span.offset + span.length) - span.offset;
      if (hi <= lo) continue;
      const views = this.replica ? this.blockViews.values().next().value : this.blockViews.get(i);
      if (views && views.length <= MAX_VIEWS_PER_BLOCK) out.push(...sliceViews(views, lo, hi));
      else out.push(this.stripe.shard(this.replica ? 0 : i).slice(lo, hi));
    }
    return out;
  }

  private release(): void {
    for (const r of this.readers.values()) r.cancel();
    this.readers = new Map();
    this.stripe.free();
    this.coder.free();
  }
}

export function readUnit(input: ReadUnitInput): Promise<ReadableStream<Uint8Array>> {
  return new UnitReader(input).open();
}

/** Bytes [lo, hi) of the concatenation of `views`, as views. */
function sliceViews(views: Uint8Array[], lo: number, hi: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const v of views) {
    const a = Math.max(lo, at), b = Math.min(hi, at + v.length);
    if (b > a) out.push(v.subarray(a - at, b - at));
    at += v.length;
  }
  return out;
}

function drainAll(backends: Map<string, Backend>): Map<string, Backend> {
  const sem = new Semaphore(MAX_OPEN_SUBREQUESTS);
  return new Map([...backends].map(([id, b]) => [id, drainingBackend(b, sem)]));
}
