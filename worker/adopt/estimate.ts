/**
 * The bill of an adoption before it starts (issue 41, `shardgate adopt BUCKET --estimate`): a walk
 * of the source's listing only (ListObjectsV2 pages, no GET), its objects and bytes, what reading
 * them once costs at the source's prices (egress, one GET per object, the listing's pages), and
 * what they take stored under the bucket's policy and cost per month at the policy's backends'
 * prices.
 * Stored bytes per object, as the engine writes them: up to the policy's small threshold, inline
 * in the catalog (no backend bytes) or `replicas` whole copies; above it, k data shards and m
 * parity shards of ceil(size / k) bytes each. Shard headers, padding to the block size, seals and
 * keys under the reserved prefix are left out (a few KiB per object at most).
 * A walk is bounded (`maxPages` per call: a Worker invocation has a subrequest limit): an answer
 * with `next` not null is partial; call again with `after` = `next` and add the figures
 * (`shardgate adopt --estimate` does). Objects the bucket already holds are counted too: the
 * estimate is of the whole source, the upper bound of what the backfill reads.
 */
import type { PricedBackend } from '../model/prices.ts';
import { BYTES_PER_GB } from '../model/prices.ts';
import { sourceCost } from '../model/adopt-backfill.ts';
import type { SourceClient } from './source-client.ts';
import { isReserved } from './tombstones.ts';

export interface AdoptionEstimate {
  bucket: string;
  source: string;
  /** Where the walk started (null: the first key) and where the next call starts (null: the walk is complete). */
  after: string | null;
  next: string | null;
  objects: number;
  bytes: number;
  /** The largest object (bytes) and how many are multipart (an ETag "...-N"). */
  largest: number;
  multipart: number;
  /**
   * Source requests the backfill makes: one GET per object, at most one GetObjectTagging per
   * object (not asked when the source's GET says the object has no tags: `x-amz-tagging-count: 0`),
   * one LIST per page of 1000 keys (as this walk made).
   */
  pages: number;
  /** `heads`: one per part of each multipart object (its part boundaries are asked before its adoption). */
  requests: { gets: number; taggings: number; heads: number; lists: number };
  /** Reading them once from the source, at its prices (null: unpriced: give `sources.<bucket>.prices`). */
  egress: { bytes: number; perGB: number | null; cost: number | null; prices: string | null };
  /** Under the bucket's policy: bytes on the backends, and their monthly price (null: no priced backend). */
  storage: { policy: string; bytes: number; perMonth: number | null };
}

/**
 * What the estimate needs of the bucket's storage policy (the engine's StoragePolicy has it; named
 * here by shape, as adoption layers on the ObjectStore contract, not on the engine).
 */
export interface PolicyShape {
  name: string;
  k: number;
  m: number;
  small: { mode: string; threshold: number; replicas: number };
  /** Its pool of backends (absent: any active backend). */
  backends?: string[];
}

/** Bytes the engine stores on the backends for an object of `size` under `policy`. */
export function storedBytes(size: number, policy: Pick<PolicyShape, 'k' | 'm' | 'small'>): number {
  if (size <= policy.small.threshold) return policy.small.mode === 'inline' ? 0 : size * policy.small.replicas;
  return Math.ceil(size / policy.k) * (policy.k + policy.m);
}

export interface EstimateInput {
  bucket: string;
  source: SourceClient;
  sourcePrices: PricedBackend | null;
  policy: PolicyShape;
  /** Storage price per GB-month of each backend the policy may place on (unpriced ones left out). */
  storagePrices: number[];
  after: string | null;
  maxPages: number;
  /** Keys per listing page (default 1000, as the backfill lists). */
  pageSize?: number;
}

export async function estimateAdoption(input: EstimateInput): Promise<AdoptionEstimate> {
  let objects = 0,
    bytes = 0,
    stored = 0,
    largest = 0,
    multipart = 0,
    partHeads = 0,
    pages = 0;
  let cursor = input.after;
  let next: string | null = null;
  for (;;) {
    const page = await input.source.list({ prefix: '', delimiter: null, startAfter: cursor, continuationToken: null, maxKeys: input.pageSize ?? 1000 });
    pages++;
    for (const o of page.objects) {
      if (isReserved(o.key)) continue; // never adopted
      objects++;
      bytes += o.size;
      stored += storedBytes(o.size, input.policy);
      largest = Math.max(largest, o.size);
      const parts = Number(/-(\d+)"?$/.exec(o.etag)?.[1] ?? 0);
      if (parts) multipart++;
      if (parts > 1) partHeads += parts;
    }
    const last = page.objects.at(-1)?.key;
    if (!page.isTruncated || last === undefined) break;
    cursor = last;
    if (pages >= input.maxPages) {
      next = last;
      break;
    }
  }
  const p = input.sourcePrices;
  const perGBMonth = input.storagePrices.length ? input.storagePrices.reduce((a, b) => a + b, 0) / input.storagePrices.length : null;
  const lists = pages;
  return {
    bucket: input.bucket,
    source: `${input.source.settings.endpoint}/${input.source.settings.bucket}`,
    after: input.after,
    next,
    objects,
    bytes,
    largest,
    multipart,
    pages,
    requests: { gets: objects, taggings: objects, heads: partHeads, lists },
    egress: { bytes, perGB: p?.egressPerGB ?? null, cost: sourceCost(p, bytes, 2 * objects + partHeads, lists), prices: p?.source ?? null },
    storage: { policy: input.policy.name, bytes: stored, perMonth: perGBMonth === null ? null : (stored / BYTES_PER_GB) * perGBMonth },
  };
}
