/// <reference types="@cloudflare/vitest-pool-workers/types" />
// The repair worklist's rules (worker/catalog/sql-repairs.ts) on a real CatalogObject's SQLite,
// with explicit clocks: least redundancy first, a unit handed on is not handed on again until
// its report is overdue, failures back off per unit and throttle the bucket to one canary, and a
// success or a backend back (reset) makes everything due at once.

import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { expect, it } from 'vitest';
import type { CatalogObject } from '../../worker/catalog/durable-object.ts';
import { DurableCatalog } from '../../worker/catalog/durable-catalog.ts';
import { FAILURES_TO_THROTTLE, SqlRepairs, retryDelay } from '../../worker/catalog/sql-repairs.ts';
import { REPAIR_TIMING_DEFAULTS, type RepairTiming } from '../../worker/model/repair-timing.ts';
import { manifest, unit } from './fixtures.ts';

const ns = () => (env as unknown as { CATALOG: DurableObjectNamespace<CatalogObject> }).CATALOG;

/** The defaults, and a config's own timing (`repairs`), which every rule follows. */
const TIMINGS: [string, RepairTiming][] = [
  ['the default timing', REPAIR_TIMING_DEFAULTS],
  ["a config's timing", { retryFirstMs: 50, retryMaxMs: 300, resendAfterMs: 700 }],
];

it.each(TIMINGS)('worklist order, hand-on, backoff, throttling and reset (%s)', async (name, t) => {
  const bucket = `worklist-${name.length}-${Date.now().toString(36)}`;
  const catalog = new DurableCatalog(ns());
  await catalog.insertBucket(bucket, 'auto');
  const wide = { ...unit(), k: 2, m: 2, placement: ['b0', 'b1', 'b2', 'b3'], headerLens: [90, 90, 90, 90], shardDigests: ['00', '11', '22', '33'] };
  // spare = m - missing: 'one-lost' can lose one more shard, 'two-lost' none, 'whole' is not listed.
  await catalog.commitManifest(bucket, 'one-lost', manifest(bucket, 'one-lost', [{ ...wide, unitId: 'u-one', missing: [0] }]), {});
  await catalog.commitManifest(bucket, 'two-lost', manifest(bucket, 'two-lost', [{ ...wide, unitId: 'u-two', missing: [0, 3] }]), {});
  await catalog.commitManifest(bucket, 'whole', manifest(bucket, 'whole', [{ ...wide, unitId: 'u-whole' }]), {});

  await runInDurableObject(ns().get(ns().idFromName(`bucket:${bucket}`)), async (_obj, state) => {
    await state.storage.deleteAlarm(); // this test is the clock: the real alarm must not take units meanwhile
    const r = new SqlRepairs(state.storage.sql, t);
    const keys = (units: { key: string }[]) => units.map((u) => u.key);
    const t0 = 1_000_000_000_000;

    expect(keys(r.takeDue(t0))).toEqual(['two-lost', 'one-lost']); // least spare first
    expect(r.takeDue(t0 + 1)).toEqual([]); // handed on, not reported yet
    expect(r.nextWake(t0)).toBe(t0 + t.resendAfterMs);
    expect(keys(r.takeDue(t0 + t.resendAfterMs))).toEqual(['two-lost', 'one-lost']); // the report is overdue: again

    // A failure backs that unit off; the other one, with fewer attempts, goes first from now on.
    const t1 = t0 + t.resendAfterMs + 10;
    r.failed('u-two', 'backend b3 unreachable', t1);
    r.unsend([{ unitId: 'u-one' }]);
    expect(keys(r.takeDue(t1))).toEqual(['one-lost']);
    expect(keys(r.takeDue(t1 + t.retryFirstMs))).toEqual(['two-lost']);
    r.failed('u-one', 'x', t1 + t.retryFirstMs);
    expect(r.failures).toBe(2);

    // From FAILURES_TO_THROTTLE failures in a row: one canary per backoff period.
    const t2 = t1 + t.retryFirstMs + 1;
    r.failed('u-two', 'backend b3 unreachable', t2);
    expect(r.failures).toBe(FAILURES_TO_THROTTLE);
    const later = t2 + t.retryMaxMs;
    const canary = r.takeDue(later);
    expect(canary).toHaveLength(1);
    expect(r.takeDue(later + 1)).toEqual([]); // throttled: the next only after the canary period
    r.unsend(canary);
    expect(r.takeDue(later + retryDelay(1, t) - 1)).toEqual([]);
    expect(r.takeDue(later + retryDelay(1, t))).toHaveLength(1);

    // Never dropped: the attempts and the last error are kept, and the unit stays listed.
    const row = state.storage.sql
      .exec<{ attempts: number; last_error: string }>("SELECT attempts, last_error FROM degraded_units WHERE key = 'two-lost'")
      .one();
    expect(row).toEqual({ attempts: 2, last_error: 'backend b3 unreachable' });

    // A backend back (or any success): no throttle, every unit due now.
    state.storage.sql.exec('UPDATE degraded_units SET sent_at = 0');
    r.reset();
    expect(r.failures).toBe(0);
    expect(keys(r.takeDue(later + 2))).toEqual(['two-lost', 'one-lost']); // redundancy before attempts
    expect(r.nextWake(later + 2)).toBe(later + 2 + t.resendAfterMs);
  });
  await catalog.markRepaired(bucket, 'u-one', [0], 'one-lost');
  await catalog.markRepaired(bucket, 'u-two', [0, 3], 'two-lost');
  expect(await catalog.listDegradedUnits(bucket, null, 10)).toEqual([]);
});

