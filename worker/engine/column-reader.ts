/**
 * ColumnReader: the streaming GET path for bytes [start, end] of a column unit (layout.ts).
 *
 * A healthy read sends the data shards that hold the range one after the other, and streams
 * the next one at once when its backend is far (FAR_BACKEND_MS; span-stream.ts: one GET each, a
 * few verified blocks held ahead), so its time to first byte overlaps with sending the one
 * before; each block is checked (XXH64), never decoded.
 *
 * A data shard that is recorded missing, or fails (missing, unreachable, corrupt), is rebuilt
 * for the rows still needed by one ColumnRebuild pass: k good sources, each opened once over
 * those rows (at most 6 open at once) and folded into the lost shards as they stream, together
 * with every other data shard of the range already known bad; the later data shards it reads as
 * sources are kept for this read where memory allows, or solved from parities left over instead
 * of read twice (column-rebuild.ts). So a degraded read of a unit makes at most 2k backend GETs
 * (the k-1 or fewer healthy data shards for their own bytes, plus k sources once), whatever its
 * size; the rebuilt and kept rows' memory is asked of the coding budget (`grow`) and given back
 * when the read ends. The streams already open ahead stay open (each is
 * that shard's own read) and the rebuild opens at most 6 minus those at once.
 *
 * A unit of a single row (small objects) is read in one parallel round instead: its needed data
 * blocks at once (at most 6 open), and for each that fails one more shard (parity first), so a
 * degraded small read makes k+1 GETs with one shard down, k+2 with two.
 *
 * Invariants: fewer than k good shards is QuorumError, never wrong bytes; every shard found
 * unhealthy is reported once through `onUnhealthy`; the first block is read before the stream is
 * returned (failures up front are errors, not truncated bodies); every reader, rebuild and
 * budget grant is released on every way the read ends (done, failed, cancelled).
 * With priced backends (read-cost.ts), a data shard on a backend whose egress costs more than
 * reading its rows' k counterparts elsewhere is rebuilt instead of read, from the cheapest shards.
 * Known gap: no hedging on slow shards (a slow data shard is waited for: reading around it would
 * cost k requests for one).
 */
import { ChunkMayBeHeld } from '../model/lent-chunks.ts';
import type { CodedUnit } from '../format/manifest.ts';
import { shardKey } from '../format/shard-key.ts';
import { ColumnRebuild } from './column-rebuild.ts';
import { unitSalt } from '../format/shard-file.ts';
import { shardLayout, type UnitLayout } from '../format/layout.ts';
import { planColumnRead } from './read-cost.ts';
import { readSingleRow, type Span } from './single-row-read.ts';
import { ShardReadError, ShardReader } from './shard-reader.ts';
import { COLUMN_READ_AHEAD, FAR_BACKEND_MS, FAR_READ_AHEAD, SpanStream } from './span-stream.ts';
import { MAX_OPEN_SUBREQUESTS } from './subrequests.ts';
import type { ReadUnitInput } from './unit-reader.ts';

export class ColumnReader {
  private readonly unit: CodedUnit;
  private readonly layout: UnitLayout;
  private readonly spans: Span[];
  private readonly bad: Set<number>;
  /** Data shards cheaper to rebuild than to read, and the source order (read-cost.ts; priced backends only). */
  private readonly costPlan: { avoid: Set<number>; preference: number[] } | null;
  private readonly salt: bigint;
  private rebuild: ColumnRebuild | null = null;
  /** Open streams by span index: the span being sent and up to COLUMN_READ_AHEAD after it. */
  private readonly streams = new Map<number, SpanStream>();
  private span = 0;
  private row = 0;
  private released = false;

