/**
 * The figures a bucket's ledger sums to, as types (a leaf: catalog/types.ts and the records name
 * them without importing what computes them): usage per storage class (usage.ts), units per
 * placement (placement-counts.ts) and redundancy per policy (redundancy.ts), and the name both
 * counts give a policy.
 */

/** A unit's policy as the counts name it: its geometry, "k+m". */
export const policyName = (u: { k: number; m: number }): string => `${u.k}+${u.m}`;

/** Objects, their bytes and their shard files' stored bytes, per storage class. */
export type ClassUsage = Record<string, { objects: number; bytes: number; storedBytes: number }>;

/** Units of one policy whose present shards lie on `on` (backend ids, sorted, one per shard). */
export interface PlacementCount {
  k: number;
  m: number;
  on: string[];
  units: number;
  bytes: number;
}

export interface UnitsAndBytes {
  units: number;
  /** Bytes of object data in those units (as clients stored them). */
  bytes: number;
}

/** One policy's units by shards left. */
export interface PolicyRedundancy {
  k: number;
  m: number;
  /** From whole (k+m shards left) down to exactly k: m+1 entries, zeros included. */
  byShardsLeft: (UnitsAndBytes & { shardsLeft: number })[];
  /** Fewer than k shards left: their objects cannot be read. */
  belowK: UnitsAndBytes;
}
