/**
 * The one walk over buckets every upkeep sweep takes (drain, re-stripe, scrub, lifecycle, key
 * rotation, the repair pass, the progress reports), so that what a walk must get right is right
 * once: a bucket deleted between the listing and its turn is skipped (nothing of it is left to
 * do; before this helper, a deletion at that moment failed a whole status or progress report),
 * one bucket can be named instead of all, the first bucket can rotate from run to run, and the
 * callback can stop the walk when its run's budget or deadline is spent.
 * Issue 39: when a bucket spans several catalog instances, this is where its partitions are
 * walked, not in each sweep.
 */
import { S3Error } from '../model/errors.ts';

/** What the walk reads: the bucket list. */
export interface BucketLister {
  listBucketRecords(): Promise<{ name: string }[]>;
}

export interface WalkOptions {
  /**
   * Walk this bucket only (an operator's --bucket); it is not looked up in the list, and its
   * NoSuchBucket is thrown (an operator who names a bucket that does not exist is told so).
   */
  only?: string;
  /**
   * Start at the bucket `rotateAt / 60 s` names (modulo their count), then wrap: the first bucket
   * changes every minute, so one with much to do cannot starve those after it.
   */
  rotateAt?: number;
}

/**
 * Calls `visit` for each bucket in name order (or rotated), one at a time. `visit` answering false
 * stops the walk and forEachBucket answers false; true when every bucket was visited. A
 * NoSuchBucket thrown by `visit` for a listed bucket skips it (deleted meanwhile); any other error
 * ends the walk with it.
 */
export async function forEachBucket(catalog: BucketLister, visit: (bucket: string) => Promise<boolean | void>, o: WalkOptions = {}): Promise<boolean> {
  let names = o.only !== undefined ? [o.only] : (await catalog.listBucketRecords()).map((b) => b.name);
  if (o.rotateAt !== undefined && names.length) {
    const first = Math.floor(o.rotateAt / 60_000) % names.length;
    names = [...names.slice(first), ...names.slice(0, first)];
  }
  for (const bucket of names) {
    try {
      if ((await visit(bucket)) === false) return false;
    } catch (err) {
      if (o.only === undefined && err instanceof S3Error && err.code === 'NoSuchBucket') continue;
      throw err;
    }
  }
  return true;
}