  constructor(private readonly input: ReadUnitInput) {
    this.unit = input.unit;
    this.layout = shardLayout(this.unit, 0);
    this.bad = new Set(this.unit.missing);
    this.salt = unitSalt(this.unit.unitId);
    const S = this.layout.stripeData,
      B = this.unit.blockSize;
    this.spans = [];
    for (let i = 0; i < this.unit.k; i++) {
      const lo = Math.max(input.start, i * S) - i * S,
        hi = Math.min(input.end + 1, (i + 1) * S, this.layout.size) - i * S;
      if (hi > lo) this.spans.push({ shard: i, lo, hi, from: Math.floor(lo / B), to: Math.floor((hi - 1) / B) });
    }
    this.row = this.spans[0]?.from ?? 0;
    const rowsBytes = (s: Span) => (s.to - s.from + 1) * B;
    this.costPlan = planColumnRead(
      { unit: this.unit, prices: input.prices, latency: input.latency, bad: this.bad },
      this.spans.map((s) => ({ shard: s.shard, bytes: rowsBytes(s) })),
    );
  }

  async open(): Promise<ReadableStream<Uint8Array>> {
    let first: Uint8Array[];
    try {
      first =
        this.layout.stripes === 1
          ? await readSingleRow({ ...this.input, spans: this.spans, bad: this.bad, avoid: this.costPlan?.avoid, preference: this.preference() })
          : await this.next();
    } catch (err) {
      this.release();
      throw err;
    }
    if (this.layout.stripes === 1) this.span = this.spans.length; // every chunk is in `first`
    return new ReadableStream<Uint8Array>(
      {
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
        // A chunk the consumer may still hold keeps its buffer out of the pool (ChunkMayBeHeld).
        cancel: (reason) => this.release(!(reason instanceof ChunkMayBeHeld)),
      },
      { highWaterMark: 0 },
    );
  }

  /** The requested bytes of the next row of the current span; [] at the end. */
  private async next(): Promise<Uint8Array[]> {
    for (;;) {
      const span = this.spans[this.span];
      if (!span) return [];
      if (this.row > span.to) {
        this.streams.get(this.span)?.cancel();
        this.streams.delete(this.span);
        this.span++;
        this.row = this.spans[this.span]?.from ?? 0;
        continue;
      }
      const j = this.row;
      const B = this.unit.blockSize;
      const lo = Math.max(span.lo, j * B) - j * B,
        hi = Math.min(span.hi, (j + 1) * B) - j * B;
      let out: Uint8Array[] | null = null;
      // A row a rebuild has (a shard that failed as its source, or one it chose to solve) is
      // taken from it; the shard's rows before it, if any, are read as usual.
      if (this.rebuild?.has(span.shard, j)) out = [this.rebuild.row(span.shard, j, lo, hi)];
      else if (!this.lost(span.shard)) out = await this.readHealthy(span, j, lo, hi);
      out ??= [await this.readRebuilt(span, j, lo, hi)];
      this.row++;
      return out;
    }
  }

  /** Shard i is not read for its own bytes: known bad, or (priced) cheaper rebuilt. */
  private lost(i: number): boolean {
    return this.bad.has(i) || (this.costPlan?.avoid.has(i) ?? false);
  }

  /** Row j of the span's own shard, checked; null when that shard turns out bad. */
  private async readHealthy(span: Span, j: number, lo: number, hi: number): Promise<Uint8Array[] | null> {
    try {
      const stream = this.stream(this.span);
      this.readAhead();
      if (!stream) throw new ShardReadError(span.shard, 'unavailable', `backend ${this.unit.placement[span.shard]} is not configured`);
      return [(await stream.take(j)).subarray(lo, hi)];
    } catch (err) {
      if (!(err instanceof ShardReadError)) throw err;
      this.streams.get(this.span)?.cancel();
      this.streams.delete(this.span);
      if (this.released) throw err;
      this.bad.add(err.shardIndex);
      this.input.onUnhealthy?.(err);
      return null;
    }
  }

  /** The stream of span `at` from the row the read is at (opened if it is not); null: no such backend. */
  private stream(at: number): SpanStream | null {
    let stream = this.streams.get(at);
    if (!stream) {
      const span = this.spans[at]!;
      const b = this.input.backends.get(this.unit.placement[span.shard]!);
      if (!b) return null;
      const from = at === this.span ? this.row : span.from;
      const reader = new ShardReader(
        span.shard,
        b,
        shardKey(this.input.bucket, this.unit.unitId, span.shard),
        shardLayout(this.unit, span.shard),
        from,
        span.to,
        this.salt,
        this.input.latency,
      );
      stream = new SpanStream(span.shard, reader, from, span.to, this.unit.blockSize);
      this.streams.set(at, stream);
    }
    return stream;
  }

