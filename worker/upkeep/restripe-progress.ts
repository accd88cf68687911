/**
 * A re-stripe's progress (issue 26), per bucket. What is left is read from the bucket's ledger,
 * which counts every stored unit and its bytes by geometry ("4+2", "1+2" for three replicas)
 * inside every commit, delete and re-stripe swap (redundancy.ts): the units of a geometry the
 * bucket's policy no longer writes are what the re-stripe has left to rewrite (leftOf says how
 * three replicas, also the policy's own shape for small pieces, are counted). Left only goes
 * down while a re-stripe runs: new writes use the policy, a swap takes its old units off the
 * count in the same step, deletes only remove. Known gap: an object stored inline has no unit, so
 * a policy change that only moves the small-object threshold is not counted (nor, alone, started).
 * What the re-stripe did is kept in the bucket's catalog `state` table (row 'restripe', no
 * schema change) with its cursor through the bucket's versions: the target it works toward (a
 * change of policy starts over), the pass in progress, the last complete pass, and what it has
 * rewritten since the target was set, first and last swap (ms). Rate: bytes rewritten over the
 * time between the first and the last swap; time remaining: bytes left at that rate.
 */
import type { HealthCatalog, RestripeCatalog, VersionAt } from '../catalog/types.ts';
import type { PolicyRedundancy } from '../catalog/redundancy.ts';
import { policyFor, type EngineSettings, type StoragePolicy } from '../engine/index.ts';

/** What one pass over a bucket's versions met. */
export interface PassCounts {
  /** Versions looked at (delete markers are not versions with bytes: never counted). */
  scanned: number;
  rewritten: number;
  /** Swaps lost to a client's change of the version (retried by another pass). */
  conflicts: number;
  /** Versions the gateway cannot rewrite (SSE-C), and their units (which stay counted as left). */
  blocked: number;
  blockedUnits: number;
  /** Rewrites that failed (a backend refused, a check failed): retried by another pass. */
  failed: number;
}

export interface RestripeState {
  /** The policy and geometry the re-stripe works toward (targetOf); another one starts over. */
  target: string;
  /** The last version done in the pass in progress; null: between passes. */
  cursor: VersionAt | null;
  /** Complete passes toward `target`. */
  passes: number;
  pass: PassCounts;
  last: PassCounts | null;
  /** Since `target` was set: versions and object bytes rewritten, first and last swap (ms); null before the first. */
  rewritten: { versions: number; bytes: number; first: number; last: number } | null;
  lastError: { at: number; key: string; versionId: string; message: string } | null;
}

export const noPass = (): PassCounts => ({ scanned: 0, rewritten: 0, conflicts: 0, blocked: 0, blockedUnits: 0, failed: 0 });

/** What a policy writes, as a re-stripe target: its name and every geometry and small-object setting. */
export function targetOf(p: StoragePolicy): string {
  return `${p.name}: ${p.codec} ${p.k}+${p.m}, small ${p.small.mode} <= ${p.small.threshold}${p.small.mode === 'replicate' ? ` x${p.small.replicas}` : ''}`;
}

/** The pass ended with nothing rewritten, lost or failed: every version it met conforms or is blocked. */
const clean = (state: RestripeState): boolean => state.last !== null && state.last.rewritten === 0 && state.last.conflicts === 0 && state.last.failed === 0;

/**
 * Units, and their bytes, the policy would not write as they are. The ledger knows a unit's
 * geometry, not why it has it: three replicas ("1+2") are also what the policy writes for small
 * pieces (small objects in mode 'replicate'; small multipart parts in either mode: a part is
 * never inline). So units of that geometry count as left (`upperBound`) until a pass over the
 * bucket ends clean, after which they are taken to be small pieces.
 */
export function leftOf(byPolicy: Record<string, PolicyRedundancy>, p: StoragePolicy, state: RestripeState): { units: number; bytes: number; upperBound: boolean } {
  const own = `${p.k}+${p.m}`, small = `1+${p.small.replicas - 1}`;
  const countSmall = own !== small && !clean(state);
  let units = 0, bytes = 0, upperBound = false;
  for (const [shape, r] of Object.entries(byPolicy)) {
    if (shape === own || (shape === small && !countSmall)) continue;
    for (const s of [...r.byShardsLeft, r.belowK]) {
      units += s.units;
      bytes += s.bytes;
      if (shape === small && s.units) upperBound = true;
    }
  }
  return { units, bytes, upperBound };
}

export function freshState(target: string): RestripeState {
  return { target, cursor: null, passes: 0, pass: noPass(), last: null, rewritten: null, lastError: null };
}

/** The bucket's row for `target`: a row for another target (the policy changed again) starts over. */
export function parseRestripeState(value: string | null, target: string): RestripeState {
  const saved = value === null ? null : (JSON.parse(value) as RestripeState);
  return saved && saved.target === target ? saved : freshState(target);
}

/** Whether the bucket has work: a pass in progress, or units left beyond those the last pass found it cannot rewrite. */
export function hasWork(state: RestripeState, left: { units: number }): boolean {
  return state.cursor !== null || left.units > (state.last?.blockedUnits ?? 0);
}

export interface BucketRestripeProgress {
  bucket: string;
  policy: string;
  target: string;
  /** Units (and their object bytes) the policy would not write as they are (leftOf; `upperBound`: small replicas counted until a clean pass). */
  left: { units: number; bytes: number; upperBound: boolean };
  rewritten: { versions: number; bytes: number };
  /** Bytes per second between the first and the last swap; null before two swaps apart in time. */
  bytesPerSecond: number | null;
  /** Seconds until `left.bytes` are rewritten at that rate; null without a rate. */
  secondsRemaining: number | null;
  passes: number;
  /** A pass is in progress (its counts), and the last complete one's. */
  inPass: boolean;
  pass: PassCounts;
  last: PassCounts | null;
  /** Versions the gateway cannot rewrite (SSE-C), from the last complete pass. */
  blocked: number;
  /** Nothing left that the re-stripe can rewrite. */
  done: boolean;
  lastError: RestripeState['lastError'];
}

/** Every bucket with units left to re-stripe or a re-stripe record for its policy now. */
export async function restripeProgress(catalog: RestripeCatalog & HealthCatalog, settings: EngineSettings, now = new Date()): Promise<BucketRestripeProgress[]> {
  const out: BucketRestripeProgress[] = [];
  for (const { name } of await catalog.listBucketRecords()) {
    const policy = policyFor(settings, name);
    const target = targetOf(policy);
    const [health, saved] = await Promise.all([catalog.bucketHealth(name, now), catalog.getRestripeState(name)]);
    const state = parseRestripeState(saved, target);
    const left = leftOf(health.redundancy.byPolicy, policy, state);
    if (left.units === 0 && (saved === null || state.rewritten === null)) continue;
    const r = state.rewritten;
    const seconds = r ? (r.last - r.first) / 1000 : 0;
    const bytesPerSecond = r && seconds > 0 ? r.bytes / seconds : null;
    out.push({
      bucket: name, policy: policy.name, target, left,
      rewritten: { versions: r?.versions ?? 0, bytes: r?.bytes ?? 0 },
      bytesPerSecond, secondsRemaining: bytesPerSecond ? left.bytes / bytesPerSecond : null,
      passes: state.passes, inPass: state.cursor !== null, pass: state.pass, last: state.last,
      blocked: state.last?.blocked ?? 0, done: !hasWork(state, left), lastError: state.lastError,
    });
  }
  return out;
}
