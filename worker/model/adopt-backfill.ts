/**
 * An adopted bucket's backfill record (issue 41, docs/ADOPTION.md "Background backfill") and what
 * it means. The record is a row of the bucket's catalog `state` table ('adopt', no schema change),
 * written by each backfill run (adopt/backfill.ts) and by the operator's start, pause and detach
 * (admin API, `shardgate adopt`); the admin API, the status page and the metrics read it.
 * - A **pass** walks the source's listing in key order from `cursor` (the last key done), so a
 *   run cut short (its object budget, its deadline, a killed gateway) goes on from there: a key
 *   done is never read again in that pass.
 * - A pass is **clean** when nothing in it failed and no source object changed between the
 *   listing and its read; the move is **complete** once a pass ended clean. Passes go on after
 *   that (one per `repassMs`: config `sources.<bucket>.repassHours`, default 24) to adopt source
 *   objects changed since, until the source is detached. Each costs a listing of the whole source.
 * - Rate: bytes the backfill adopted over the time between its first and its last adoption; time
 *   left: the bytes of the pass not yet walked (the estimate's or the last pass's total, less what
 *   this pass has walked) at that rate.
 */
import type { PricedBackend } from './prices.ts';
import { BYTES_PER_GB } from './prices.ts';

/** What one pass met, per source object listed. */
export interface PassCounts {
  /** Source objects listed and walked, and their bytes. */
  listed: number;
  listedBytes: number;
  /** Adopted by the backfill for the first time. */
  adopted: number;
  /** Adopted again: the source's ETag or size differed from the adopted version's. */
  readopted: number;
  /** Bytes of those adoptions. */
  bytes: number;
  /** Already held as listed (adopted by a client's read, or written through shardgate: a write wins). */
  held: number;
  /** Deleted through shardgate (a tombstone): never brought back. */
  deleted: number;
  /** Changed or removed in the source between its listing and its read: the next pass sees it again. */
  changed: number;
  /** Keys under the gateway's reserved prefix, which the source may hold but shardgate never serves. */
  skipped: number;
  failed: number;
}

export interface BackfillState {
  /** When the operator started the backfill (ms); null: only estimated. */
  startedAt: number | null;
  paused: boolean;
  /** When the source was detached (ms): it is never read again. */
  detachedAt: number | null;
  /** A pass is in progress; `cursor` is the last key it did (null: none yet). */
  inPass: boolean;
  cursor: string | null;
  passStartedAt: number | null;
  /** Complete passes. */
  passes: number;
  pass: PassCounts;
  last: (PassCounts & { startedAt: number; endedAt: number }) | null;
  /** When the last pass that ended clean ended (ms): the move was complete then. */
  cleanAt: number | null;
  /** Since the start, over every pass: the backfill's own source requests and the bytes it read. */
  /** `taggings`: GetObjectTagging requests; `heads`: HEADs of multipart objects' parts (their boundaries); absent from records written before they were counted. */
  totals: {
    adopted: number;
    bytes: number;
    egressBytes: number;
    gets: number;
    taggings?: number;
    heads?: number;
    lists: number;
    first: number | null;
    last: number | null;
  };
  /** The source's totals as the last complete estimate walked them (`shardgate adopt --estimate`). */
  estimate: { objects: number; bytes: number; at: number } | null;
  lastError: { at: number; key: string; message: string } | null;
}

/** How long after a clean pass the next one starts (to find source objects changed since), unless the config says. */
export const DEFAULT_REPASS_MS = 24 * 60 * 60 * 1000;

export const noCounts = (): PassCounts => ({
  listed: 0,
  listedBytes: 0,
  adopted: 0,
  readopted: 0,
  bytes: 0,
  held: 0,
  deleted: 0,
  changed: 0,
  skipped: 0,
  failed: 0,
});

export function freshState(): BackfillState {
  return {
    startedAt: null,
    paused: false,
    detachedAt: null,
    inPass: false,
    cursor: null,
    passStartedAt: null,
    passes: 0,
    pass: noCounts(),
    last: null,
    cleanAt: null,
    totals: { adopted: 0, bytes: 0, egressBytes: 0, gets: 0, taggings: 0, heads: 0, lists: 0, first: null, last: null },
    estimate: null,
    lastError: null,
  };
}

export const parseState = (row: string | null): BackfillState | null => (row === null ? null : { ...freshState(), ...(JSON.parse(row) as BackfillState) });

/** Nothing in the pass failed or changed under it: every object it listed is held as listed. */
export const isClean = (p: PassCounts): boolean => p.failed === 0 && p.changed === 0;

/** Whether a run should start a new pass now (none in progress). */
export function passDue(s: BackfillState, now: number, repassMs = DEFAULT_REPASS_MS): boolean {
  if (s.startedAt === null || s.paused || s.detachedAt !== null || s.inPass) return false;
  if (!s.last) return true;
  return !isClean(s.last) || now - s.last.endedAt >= repassMs;
}

