/**
 * A bucket's re-stripe record and what it means (upkeep/restripe.ts writes it; the admin API,
 * the status and the metrics read it). The record is a row of the bucket's catalog `state` table
 * ('restripe', no schema change): the target the re-stripe works toward (a change of policy
 * starts over), its cursor through the bucket's versions, the pass in progress, the last complete
 * pass, and what it has rewritten since the target was set, first and last swap (ms).
 * What is left is read from the bucket's ledger, which counts every stored unit and its bytes by
 * geometry ("4+2", "1+2" for three replicas) inside every commit, delete and re-stripe swap
 * (redundancy.ts): the units of a geometry the bucket's policy does not write are what the
 * re-stripe has left to rewrite (leftOf says how three replicas, also the policy's own shape for
 * small pieces, are counted). Left only goes down while a re-stripe runs: new writes use the
 * policy, a swap takes its old units off the count in the same step, deletes only remove (but a
 * multipart upload begun under the old policy and completed since adds its parts). Known
 * gap: an object stored inline has no unit, so a policy change that only moves the small-object
 * threshold is not counted (nor, alone, started).
 * Rate: bytes rewritten over the time between the first and the last swap; time remaining: bytes
 * left at that rate.
 */
import type { PolicyRedundancy } from './ledger-figures.ts';
import type { PlacementCount } from './ledger-figures.ts';

/** A stored object version's place in its bucket's (key, version id) order; `versionId` is the catalog's own id (never 'null'). */
export interface VersionAt {
  key: string;
  versionId: string;
}

/** What the re-stripe needs of a policy (engine StoragePolicy has it). */
export interface RestripePolicy {
  name: string;
  codec: string;
  k: number;
  m: number;
  small: { mode: string; threshold: number; replicas: number };
  /** Its pool of backends (config `backends`); absent: any backend. */
  backends?: string[];
  /**
   * The policies of the configured storage classes (issue 44), by class: a version of a class is
   * rewritten under its class's policy, so their geometries are not left either. Absent: none
   * configured (the target then reads as before classes).
   */
  classes?: Record<string, RestripePolicy>;
}

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
  /** The earliest time a blocked version may become rewritable (a COMPLIANCE retention's end), ms; absent: never by itself. */
  blockedUntil?: number;
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
export function targetOf(p: RestripePolicy): string {
  const own = `${p.name}: ${p.codec} ${p.k}+${p.m}, small ${p.small.mode} <= ${p.small.threshold}${p.small.mode === 'replicate' ? ` x${p.small.replicas}` : ''}${p.backends ? ` on ${p.backends.join(',')}` : ''}`;
  const classes = Object.entries(p.classes ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  return classes.length ? `${own}; ${classes.map(([c, q]) => `${c} = ${targetOf(q)}`).join('; ')}` : own;
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
export function leftOf(
  byPolicy: Record<string, PolicyRedundancy>,
  p: RestripePolicy,
  state: RestripeState,
  placements: readonly PlacementCount[] = [],
): { units: number; bytes: number; upperBound: boolean } {
  // Every geometry a class of the bucket writes (issue 44) is its own, as the bucket policy's.
  const all = [p, ...Object.values(p.classes ?? {})];
  const own = new Set(all.map((q) => `${q.k}+${q.m}`)),
    small = new Set(all.map((q) => `1+${q.small.replicas - 1}`));
  const countSmall = !clean(state);
  let units = 0,
    bytes = 0,
    upperBound = false;
  for (const [shape, r] of Object.entries(byPolicy)) {
    if (own.has(shape) || (small.has(shape) && !countSmall)) continue;
    for (const s of [...r.byShardsLeft, r.belowK]) {
      units += s.units;
      bytes += s.bytes;
      if (small.has(shape) && s.units) upperBound = true;
    }
  }
  // Units of an own geometry outside the pool of every policy that writes it (a pool changed, or
  // a class's pool): the ledger counts units by the backends they are on (placement-counts.ts).
  for (const pc of placements) {
    const writers = all.filter((q) => q.k === pc.k && q.m === pc.m);
    if (!writers.length || writers.some((q) => !q.backends)) continue; // another geometry (above), or a pool-less policy's
    if (writers.some((q) => pc.on.every((id) => q.backends!.includes(id)))) continue;
    units += pc.units;
    bytes += pc.bytes;
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

/**
 * Whether the bucket has work at `now`: a pass in progress, units left beyond those the last pass
 * found it cannot rewrite, or a version it could not rewrite then that may be rewritten now.
 */
export function hasWork(state: RestripeState, left: { units: number }, now: number): boolean {
  const until = state.last?.blockedUntil;
  return state.cursor !== null || left.units > (state.last?.blockedUnits ?? 0) || (left.units > 0 && until !== undefined && now >= until);
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

/**
 * One bucket's progress toward `policy`, from its ledger's units per geometry and its record
 * (null: none); null when there is nothing to show (no unit left, nothing rewritten toward it).
 */
export function restripeProgressOf(
  bucket: string,
  policy: RestripePolicy,
  byPolicy: Record<string, PolicyRedundancy>,
  record: RestripeState | null,
  now = Date.now(),
  placements: readonly PlacementCount[] = [],
): BucketRestripeProgress | null {
  const target = targetOf(policy);
  const state = record && record.target === target ? record : freshState(target);
  const left = leftOf(byPolicy, policy, state, placements);
  if (left.units === 0 && state.rewritten === null) return null;
  const r = state.rewritten;
  const seconds = r ? (r.last - r.first) / 1000 : 0;
  const bytesPerSecond = r && seconds > 0 ? r.bytes / seconds : null;
  return {
    bucket,
    policy: policy.name,
    target,
    left,
    rewritten: { versions: r?.versions ?? 0, bytes: r?.bytes ?? 0 },
    bytesPerSecond,
    secondsRemaining: bytesPerSecond ? left.bytes / bytesPerSecond : null,
    passes: state.passes,
    inPass: state.cursor !== null,
    pass: state.pass,
    last: state.last,
    blocked: state.last?.blocked ?? 0,
    done: !hasWork(state, left, now),
    lastError: state.lastError,
  };
}
