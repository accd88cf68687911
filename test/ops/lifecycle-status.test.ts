/** The status's lifecycle figures (ops/status.ts lifecycleSummary): summed over the buckets the job has run in. */
import { describe, expect, it } from 'vitest';
import { lifecycleSummary } from '../../worker/ops/status.ts';
import { noLifecycleYet } from '../../worker/upkeep/lifecycle.ts';

const counts = (expired: number, failed = 0) => ({
  examined: 10,
  expired,
  noncurrentDeleted: 1,
  markersRemoved: 2,
  uploadsAborted: 3,
  transitioned: 4,
  transitionedBytes: 4000,
  failed,
});

describe('lifecycle in the status', () => {
  it('sums the last passes, counts passes in progress, and dates the oldest last pass', () => {
    const a = { ...noLifecycleYet(), lastPassCompletedAt: 1000, lastRunAt: 5000, passes: 2, last: counts(4) };
    const b = {
      ...noLifecycleYet(),
      cursor: { phase: 'versions' as const, afterKey: 'k', afterUploadId: null },
      lastPassCompletedAt: 3000,
      lastRunAt: 6000,
      passes: 1,
      last: counts(1, 2),
    };
    expect(lifecycleSummary([{ lifecycle: a }, { lifecycle: b }, {}])).toEqual({
      buckets: 2,
      inProgress: 1,
      oldestPassCompletedAt: 1000,
      lastRunAt: 6000,
      lastPasses: { examined: 20, expired: 5, noncurrentDeleted: 2, markersRemoved: 4, uploadsAborted: 6, transitioned: 8, transitionedBytes: 8000, failed: 2 },
    });
  });
  it('has no oldest pass while a bucket has not completed one', () => {
    expect(lifecycleSummary([{ lifecycle: { ...noLifecycleYet(), lastRunAt: 1 } }])).toMatchObject({ buckets: 1, oldestPassCompletedAt: null, lastRunAt: 1 });
    expect(lifecycleSummary([])).toMatchObject({ buckets: 0, oldestPassCompletedAt: null, lastRunAt: null });
  });
});
