/**
 * What the engine is told by the configuration: how each bucket's objects are stored (a
 * StoragePolicy, every default resolved) and the limits a write must respect. worker/config/config.ts
 * validates the operator's JSON and produces these; the engine never reads configuration itself.
 */
import { S3Error } from '../model/errors.ts';

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
  /** The backends (ids) its shards go to (config `backends`: a pool); absent: every placeable backend. */
  backends?: string[];
}

export interface EngineSettings {
  policies: Record<string, StoragePolicy>;
  defaultPolicy: string;
  /** Bucket name -> policy name; other buckets use defaultPolicy. */
  buckets: Record<string, string>;
  /**
   * S3 storage class -> policy name (issue 44); absent or empty: STANDARD only. STANDARD, when not
   * mapped, is the bucket's policy.
   */
  storageClasses?: Record<string, string>;
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

/** The policy of a bucket's new writes (of class STANDARD). */
export function policyFor(settings: EngineSettings, bucket: string): StoragePolicy {
  return settings.policies[settings.buckets[bucket] ?? settings.defaultPolicy]!;
}

export const STANDARD = 'STANDARD';

/**
 * What the re-stripe works toward in `bucket`: its policy and, when classes are configured, the
 * policy of each (a version is rewritten under its class's; catalog/restripe-record.ts).
 */
export function restripePolicyFor(settings: EngineSettings, bucket: string): StoragePolicy & { classes?: Record<string, StoragePolicy> } {
  const own = policyFor(settings, bucket);
  const map = settings.storageClasses ?? {};
  if (!Object.keys(map).length) return own;
  return { ...own, classes: Object.fromEntries(Object.entries(map).map(([c, name]) => [c, settings.policies[name]!])) };
}

/** The storage classes a request may name: STANDARD and the configured ones. */
export function storageClassNames(settings: Pick<EngineSettings, 'storageClasses'>): string[] {
  return [...new Set([STANDARD, ...Object.keys(settings.storageClasses ?? {})])];
}

/** Whether `storageClass` (absent: STANDARD) is one this gateway stores. */
export const knownStorageClass = (settings: Pick<EngineSettings, 'storageClasses'>, storageClass: string | undefined): boolean =>
  storageClass === undefined || storageClass === STANDARD || Object.hasOwn(settings.storageClasses ?? {}, storageClass);

/**
 * The policy a version of `storageClass` (absent: STANDARD) is stored under in `bucket`: the
 * class's configured policy, else (STANDARD unmapped) the bucket's. A class not configured is
 * InvalidStorageClass, as S3 answers a class it does not know.
 */
export function policyForClass(settings: EngineSettings, bucket: string, storageClass: string | undefined): StoragePolicy {
  const name = storageClass ?? STANDARD;
  const map = settings.storageClasses ?? {};
  if (Object.hasOwn(map, name)) return settings.policies[map[name]!]!;
  if (name === STANDARD) return policyFor(settings, bucket);
  throw new S3Error('InvalidStorageClass', undefined, { StorageClassRequested: name });
}