it('a throttled worklist whose first units wait for a backed-off backend hands on one behind them, and leaves nothing due unseen', async () => {
  const bucket = `worklist-skip-${Date.now().toString(36)}`;
  const catalog = new DurableCatalog(ns());
  await catalog.insertBucket(bucket, 'auto');
  const wide = { ...unit(), k: 2, m: 2, placement: ['b0', 'b1', 'b2', 'b3'], headerLens: [90, 90, 90, 90], shardDigests: ['00', '11', '22', '33'] };
  // First in the worklist's order (least spare): 15 units missing their shards on b2 and b3 (b3 is
  // the backend that is down); then 3 missing one on b0.
  const waiting = Array.from({ length: 15 }, (_, i) => `wait-${String(i).padStart(2, '0')}`);
  for (const key of waiting) await catalog.commitManifest(bucket, key, manifest(bucket, key, [{ ...wide, unitId: `u-${key}`, missing: [2, 3] }]), {});
  for (const key of ['free-0', 'free-1', 'free-2'])
    await catalog.commitManifest(bucket, key, manifest(bucket, key, [{ ...wide, unitId: `u-${key}`, missing: [0] }]), {});

  await runInDurableObject(ns().get(ns().idFromName(`bucket:${bucket}`)), async (_obj, state) => {
    await state.storage.deleteAlarm(); // this test is the clock
    const r = new SqlRepairs(state.storage.sql, REPAIR_TIMING_DEFAULTS);
    const t0 = 1_000_000_000_000;
    // Three repairs failed because b3 did not answer: b3 backs off, the bucket is throttled to one unit per period.
    for (const key of waiting.slice(0, FAILURES_TO_THROTTLE)) r.failed(`u-${key}`, 'shard 3 on b3: backend unreachable', t0, ['b3']);
    expect(r.failures).toBe(FAILURES_TO_THROTTLE);

    const now = t0 + 1;
    // The twelve due units waiting for b3 come first (more than a throttled walk used to read): the
    // walk goes past them to a unit it can hand on.
    expect(r.takeDue(now).map((u) => u.key)).toEqual(['free-0']);
    // Everything due was looked at: what is left waits for b3's backoff or the throttle, so the
    // next wake-up is later than now (an alarm set for "now" from inside the alarm is lost, alarm-time.ts).
    const next = r.nextWake(now);
    expect(next).not.toBeNull();
    expect(next!).toBeGreaterThan(now);
    const pushed = state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM degraded_units WHERE key LIKE 'wait-%' AND next_at > ?", now).one().n;
    expect(pushed).toBe(waiting.length);
  });
});
