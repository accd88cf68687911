/**
 * How the scrubber's cursor moving through a bucket becomes progress: a pass starts when the
 * cursor leaves null and completes when it returns to null; `checked` counts the objects between
 * the old and the new cursor. Both catalogs apply this when the scrubber stores its cursor, so
 * the scrubber itself reports nothing.
 */
import type { ScrubProgress } from './types.ts';

export function noScrubYet(): ScrubProgress {
  return { cursor: null, checked: 0, passStartedAt: null, lastPassStartedAt: null, lastPassCompletedAt: null, passes: 0 };
}

/** `checked`: objects with keys after `from` (null: the first) up to `to` (null: the last). */
export function advanceScrub(p: ScrubProgress, to: string | null, checked: number, now: number): ScrubProgress {
  const next = { ...p, cursor: to };
  if (p.cursor === null) {
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
