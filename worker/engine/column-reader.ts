/**
 * ColumnReader: the streaming GET path for bytes [start, end] of a column unit (layout.ts).
 *
 * A healthy read walks the data shards that hold the range, one after the other: one backend
 * request open at a time, each block checked (XXH64) and handed on as a view of the reader's
 * buffer (valid until the consumer reads again), with no decoding and no copy. A data shard that is recorded
 * missing, or fails (missing, unreachable, corrupt) is rebuilt for the rows still needed from k
 * other shards (RowDecoder, within the 6 open subrequests) and the read goes on.
 *
 * Invariants: fewer than k good shards is QuorumError, never wrong bytes; every shard found
 * unhealthy is reported once through `onUnhealthy`; the first block is read before the stream is
 * returned (failures up front are errors, not truncated bodies).
 * With priced backends (read-cost.ts), a data shard on a backend whose egress costs more than
 * reading its rows' k counterparts elsewhere is rebuilt instead of read, from the cheapest shards.
 * Known gap: no hedging on slow shards (a slow data shard is waited for: reading around it would
 * cost k requests for one).
 */
import type { Backend } from '../../backends/types.ts';
import { createCoder, type Coder, type Stripe } from '../../coder-wasm/index.ts';
import { shardKey, type CodedUnit } from '../catalog/manifest.ts';
import { unitSalt } from './format.ts';
import { shardLayout, type UnitLayout } from './layout.ts';
import { planColumnRead } from './read-cost.ts';
import { RowDecoder } from './row-decoder.ts';
import { ShardReadError, ShardReader } from './shard-reader.ts';
import type { ReadUnitInput } from './unit-reader.ts';

/** Bytes of source blocks a degraded read holds per round (k blocks per row). */
const ROUND_BYTES = 4 * 1024 * 1024;

/** A piece of the read: data shard `shard`, rows `from`..`to`, bytes [lo, hi) of the shard's data. */
interface Span {
  shard: number;
  lo: number;
  hi: number;
  from: number;
  to: number;
}

export class ColumnReader {
  private readonly unit: CodedUnit;
  private readonly layout: UnitLayout;
  private readonly spans: Span[];
  private readonly bad: Set<number>;
  /** Data shards cheaper to rebuild than to read, and the decoder's source order (read-cost.ts; priced backends only). */
  private readonly costPlan: { avoid: Set<number>; preference: number[] } | null;
  private readonly salt: bigint;
  /** A k+m stripe for decoding, made on demand. */
  private decodeCoder: Coder | null = null;
  private decodeStripe: Stripe | null = null;
  private decoder: RowDecoder | null = null;
  private reader: ShardReader | null = null;
  private span = 0;
  private row = 0;

  constructor(private readonly input: ReadUnitInput) {
    this.unit = input.unit;
    this.layout = shardLayout(this.unit, 0);
    this.bad = new Set(this.unit.missing);
    this.salt = unitSalt(this.unit.unitId);
    const S = this.layout.stripeData, B = this.unit.blockSize;
    this.spans = [];
    for (let i = 0; i < this.unit.k; i++) {
      const lo = Math.max(input.start, i * S) - i * S, hi = Math.min(input.end + 1, (i + 1) * S, this.unit.size) - i * S;
      if (hi > lo) this.spans.push({ shard: i, lo, hi, from: Math.floor(lo / B), to: Math.floor((hi - 1) / B) });
    }
    this.row = this.spans[0]?.from ?? 0;
    const rowsBytes = (s: Span) => (s.to - s.from + 1) * B;
    this.costPlan = planColumnRead({ unit: this.unit, prices: input.prices, latency: input.latency, bad: this.bad }, this.spans.map((s) => ({ shard: s.shard, bytes: rowsBytes(s) })));
  }

  async open(): Promise<ReadableStream<Uint8Array>> {
    let first: Uint8Array[];
    try {
      first = await this.next();
    } catch (err) {
      this.release();
      throw err;
    }
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          const chunks = first.length ? first : await this.next();
          first = [];
          if (chunks.length === 0) {
            this.release();
            return controller.close();
          }
          for (const c of chunks) controller.enqueue(c);
        } catch (err) {
          this.release();
          controller.error(err);
        }
      },
      cancel: () => this.release(),
    }, { highWaterMark: 0 });
  }

  /** The requested bytes of the next row of the current span; [] at the end. */
  private async next(): Promise<Uint8Array[]> {
    for (;;) {
      const span = this.spans[this.span];
      if (!span) return [];
      if (this.row > span.to) {
        this.reader?.cancel();
        this.reader = null;
        this.span++;
        this.row = this.spans[this.span]?.from ?? 0;
        continue;
      }
      const j = this.row;
      const B = this.unit.blockSize;
      const lo = Math.max(span.lo, j * B) - j * B, hi = Math.min(span.hi, (j + 1) * B) - j * B;
      let out: Uint8Array[] | null = null;
      if (!this.bad.has(span.shard) && !this.costPlan?.avoid.has(span.shard)) out = await this.readHealthy(span, j, lo, hi);
      out ??= await this.readDecoded(span, j, lo, hi);
      this.row++;
      return out;
    }
  }

  /** Row j of the span's own shard, checked; null when that shard turns out bad. */
  private async readHealthy(span: Span, j: number, lo: number, hi: number): Promise<Uint8Array[] | null> {
    try {
      if (!this.reader) {
        const i = span.shard;
        const b = this.input.backends.get(this.unit.placement[i]!);
        if (!b) throw new ShardReadError(i, 'unavailable', `backend ${this.unit.placement[i]} is not configured`);
        this.reader = new ShardReader(i, b, shardKey(this.input.bucket, this.unit.unitId, i), shardLayout(this.unit, i), j, span.to, this.salt, this.input.latency);
      }
      return [(await this.reader.readBlock(j)).subarray(lo, hi)];
    } catch (err) {
      if (!(err instanceof ShardReadError)) throw err;
      this.reader = null;
      this.bad.add(err.shardIndex);
      this.input.onUnhealthy?.(err);
      return null;
    }
  }

  /** Row j of the span's shard rebuilt from k others. */
  private async readDecoded(span: Span, j: number, lo: number, hi: number): Promise<Uint8Array[]> {
    this.decodeCoder ??= createCoder(this.unit.k, this.unit.m);
    this.decodeStripe ??= this.decodeCoder.stripe(this.unit.blockSize);
    this.decoder ??= new RowDecoder({
      bucket: this.input.bucket, unit: this.unit, backends: this.input.backends, bad: this.bad,
      lastRow: this.layout.stripes - 1, onUnhealthy: this.input.onUnhealthy, latency: this.input.latency, preference: this.costPlan?.preference,
      rowsPerRound: Math.max(1, Math.floor(ROUND_BYTES / (this.unit.k * this.unit.blockSize))),
    });
    await this.decoder.decodeRow(j, this.decodeStripe, true);
    return [this.decodeStripe.shard(span.shard).slice(lo, hi)];
  }

  private release(): void {
    this.reader?.cancel();
    this.reader = null;
    this.decoder?.release();
    this.decodeStripe?.free();
    this.decodeCoder?.free();
    this.decodeStripe = null;
    this.decodeCoder = null;
    this.decoder = null;
  }
}
