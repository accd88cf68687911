/**
 * The scrubber's passes through a bucket: a pass starts with the first cursor stored after a
 * complete pass (or ever) and completes when the cursor is set to null. Which units a pass has
 * checked is kept per unit (units.checked_at, sql-ledger.ts counts them), so coverage is counted,
 * never estimated. The catalog applies this when the scrubber records a run.
 */
/** Where the background scrubber stopped in a bucket: after unit `afterUnit` (units in id order). */
export interface ScrubCursor {
  afterUnit: string;
}

/**
 * How far the background scrubber has come through a bucket, in units (times in ms since the
 * epoch). A unit counts as checked once every one of its shards was checked in the pass in
 * progress (between passes: in the last complete one); units written since are not, so coverage
 * never reads 100% while any unit waits for its first check.
 */
export interface ScrubProgress {
  /** Units of the bucket's stored object versions now. */
  units: number;
  /** Of which checked in the current pass (between passes: in the last complete pass). */
  checked: number;
  /** The unit that has gone longest without a check (never checked: since it was written); null with no units. */
  oldestUnchecked: { unitId: string; key: string; since: number } | null;
  /** When the current pass started; null before the first and between passes. */
  passStartedAt: number | null;
  /** The last complete pass: every unit the bucket held at its start was checked in between. */
  lastPassStartedAt: number | null;
  lastPassCompletedAt: number | null;
  passes: number;
}

/** The state row holding the cursor (JSON ScrubCursor). */
export const SCRUB_POSITION = 'scrub-position';

/** The pass times of ScrubProgress, as stored. */
export type PassTimes = Pick<ScrubProgress, 'passStartedAt' | 'lastPassStartedAt' | 'lastPassCompletedAt' | 'passes'>;

export function noScrubYet(): PassTimes {
  return { passStartedAt: null, lastPassStartedAt: null, lastPassCompletedAt: null, passes: 0 };
}

/** The scrubber stored `to` at `now` (null: the pass is complete). */
export function advanceScrub(p: PassTimes, to: ScrubCursor | null, now: number): PassTimes {
  const next = { ...p };
  next.passStartedAt ??= now;
  if (to === null) {
    next.lastPassStartedAt = next.passStartedAt;
    next.lastPassCompletedAt = now;
    next.passes = p.passes + 1;
    next.passStartedAt = null;
  }
  return next;
}
