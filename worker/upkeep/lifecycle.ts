/**
 * The lifecycle job (run by the cron with the collector and the scrubber; `shardgate lifecycle`
 * and the admin API run it now): for each bucket with lifecycle rules, walks its keys (every
 * version of each, model/lifecycle.ts decides what is due), then its multipart uploads, a
 * bounded slice per run, resuming from a cursor kept in the bucket's catalog with the counts of
 * the pass in progress and of the last complete one (the status shows them).
 * Every expiration goes through the object store's own DeleteObject (`deleteObject`, with a
 * version id for a noncurrent version or a delete marker) and AbortMultipartUpload, the paths a
 * client's request takes, so whatever those paths refuse (object lock) lifecycle cannot do
 * either: a refused action counts as failed and the pass goes on.
 * Races: a current version is expired with If-Match on the ETag the evaluator saw, so an object
 * rewritten since is left alone (a rewrite with identical bytes is expired: same ETag, the rule
 * applied to the older write's age; the next pass judges the new one by its own).
 * Transitions (issue 44) go through the re-striper's rewrite (`transition`, restripe-version.ts):
 * the version is read, written again under its new class's policy, and swapped in with the new
 * class by compare-and-set (a client's change meanwhile wins; the next pass judges again);
 * byte-identical, same version id, ETag and Last-Modified; the old shards collected after the
 * grace delay. The rewrites of a run are bounded by the transition's own budget (versions,
 * backend requests, the backends' pacing, a deadline): out of it, the slice stops before the key,
 * whose transition the next run does first. SSE-C versions and COMPLIANCE-retained ones on a
 * backend that enforces retention are counted blocked, as the re-stripe counts them.
 * Known gap: a noncurrent version is deleted by its id, unconditionally (DeleteObject with a
 * version id checks no condition): if a client deletes its successor by id in the moment between
 * the job's read and its delete, the version deleted was current by then.
 */
import { LIFECYCLE_PRINCIPAL, withEventOrigin } from '../model/event-origin.ts';
import type { LifecycleCounts, LifecycleProgress } from '../catalog/types.ts';
import type { LifecycleCatalog } from '../catalog/ports.ts';
import { configurationSettled, DAY_MS, dueActions, uploadAbortDue, type LifecycleAction, type LifecycleRule, type VersionFacts } from '../model/lifecycle.ts';
import { S3Error } from '../model/errors.ts';
import type { ObjectStore } from '../model/object-store.ts';
import { forEachBucket } from './each-bucket.ts';
import { errorMessage } from '../model/error-message.ts';

/** The cron name of a lifecycle-only run (the local timer of a short lifecycle day, dev/local-gateway.ts). */
export const LIFECYCLE_ONLY_CRON = 'lifecycle';

export interface LifecycleOptions {
  /** Length of a lifecycle day in ms (DAY_MS; shorter only under the local debug setting). */
  dayMs?: number;
  /** Versions read per bucket per run (at most, plus one key's worth). */
  versionsPerRun?: number;
  /** Uploads read per bucket per run. */
  uploadsPerRun?: number;
  /**
   * Deletions and aborts per run, all buckets together (each is a catalog call, and an invocation
   * has a subrequest limit): a slice stops before a key whose actions would pass it (a key is
   * never left half done, so one key may take it past).
   */
  actionsPerRun?: number;
  now?: () => number;
}

/** One run over the buckets: the counts summed over their slices (catalog/types.ts LifecycleCounts). */
export interface LifecycleReport extends LifecycleCounts {
  buckets: number;
  /** Buckets skipped because their configuration was stored too recently (model/lifecycle.ts configurationSettleMs). */
  settling: number;
  /** Buckets whose pass completed in this run. */
  passesCompleted: number;
  /** Their names. */
  completed: string[];
  /** Buckets whose slice failed (the next run resumes where their cursor stands), with why. */
  errors: { bucket: string; message: string }[];
}

/** What a transition did: 'stopped' when the run's budget for rewrites is spent (nothing written). */
export type TransitionOutcome =
  | { kind: 'rewritten'; bytes: number }
  | { kind: 'conforms' | 'gone' | 'stopped' }
  | { kind: 'blocked'; reason: string }
  | { kind: 'failed'; error: string };

/**
 * The object store's delete paths (the ones DeleteObject and AbortMultipartUpload take), and the
 * rewrite of a version (by the id S3 shows) under another storage class; without it, a due
 * transition counts as failed.
 */
