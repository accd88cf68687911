/**
 * Repairs back off per backend (issue 37, "operator truth"): an outside drill counted 1,029
 * failed repair attempts in a few minutes of one backend's outage, each unit retried on its own
 * clock and every repair that succeeded elsewhere making them all due again. Here a bucket's
 * worklist (the product's CatalogObject over SQLite) holds 20 units whose missing shard belongs
 * on b2, which is down, and 5 that can be repaired, and more repairable damage comes every 10 s;
 * the alarm's hand-off (takeDue) and the queue's
 * reports (repairFailed naming the backend, markRepaired) are driven over ten minutes of a driven
 * clock, and the attempts that reached b2 are counted. Then b2 is seen healthy again and every
 * unit waiting for it is handed on at once.
 */
import { describe, expect, it } from 'vitest';
import { BACKEND_RETRY_MAX_MS, SqlRepairs } from '../../worker/catalog/sql-repairs.ts';
import { LocalCatalogNamespace, localCatalog } from '../support/local-catalog.ts';
import { manifest, unit } from '../catalog/fixtures.ts';
import { RepairBlockedError } from '../../worker/upkeep/repair.ts';
import { consumeRepairs } from '../../worker/upkeep/repair-worklist.ts';

async function worklist() {
  const namespace = new LocalCatalogNamespace();
  const catalog = localCatalog({}, namespace);
  await catalog.insertBucket('b', 'auto');
  const waitingForB2 = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const u = { ...unit(), missing: [2] }; // placement b0, b1, b2: its shard 2 belongs on b2
    waitingForB2.add(u.unitId);
    await catalog.commitManifest('b', `down/${i}`, manifest('b', `down/${i}`, [u]), {});
  }
  for (let i = 0; i < 5; i++) await catalog.commitManifest('b', `fine/${i}`, manifest('b', `fine/${i}`, [{ ...unit(), missing: [0] }]), {});
  const repairs = new SqlRepairs(namespace.instance('bucket:b').storage.sql);
  return { catalog, repairs, waitingForB2 };
}

describe('repair backs off per backend', () => {
  it('ten minutes of b2 down: one canary at a time reaches it, not every unit at every retry; back up: all go at once', async () => {
    const { catalog, repairs, waitingForB2 } = await worklist();
    let now = 1_000_000;
    let againstB2 = 0,
      repairedElsewhere = 0,
      firstBatch = 0;
    for (let tick = 0, end = now + 10 * 60_000; now < end; now += 1000, tick++) {
      // Damage elsewhere keeps coming and keeps being repaired (b0 answers): every 10 s a unit.
      if (tick % 10 === 5) await catalog.commitManifest('b', `late/${tick}`, manifest('b', `late/${tick}`, [{ ...unit(), missing: [0] }]), {});
      const due = repairs.takeDue(now);
      for (const u of due) {
        if (waitingForB2.has(u.unitId)) {
          againstB2++;
          if (now === 1_000_000) firstBatch++;
          repairs.failed(u.unitId, 'shard 2 on b2: backend unreachable', now, ['b2']);
        } else {
          await catalog.markRepaired('b', u.unitId, u.missing, u.key); // succeeds: b0 answers
          repairedElsewhere++;
        }
      }
    }
    // The first hand-off goes before anything is known (every unit due); after it, 1 s doubling up
    // to 10 s: one canary unit at 1, 3, 7, 15 s and then every 10 s, about 60 in ten minutes,
    // however many repairs succeed elsewhere meanwhile (before: each success made all 20 due
    // again, 1,080 attempts).
    expect(firstBatch).toBe(20);
    expect(againstB2 - firstBatch).toBeGreaterThanOrEqual(5);
    expect(againstB2 - firstBatch).toBeLessThanOrEqual(62);
    expect(repairedElsewhere).toBe(5 + 60);
    expect(repairs.backoffs().get('b2')).toMatchObject({ until: expect.any(Number) });
    expect(repairs.backoffs().get('b2')!.until - now).toBeLessThanOrEqual(BACKEND_RETRY_MAX_MS);

    // b2 answers again (the router reports a backend back): its backoff ends, every unit is due now.
    await catalog.repairSoon('b', true, 'b2');
    expect(repairs.backoffs().has('b2')).toBe(false);
    expect(
      repairs
        .takeDue(now)
        .map((u) => u.unitId)
        .sort(),
    ).toEqual([...waitingForB2].sort());
  });

  it('a repair that wrote to a backed-off backend ends its backoff too', async () => {
    const { catalog, repairs, waitingForB2 } = await worklist();
    const [first] = [...waitingForB2];
    repairs.failed(first!, 'shard 2 on b2: backend unreachable', 1000, ['b2']);
    expect(repairs.backoffs().has('b2')).toBe(true);
    await catalog.markRepaired('b', first!, [2], 'down/0');
    expect(repairs.backoffs().has('b2')).toBe(false);
  });

  it('the queue consumer hands the backends a repair could not reach to the worklist', async () => {
    const { catalog, repairs, waitingForB2 } = await worklist();
    const [first] = [...waitingForB2];
    const body = { bucket: 'b', key: 'down/0', unitId: first!, shards: [2], reason: { kind: 'worklist' as const } };
    await consumeRepairs([{ body, ack: () => {} }], {
      catalog,
      repair: async () => {
        throw new RepairBlockedError('shard 2 on b2: backend unreachable', ['b2']);
      },
      log: () => {},
    });
    expect(repairs.backoffs().get('b2')).toMatchObject({ failures: 1 });
  });
});
