/**
 * The rate of an upkeep event (repairs done, units scrubbed) over its current run of activity
 * (issue 37: a recovery's ETA said 5,015 s and took 25 s, because 25 s of repairs were averaged
 * over the whole 5-minute window). The run is the unbroken sequence of minutes, back from the
 * latest one in the window, in which the event happened; it starts when the first of them first
 * saw it (the minute row's `eventsFirstAt`, the flush that first carried it; rows written before
 * it existed: the minute's start) and runs to now, so a run that stopped decays instead of
 * holding its last speed.
 */
import type { EventName, MinuteRow } from './types.ts';

/** Shortest run the rate divides by: a flush carries a few seconds of events at once. */
export const MIN_RUN_MS = 5_000;
const MINUTE_MS = 60_000;

export interface ActiveRate {
  /** Events per second over the run; 0 with none in the window. */
  perSecond: number;
  /** When the run began (null: none). */
  since: number | null;
}

export function activeRate(minutes: readonly MinuteRow[], name: EventName, now: number, windowMs: number): ActiveRate {
  const rows = minutes.filter((m) => m.at + MINUTE_MS > now - windowMs).sort((a, b) => b.at - a.at);
  let count = 0,
    since: number | null = null,
    expect: number | null = null;
  for (const m of rows) {
    const n = m.counters.events[name] ?? 0;
    if (n === 0) {
      if (since !== null) break; // the run ended before this minute
      continue;
    }
    if (expect !== null && m.at !== expect) break; // a quiet minute between: another run
    count += n;
    since = m.counters.eventsFirstAt?.[name] ?? m.at;
    expect = m.at - MINUTE_MS;
  }
  if (since === null) return { perSecond: 0, since: null };
  return { perSecond: count / (Math.max(MIN_RUN_MS, now - since) / 1000), since };
}