export type LifecycleStore = Pick<ObjectStore, 'deleteObject' | 'abortMultipartUpload'> & {
  transition?: (bucket: string, key: string, versionId: string, storageClass: string) => Promise<TransitionOutcome>;
};

const zero = (): LifecycleCounts => ({
  examined: 0,
  expired: 0,
  noncurrentDeleted: 0,
  markersRemoved: 0,
  uploadsAborted: 0,
  failed: 0,
  transitioned: 0,
  transitionedBytes: 0,
  transitionsBlocked: 0,
});
const COUNTS = [
  'examined',
  'expired',
  'noncurrentDeleted',
  'markersRemoved',
  'uploadsAborted',
  'failed',
  'transitioned',
  'transitionedBytes',
  'transitionsBlocked',
] as const;

export function noLifecycleYet(): LifecycleProgress {
  return { cursor: null, passStartedAt: null, lastPassStartedAt: null, lastPassCompletedAt: null, passes: 0, lastRunAt: null, current: zero(), last: null };
}

export async function lifecycleBatch(catalog: LifecycleCatalog, store: LifecycleStore, o: LifecycleOptions = {}): Promise<LifecycleReport> {
  const report: LifecycleReport = {
    buckets: 0,
    settling: 0,
    examined: 0,
    expired: 0,
    noncurrentDeleted: 0,
    markersRemoved: 0,
    uploadsAborted: 0,
    failed: 0,
    transitioned: 0,
    transitionedBytes: 0,
    transitionsBlocked: 0,
    passesCompleted: 0,
    completed: [],
    errors: [],
  };
  const now = o.now ?? Date.now;
  const budget = { actions: o.actionsPerRun ?? 500 };
  // The first bucket rotates from run to run (as the scrubber's) so that one with much to do cannot starve the others.
  await forEachBucket(
    catalog,
    async (bucket) => {
      if (budget.actions <= 0) return false;
      const run = await catalog.getLifecycleRun(bucket).catch(() => null); // unreadable now: the next run
      if (!run?.rules?.length) return;
      // A configuration just stored is left alone until it settles (model/lifecycle.ts says why).
      if (!configurationSettled(run.setAt, now(), o.dayMs ?? DAY_MS)) {
        report.settling++;
        return;
      }
      report.buckets++;
      let progress;
      try {
        progress = await bucketSlice(catalog, store, bucket, run.rules, run.progress ?? noLifecycleYet(), { ...o, now }, budget);
      } catch (err) {
        report.errors.push({ bucket, message: errorMessage(err) });
        return;
      }
      for (const k of COUNTS) report[k] = (report[k] ?? 0) + (progress.delta[k] ?? 0);
      if (progress.completed) {
        report.passesCompleted++;
        report.completed.push(bucket);
      }
    },
    { rotateAt: now() },
  );
  return report;
}

