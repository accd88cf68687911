/**
 * What the engine is told by the configuration: how each bucket's objects are stored (a
 * StoragePolicy, every default resolved) and the limits a write must respect. worker/config/config.ts
 * validates the operator's JSON and produces these; the engine never reads configuration itself.
 */

/** A policy with every default resolved: what a write uses. Geometry is then recorded per unit. */
export interface StoragePolicy {
  name: string;
  codec: 'rs-cauchy-gf8' | 'replica';
  k: number;
  m: number;
  writeQuorum: number;
  /** Bytes of each shard per stripe; a stripe holds k of them. */
  blockSize: number;
  /** Objects up to `threshold` bytes skip coding: stored inline in the catalog or as replicas. */
  small: { threshold: number; mode: 'inline' | 'replicate'; replicas: number };
  /** Seal new objects when the gateway has an active key (absent: true). */
  encrypt?: boolean;
}

export interface EngineSettings {
  policies: Record<string, StoragePolicy>;
  defaultPolicy: string;
  /** Bucket name -> policy name; other buckets use defaultPolicy. */
  buckets: Record<string, string>;
  /** Largest single PutObject body. */
  maxObjectSize: number;
  /** Largest UploadPart body. */
  maxPartSize: number;
  /** Longest a write may take from its reservation to its commit (see Catalog.reserveUnits). */
  writeReservationSeconds: number;
  /** Minimum size of every part but the last (S3: 5 MiB; tests lower it). */
  minPartSize?: number;
  /** Memory the coded requests of one isolate may hold at once, how long one may wait for it, and
   *  the fraction of it one tenant may hold (coding-budget.ts; absent: 1, no limit). */
  codingBudget?: { bytes: number; maxWaitMs: number; tenantShare?: number };
}

/** The policy of a bucket's new writes. */
export function policyFor(settings: EngineSettings, bucket: string): StoragePolicy {
  return settings.policies[settings.buckets[bucket] ?? settings.defaultPolicy]!;
}
