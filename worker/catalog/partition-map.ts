/**
 * A bucket's partition map (docs/PARTITIONS.md): its key space cut into contiguous ranges, each
 * owned by one CatalogObject instance, and an epoch that grows with every change of the map. The
 * bucket's root instance keeps the map (state row PARTITION_MAP); every instance of a split
 * bucket keeps the range it owns and the epoch it was given it at (state row PARTITION_RANGE),
 * and refuses a call routed by an older map (Moved: the caller refreshes its map and repeats).
 * A bucket that never split has neither row: its root owns ["", end) at epoch 0, so buckets
 * written by earlier releases open as one partition and pay nothing for the map.
 * Order: keys compare in UTF-8 byte order (model/listing.ts compareKeys), as listings do.
 */
import { compareKeys } from '../model/listing.ts';

/** State row of the root: the map (JSON PartitionMap). Journaled with the bucket's settings. */
export const PARTITION_MAP = 'partition-map';
/** State row of every instance of a split bucket: its own range (JSON OwnedRange). */
export const PARTITION_RANGE = 'partition-range';

/** One range: keys from `low` (inclusive) up to the next range's low, owned by `instance`. */
export interface PartitionRange {
  low: string;
  instance: string;
}

/** Ranges ascending by low, the first at '' (so every key has an owner); epoch >= 0. */
export interface PartitionMap {
  epoch: number;
  ranges: PartitionRange[];
  /**
   * Partitions merged into a neighbour (durable-object.ts mergePartition): each left holding no
   * key, its range empty at the epoch it left, so a call routed to it by an older map is answered
   * Moved. Named here so their journals are kept up and they go with the bucket.
   */
  retired?: string[];
}

/** What one instance owns: [low, high) (high null: to the end) since map `epoch`. */
export interface OwnedRange {
  low: string;
  high: string | null;
  epoch: number;
}

/** The answer of an instance that does not own what a call was routed to it for. */
export interface Moved {
  moved: number;
}

export function isMoved(answer: unknown): answer is Moved {
  return typeof answer === 'object' && answer !== null && typeof (answer as Moved).moved === 'number' && Object.keys(answer).length === 1;
}

/** The map of a bucket that never split: its root owns everything. */
export function onePartition(root: string): PartitionMap {
  return { epoch: 0, ranges: [{ low: '', instance: root }] };
}

/** The index of the range holding `key`. */
export function rangeIndexOf(map: PartitionMap, key: string): number {
  let [lo, hi] = [0, map.ranges.length - 1];
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (compareKeys(map.ranges[mid]!.low, key) <= 0) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The instance holding `key`. */
export function ownerOf(map: PartitionMap, key: string): string {
  return map.ranges[rangeIndexOf(map, key)]!.instance;
}

/** Range `i` as an owned range at the map's epoch. */
export function ownedRange(map: PartitionMap, i: number): OwnedRange {
  return { low: map.ranges[i]!.low, high: map.ranges[i + 1]?.low ?? null, epoch: map.epoch };
}

export function owns(range: OwnedRange, key: string): boolean {
  return compareKeys(key, range.low) >= 0 && (range.high === null || compareKeys(key, range.high) < 0);
}

/**
 * The map cut at `boundaries` (each a new range's low), the new ranges owned by `instanceOf(i)`
 * for the i-th new one, at the next epoch. Boundaries must be distinct, non-empty and fall in
 * the first range (a static split of a bucket that never split: its root keeps the lowest range).
 */
export function splitAt(map: PartitionMap, boundaries: string[], instanceOf: (i: number) => string): PartitionMap {
  const sorted = [...boundaries].sort(compareKeys);
  if (map.ranges.length !== 1) throw new RangeError('only a bucket that never split is split statically');
  for (const [i, b] of sorted.entries()) {
    if (b === '') throw new RangeError('a boundary is a non-empty key');
    if (i > 0 && sorted[i - 1] === b) throw new RangeError(`boundary ${JSON.stringify(b)} given twice`);
  }
  return { epoch: map.epoch + 1, ranges: [map.ranges[0]!, ...sorted.map((low, i) => ({ low, instance: instanceOf(i) }))] };
}

/** A stored map or range, checked (a row that does not parse is a bug or corruption: thrown). */
export function parsePartitionMap(json: string): PartitionMap {
  const map = JSON.parse(json) as PartitionMap;
  const ok =
    Number.isInteger(map.epoch) &&
    Array.isArray(map.ranges) &&
    map.ranges.length > 0 &&
    map.ranges[0]!.low === '' &&
    map.ranges.every((r, i) => typeof r.instance === 'string' && (i === 0 || compareKeys(map.ranges[i - 1]!.low, r.low) < 0));
  if (!ok) throw new Error(`catalog: a partition map that does not hold: ${json.slice(0, 200)}`);
  return map;
}
