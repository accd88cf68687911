/**
 * The scrubber's passes through a bucket: a pass starts with the first cursor stored after a
 * complete pass (or ever) and completes when the cursor is set to null. Which units a pass has
 * checked is kept per unit (units.checked_at, sql-ledger.ts counts them), so coverage is counted,
 * never estimated. The catalog applies this when the scrubber records a run.
 */
import type { ScrubCursor, ScrubProgress } from './types.ts';

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