  /**
   * Opens the streams of the next spans that will be read for their own bytes (not lost, not
   * rebuilt): COLUMN_READ_AHEAD of them, or FAR_READ_AHEAD when the next one's backend is far.
   */
  private readAhead(): void {
    const next = this.spans[this.span + 1];
    const far = next !== undefined && (this.input.latency?.of(this.unit.placement[next.shard]!) ?? 0) >= FAR_BACKEND_MS;
    const ahead = far ? FAR_READ_AHEAD : COLUMN_READ_AHEAD;
    for (let at = this.span + 1; at <= this.span + ahead && at < this.spans.length; at++) {
      const s = this.spans[at]!;
      if (this.streams.has(at) || this.lost(s.shard) || this.rebuild?.has(s.shard, s.from)) continue;
      this.stream(at);
    }
  }

  /**
   * Row j of the span's shard from a rebuild. A new rebuild covers, from row j on, this shard and
   * every later data shard of the range already known lost, so one pass serves them all.
   */
  private async readRebuilt(span: Span, j: number, lo: number, hi: number): Promise<Uint8Array> {
    if (!this.rebuild?.has(span.shard, j)) {
      this.rebuild?.free();
      this.rebuild = null;
      // A stream ahead that has failed at its start names a shard that is down: the rebuild takes
      // it as a target, not as a source it would ask again. (Their GETs are in flight already:
      // waiting for their first answer costs no round trip of its own.)
      await Promise.all([...this.streams.values()].map((st) => st.started));
      if (this.released) throw new ShardReadError(span.shard, 'unavailable', 'read cancelled');
      for (const [at, st] of this.streams) {
        const failure = st.failedAtStart();
        if (!failure) continue;
        st.cancel();
        this.streams.delete(at);
        this.bad.add(failure.shardIndex);
        this.input.onUnhealthy?.(failure);
      }
      const rowsOf = (s: Span, from = s.from) => ({ shard: s.shard, from, to: s.to });
      const rest = this.spans.slice(this.span + 1);
      const rebuild = new ColumnRebuild({
        bucket: this.input.bucket,
        unit: this.unit,
        backends: this.input.backends,
        bad: this.bad,
        targets: [rowsOf(span, j), ...rest.filter((s) => this.lost(s.shard)).map((s) => rowsOf(s))],
        later: rest.filter((s) => !this.lost(s.shard)).map((s) => rowsOf(s)),
        preference: this.preference(),
        onUnhealthy: this.input.onUnhealthy,
        latency: this.input.latency,
        grow: this.input.grow,
        // The streams open ahead stay open: the rebuild has the other slots, and their shards'
        // own reads are under way (not worth solving instead).
        maxOpen: MAX_OPEN_SUBREQUESTS - this.streams.size,
        opened: new Set([...this.streams.values()].map((st) => st.shard)),
        // Priced backends: the cost plan has chosen what to read (read-cost.ts).
        solveLater: !this.costPlan,
        holdAtMost: this.costPlan ? 0 : this.input.rebuildHoldBytes,
      });
      this.rebuild = rebuild;
      await rebuild.run();
    }
    return this.rebuild!.row(span.shard, j, lo, hi);
  }

  /** Sources in order: the cost plan's, else data shards first (no decoding), then parity by backend speed. */
  private preference(): number[] {
    if (this.costPlan) return this.costPlan.preference;
    const { k, m, placement } = this.unit;
    const speed = (i: number) => this.input.latency?.of(placement[i]!) ?? 0;
    const all = [...Array(k + m).keys()];
    return [...all.slice(0, k), ...all.slice(k).sort((a, b) => speed(a) - speed(b) || a - b)];
  }

  /** Ends every read; `recycle`: their buffers may go back to the pool (no one holds a chunk of them). */
  private release(recycle = true): void {
    this.released = true;
    for (const st of this.streams.values()) st.cancel(recycle);
    this.streams.clear();
    this.rebuild?.free();
    this.rebuild = null;
  }
}