/** One slice of `bucket`'s pass: up to `versionsPerRun` versions, then (once past the last key) up to `uploadsPerRun` uploads. */
async function bucketSlice(
  catalog: LifecycleCatalog,
  store: LifecycleStore,
  bucket: string,
  rules: LifecycleRule[],
  start: LifecycleProgress,
  o: LifecycleOptions & { now: () => number },
  budget: { actions: number },
): Promise<{ delta: LifecycleCounts; completed: boolean }> {
  const dayMs = o.dayMs ?? DAY_MS;
  const p: LifecycleProgress = structuredClone(start);
  const delta = zero();
  const count = (k: keyof LifecycleCounts, n = 1) => {
    delta[k] = (delta[k] ?? 0) + n;
    p.current[k] = (p.current[k] ?? 0) + n;
  };
  const fail = (err: unknown) => {
    count('failed');
    p.lastError = { at: o.now(), message: errorMessage(err) };
  };
  p.passStartedAt ??= o.now();
  let cursor = p.cursor ?? { phase: 'versions' as const, afterKey: null, afterUploadId: null };
  if (cursor.phase === 'versions') {
    const page = await catalog.listKeyVersions(bucket, cursor.afterKey, o.versionsPerRun ?? 1000);
    let stopped = false;
    keys: for (const { key, versions } of page.keys) {
      const due = dueActions(rules, key, versions, o.now(), dayMs);
      if (due.length && budget.actions <= 0) {
        stopped = true; // out of actions for this run: this key is the next run's first
        break;
      }
      // Transitions first: one the run has no budget left for stops the slice before the key (its
      // deletions wait with it, so the key is never left half done).
      for (const action of due) {
        if (action.kind !== 'transition') continue;
        const outcome: TransitionOutcome = store.transition
          ? await store
              .transition(bucket, key, action.versionId, action.storageClass)
              .catch((err) => ({ kind: 'failed' as const, error: String((err as Error)?.message ?? err) }))
          : { kind: 'failed', error: `a transition to ${action.storageClass} cannot run here (no rewriter)` };
        if (outcome.kind === 'stopped') {
          stopped = true;
          break keys;
        }
        if (outcome.kind === 'rewritten') {
          count('transitioned');
          count('transitionedBytes', outcome.bytes);
        } else if (outcome.kind === 'blocked') {
          count('transitionsBlocked');
          p.lastError = { at: o.now(), message: `${key} ${action.versionId}: ${outcome.reason}` };
        } else if (outcome.kind === 'failed') fail(`${key} ${action.versionId}: ${outcome.error}`);
      }
      const actions = due.filter((a): a is Exclude<LifecycleAction, { kind: 'transition' }> => a.kind !== 'transition');
      budget.actions -= actions.length;
      count('examined', versions.length);
      for (const action of actions) {
        try {
          await apply(store, bucket, key, action, versions[0]!);
          count(
            action.kind === 'expire-current'
              ? 'expired'
              : action.marker && action.versionId === versions[0]!.versionId
                ? 'markersRemoved'
                : 'noncurrentDeleted',
          );
        } catch (err) {
          // Rewritten or deleted since it was judged: nothing to do now (the next pass judges what is there).
          if (!(action.kind === 'expire-current' && err instanceof S3Error && (err.code === 'PreconditionFailed' || err.code === 'NoSuchKey'))) fail(err);
        }
      }
      cursor = { phase: 'versions', afterKey: key, afterUploadId: null };
    }
    if (page.atEnd && !stopped) cursor = { phase: 'uploads', afterKey: null, afterUploadId: null };
  }
  let completed = false;
  if (cursor.phase === 'uploads') {
    const wantsUploads = rules.some((r) => r.status === 'Enabled' && r.abortIncompleteMultipartUpload);
    const limit = o.uploadsPerRun ?? 1000;
    const page = wantsUploads
      ? await catalog.listUploadRecords(bucket, {
          prefix: '',
          delimiter: null,
          keyMarker: cursor.afterKey,
          uploadIdMarker: cursor.afterUploadId,
          maxUploads: limit,
        })
      : { uploads: [], isTruncated: false };
    let stopped = false;
    for (const u of page.uploads) {
      if (uploadAbortDue(rules, u.key, u.initiated.getTime(), o.now(), dayMs)) {
        if (budget.actions-- <= 0) {
          stopped = true;
          break;
        }
        try {
          await store.abortMultipartUpload(bucket, u.key, u.uploadId);
          count('uploadsAborted');
        } catch (err) {
          if (!(err instanceof S3Error && err.code === 'NoSuchUpload')) fail(err); // completed or aborted meanwhile
        }
      }
      cursor = { phase: 'uploads', afterKey: u.key, afterUploadId: u.uploadId };
    }
    completed = !page.isTruncated && !stopped;
  }
  const at = o.now();
  p.lastRunAt = at;
  if (completed) {
    p.cursor = null;
    p.lastPassStartedAt = p.passStartedAt;
    p.lastPassCompletedAt = at;
    p.passStartedAt = null;
    p.passes++;
    p.last = p.current;
    p.current = zero();
  } else {
    p.cursor = cursor;
  }
  await catalog.setLifecycleProgress(bucket, p);
  return { delta, completed };
}

/** One action through the store's delete paths. */
async function apply(
  store: LifecycleStore,
  bucket: string,
  key: string,
  action: Exclude<LifecycleAction, { kind: 'transition' }>,
  current: VersionFacts,
): Promise<void> {
  // Announced as s3:LifecycleExpiration:* (catalog/sql-outbox.ts), by the principal AWS names for its own expirations.
  const origin = { op: 'LifecycleExpiration', principal: LIFECYCLE_PRINCIPAL, sourceIp: '', requestId: '' };
  await withEventOrigin(origin, async () => {
    if (action.kind === 'delete-version') await store.deleteObject(bucket, key, { versionId: action.versionId });
    // The current version only if it is still the one judged (the header says why If-Match).
    else await store.deleteObject(bucket, key, current.etag === undefined ? {} : { conditions: { ifMatch: current.etag } });
  });
}
