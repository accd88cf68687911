/**
 * Which k of a unit's k+m shards a read fetches, by expected cost and health (issue 14). A read
 * costs, per shard it opens, one GET-class request plus the bytes it pulls times the backend's
 * egress price; decoding costs worker CPU. A data shard on a backend with costly egress is
 * replaced by parity on cheaper ones when reading those and decoding costs less than the egress
 * it saves (the coder decodes at over 10 GB/s, so with egress at cents per GB it usually does).
 *
 * Health: shards known bad are never planned; among shards of equal cost the faster backend
 * comes first (BackendLatency, which counts a failure as a very slow answer), and data shards
 * before parity, in index order: with equal prices the order is exactly the readers' own (data
 * first, parity by speed) and no read decodes that would not have: healthy-read latency is
 * unchanged. A unit with a shard on an unpriced backend is not planned at all (null): a price is
 * either known for every shard or the comparison means nothing.
 *
 * Used by unit-reader.ts (striped units) and column-reader.ts (column units); pure: no I/O.
 * Known gaps: request counts are estimated as one GET per shard read (a wide read in rounds, or
 * a column read crossing spans, opens more); prices are flat (no tiers, no free allowances).
 */
import type { CodedUnit } from '../format/manifest.ts';
import type { BackendLatency } from './backend-latency.ts';
import type { UnitLayout } from '../format/layout.ts';
import { BYTES_PER_GB, type PriceBook } from '../model/prices.ts';

/**
 * Worker CPU to reconstruct one GB, in dollars: Workers Standard bills $0.02 per million CPU-ms;
 * a GB of reconstruct plus the bookkeeping around it is taken as one CPU-second (the coder alone
 * is ten times faster), so $0.00002. It is what keeps a tie in egress from turning into decoding.
 */
export const DECODE_DOLLARS_PER_GB = 0.00002;

export interface ReadCostInput {
  unit: Pick<CodedUnit, 'k' | 'm' | 'codec' | 'placement'>;
  prices?: PriceBook;
  latency?: BackendLatency;
  /** Shards never to read (recorded missing, found bad). */
  bad: ReadonlySet<number>;
}

/** What a striped read should do: its source order, and whether to decode from the start. */
export interface StripedReadPlan {
  /** Every shard, cheapest first (ties: data shards in index order, then parity by speed). */
  preference: number[];
  /** True when k of the cheapest shards cost less, decoding included, than the data shards. */
  decode: boolean;
}

/** What a column read should do: the data shards to decode around, and the decoder's source order. */
export interface ColumnReadPlan {
  preference: number[];
  /** Data shards whose rows are cheaper rebuilt from k others than read. */
  avoid: Set<number>;
}

/** Dollars to open shard i once and pull `bytes` from it; null when its backend is unpriced. */
export function shardReadCost(input: ReadCostInput, i: number, bytes: number): number | null {
  const p = input.prices?.get(input.unit.placement[i]!);
  if (!p) return null;
  return p.getPer1000 / 1000 + (bytes / BYTES_PER_GB) * p.egressPerGB;
}

/**
 * Striped units, for the object bytes [start, end] of a unit laid out as `layout`. Null when the
 * unit is not fully priced: the reader then keeps its own order.
 */
export function planStripedRead(input: ReadCostInput, layout: UnitLayout, start: number, end: number): StripedReadPlan | null {
  if (!fullyPriced(input)) return null; // before the walk over the range's rows: reads without prices pay nothing
  const { k, codec } = input.unit;
  // A healthy read pulls whole blocks of the data shards the range touches; a decoding one the
  // block of every row of the range from each of its k sources.
  const { first, last } = layout.stripeRange(start, end);
  const dataBytes = new Array<number>(k).fill(0);
  let decodeBytes = 0;
  for (let s = first; s <= last; s++) {
    decodeBytes += layout.blockLen(s);
    for (let i = 0; i < k; i++) {
      const span = layout.dataSpan(s, i);
      if (span.length > 0 && span.offset <= end && span.offset + span.length > start) dataBytes[i]! += layout.blockLen(s);
    }
  }
  const preference = costOrder(input, decodeBytes);
  if (!preference) return null;
  if (codec === 'replica') return { preference, decode: true };
  const cost = (i: number, bytes: number) => shardReadCost(input, i, bytes)!;
  let healthy = 0;
  for (let i = 0; i < k; i++) if (dataBytes[i]) healthy += cost(i, dataBytes[i]!);
  const sources = preference.filter((i) => !input.bad.has(i)).slice(0, k);
  if (sources.length < k || sources.every((i) => i < k)) return { preference, decode: false };
  const decoding = sources.reduce((sum, i) => sum + cost(i, decodeBytes), 0) + decodeDollars(k * decodeBytes);
  return { preference, decode: decoding < healthy };
}

/**
 * Column units: for each span of the read (data shard `shard`, whose rows hold `bytes` bytes: read
 * from it, or rebuilt from k sources pulling the same rows each), whether to decode around it.
 */
export function planColumnRead(input: ReadCostInput, spans: { shard: number; bytes: number }[]): ColumnReadPlan | null {
  // Sources are ranked by what pulling a span's rows costs (egress weighs in, not only requests).
  if (!fullyPriced(input)) return null;
  const preference = costOrder(input, Math.max(1, ...spans.map((s) => s.bytes)));
  if (!preference) return null;
  const avoid = new Set<number>();
  const { k } = input.unit;
  for (const { shard, bytes } of spans) {
    if (input.bad.has(shard)) continue;
    const sources = preference.filter((i) => i !== shard && !input.bad.has(i)).slice(0, k);
    if (sources.length < k) continue;
    const decoding = sources.reduce((sum, i) => sum + shardReadCost(input, i, bytes)!, 0) + decodeDollars(k * bytes);
    if (decoding < shardReadCost(input, shard, bytes)!) avoid.add(shard);
  }
  return { preference, avoid };
}

/** All shards by the cost of pulling `bytes` from each, ties as the readers order them; null if any is unpriced. */
function costOrder(input: ReadCostInput, bytes: number): number[] | null {
  const { k, m, codec } = input.unit;
  const all = [...Array(k + m).keys()];
  const costs = all.map((i) => shardReadCost(input, i, bytes));
  if (costs.some((c) => c === null)) return null;
  const speed = (i: number) => input.latency?.of(input.unit.placement[i]!) ?? 0;
  // Replicas are all alike: by speed. Coded: data shards (no decoding) before parity.
  const rank = (i: number) => (codec === 'replica' ? [0, speed(i), i] : i < k ? [0, i, 0] : [1, speed(i), i]);
  return all.sort((a, b) => {
    const d = costs[a]! - costs[b]!;
    if (d !== 0) return d;
    const [ra, rb] = [rank(a), rank(b)];
    return ra[0]! - rb[0]! || ra[1]! - rb[1]! || ra[2]! - rb[2]!;
  });
}

function fullyPriced(input: ReadCostInput): boolean {
  return input.prices !== undefined && input.unit.placement.every((id) => input.prices!.has(id));
}

function decodeDollars(bytes: number): number {
  return (bytes / BYTES_PER_GB) * DECODE_DOLLARS_PER_GB;
}
