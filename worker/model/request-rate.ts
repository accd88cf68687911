/**
 * A catalog partition's own request rate, as the partition counts it (issue 39: split on sustained
 * request rate). A Durable Object is one thread and every call to it comes through its one entry
 * point (CatalogObject.dispatch), so it counts exactly what it answers: no isolate's guess. The
 * counts live in the object's memory only: a hot object is not evicted, and one that was idle
 * long enough to be evicted has no rate worth keeping.
 *
 * - The rate is calls in the last RATE_WINDOW_MS over that whole window (time before the object
 *   started counts as idle), so only load sustained for the window reaches a threshold: a burst
 *   of a few seconds does not split a partition.
 * - The keys of the recent key-addressed calls (the last KEY_SAMPLE of them) give the key that
 *   halves the partition's traffic (`hotMedian`), where a split for rate cuts: the median of the
 *   stored rows halves the rows, not the load. For keys written in ascending order (a log, a
 *   time-stamped name) the recent keys are the newest ones, so the cut falls among them and the
 *   newest writes go to the new partition.
 */
import { compareKeys } from './listing.ts';

/** The window a rate is averaged over: 5 minutes. */
export const RATE_WINDOW_MS = 5 * 60_000;
/** The window is kept as this many slots of equal length (10 s each). */
const SLOTS = 30;
const SLOT_MS = RATE_WINDOW_MS / SLOTS;
/** Keys of key-addressed calls kept (the most recent). */
export const KEY_SAMPLE = 512;
/** Fewer sampled keys than this give no hot median (too few to say where the traffic is). */
export const MIN_KEYS_FOR_MEDIAN = 32;

export class RequestRate {
  private readonly counts = new Float64Array(SLOTS);
  /** The slot number (time / SLOT_MS) of counts' newest entry. */
  private newest = -1;
  private readonly keys: string[] = [];
  private nextKey = 0;

  /** One call answered at `now`, addressed to `key` when it names one. */
  count(now: number, key?: string): void {
    const slot = Math.floor(now / SLOT_MS);
    if (slot !== this.newest) this.advance(slot);
    this.counts[slot % SLOTS]!++;
    if (key === undefined) return;
    if (this.keys.length < KEY_SAMPLE) this.keys.push(key);
    else this.keys[this.nextKey] = key;
    this.nextKey = (this.nextKey + 1) % KEY_SAMPLE;
  }

  /** Calls a second over the last RATE_WINDOW_MS before `now`. */
  perSecond(now: number): number {
    this.advance(Math.floor(now / SLOT_MS));
    let sum = 0;
    for (const c of this.counts) sum += c;
    return sum / (RATE_WINDOW_MS / 1000);
  }

  /**
   * The median of the recent key-addressed calls' keys, strictly inside (low, high) so a split
   * there leaves traffic on both sides; null when too few keys were seen or none falls inside.
   */
  hotMedian(low: string, high: string | null): string | null {
    const inside = this.keys.filter((k) => compareKeys(k, low) > 0 && (high === null || compareKeys(k, high) < 0)).sort(compareKeys);
    if (inside.length < MIN_KEYS_FOR_MEDIAN) return null;
    return inside[Math.floor(inside.length / 2)]!;
  }

  /** Clears the slots between the newest one counted and `slot` (time passed without calls). */
  private advance(slot: number): void {
    if (slot <= this.newest) return;
    const gap = this.newest < 0 ? SLOTS : Math.min(SLOTS, slot - this.newest);
    for (let i = 1; i <= gap; i++) this.counts[(slot - gap + i) % SLOTS] = 0;
    this.newest = slot;
  }
}