export type BackfillPhase = 'not started' | 'walking' | 'paused' | 'waiting' | 'detached';

/** What the admin API, `shardgate adopt --status`, the status page and the metrics show of a bucket's backfill. */
export interface BackfillProgress {
  bucket: string;
  /** The source, as endpoint/bucket. */
  source: string;
  phase: BackfillPhase;
  /** A pass ended clean: every source object then listed is held (or was deleted or overwritten through shardgate). */
  complete: boolean;
  completedAt: number | null;
  passes: number;
  cursor: string | null;
  pass: PassCounts;
  last: BackfillState['last'];
  totals: BackfillState['totals'];
  /** The backfill's source egress and requests, at the source's prices (null: unpriced). */
  egress: { bytes: number; cost: number | null; perGB: number | null; prices: string | null };
  bytesPerSecond: number | null;
  objectsPerSecond: number | null;
  /** Bytes of the pass not yet walked (null: the total is not known yet), and the time they take at the rate. */
  bytesLeft: number | null;
  secondsRemaining: number | null;
  estimate: BackfillState['estimate'];
  lastError: BackfillState['lastError'];
  /**
   * Write-through (adopt/write-through.ts), when the bucket's source is written through: client
   * writes whose source copy is not made yet (one page of 1000 counted; `more`: there are more),
   * and the oldest's time (ms), the lag. Absent: not written through.
   */
  writeThrough?: { pending: number; more: boolean; oldestAt: number | null };
}

/** Cost of the backfill's source requests and egress at `prices` (GETs, GetObjectTagging and HEADs included, at getPer1000; LISTs, a class A request, at putPer1000). */
export function sourceCost(prices: PricedBackend | null, egressBytes: number, gets: number, lists: number): number | null {
  if (!prices) return null;
  return (egressBytes / BYTES_PER_GB) * prices.egressPerGB + (gets / 1000) * prices.getPer1000 + (lists / 1000) * prices.putPer1000;
}

export function progressOf(
  bucket: string,
  source: string,
  s: BackfillState | null,
  prices: PricedBackend | null,
  now: number,
  repassMs = DEFAULT_REPASS_MS,
): BackfillProgress {
  const state = s ?? freshState();
  const t = state.totals;
  const span = t.first !== null && t.last !== null && t.last > t.first ? (t.last - t.first) / 1000 : null;
  const bytesPerSecond = span ? t.bytes / span : null;
  const objectsPerSecond = span ? t.adopted / span : null;
  // The whole listing's bytes: the last complete estimate's, else the last complete pass's.
  const total = state.estimate?.bytes ?? state.last?.listedBytes ?? null;
  const bytesLeft = !state.inPass ? 0 : total === null ? null : Math.max(0, total - state.pass.listedBytes);
  const phase: BackfillPhase =
    state.detachedAt !== null
      ? 'detached'
      : state.startedAt === null
        ? 'not started'
        : state.paused
          ? 'paused'
          : state.inPass || passDue(state, now, repassMs)
            ? 'walking'
            : 'waiting';
  return {
    bucket,
    source,
    phase,
    complete: state.cleanAt !== null,
    completedAt: state.cleanAt,
    passes: state.passes,
    cursor: state.cursor,
    pass: state.pass,
    last: state.last,
    totals: t,
    egress: {
      bytes: t.egressBytes,
      cost: sourceCost(prices, t.egressBytes, t.gets + (t.taggings ?? 0) + (t.heads ?? 0), t.lists),
      perGB: prices?.egressPerGB ?? null,
      prices: prices?.source ?? null,
    },
    bytesPerSecond,
    objectsPerSecond,
    bytesLeft,
    secondsRemaining: bytesLeft === 0 ? 0 : bytesLeft !== null && bytesPerSecond ? bytesLeft / bytesPerSecond : null,
    estimate: state.estimate,
    lastError: state.lastError,
  };
}

/** An adopted bucket's backfill record (this file's record), a row of its catalog `state` table ('adopt'). */
export interface AdoptCatalog {
  /** The record as stored, or null when no backfill was ever started. NoSuchBucket. */
  getAdoptState(bucket: string): Promise<string | null>;
  /** Replaces the record; null removes it. NoSuchBucket. */
  setAdoptState(bucket: string, value: string | null): Promise<void>;
}

/** The claim of a bucket's backfill chain (adopt/backfill-chain.ts), a row of its own beside the record. */
export interface AdoptChainCatalog {
  /**
   * Claims the bucket's backfill for chain `chain`, compare-and-set: true, the claim renewed at
   * `now`, unless another chain claimed it less than `staleMs` ago (false, nothing changed).
   */
  claimAdoptChain(bucket: string, chain: string, now: number, staleMs: number): Promise<boolean>;
  /** Ends `chain`'s claim (nothing if another chain holds it). */
  endAdoptChain(bucket: string, chain: string): Promise<void>;
}
