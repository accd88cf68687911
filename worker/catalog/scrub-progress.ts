/**
 * How the scrubber's cursor moving through a bucket becomes progress: a pass starts with the
 * first cursor stored after a complete pass (or ever) and completes when the cursor is set to
 * null; `checked` counts the objects between the old and the new `afterKey` (objects checked
 * whole: one the run stopped inside of is not counted until it is finished, so coverage never
 * reads 100% before every shard was checked). Both catalogs apply this when the scrubber stores
 * its cursor, so the scrubber itself reports nothing.
 */
import type { ScrubCursor, ScrubProgress } from './types.ts';

/** The catalog state names: the cursor (JSON ScrubCursor), and the plain last key written before. */
export const SCRUB_POSITION = 'scrub-position';
export const LEGACY_SCRUB_CURSOR = 'scrub-cursor';

/** The stored cursor; a catalog written before resume points kept the last key as a plain string. */
export function readScrubCursor(position: string | null, legacy: string | null): ScrubCursor | null {
  if (position !== null) return JSON.parse(position) as ScrubCursor;
  return legacy === null ? null : { afterKey: legacy };
}

export function noScrubYet(): ScrubProgress {
  return { cursor: null, checked: 0, passStartedAt: null, lastPassStartedAt: null, lastPassCompletedAt: null, passes: 0 };
}

/**
 * The scrubber stored `to` (null: the pass is complete); `checked`: objects with keys after the
 * progress's cursor (null: the first) up to `to.afterKey` (null: none; at completion: the last).
 */
export function advanceScrub(p: ScrubProgress, to: ScrubCursor | null, checked: number, now: number): ScrubProgress {
  const next = { ...p, cursor: to?.afterKey ?? null };
  if (p.passStartedAt === null) {
    next.passStartedAt = now;
    next.checked = 0;
  }
  next.checked += checked;
  if (to === null) {
    next.lastPassStartedAt = next.passStartedAt;
    next.lastPassCompletedAt = now;
    next.passes = p.passes + 1;
    next.passStartedAt = null;
    next.checked = 0;
  }
  return next;
}
