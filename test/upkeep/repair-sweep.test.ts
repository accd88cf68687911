/**
 * The operator's repair pass and worklist by bucket and key prefix (issue 27: "repair by bucket
 * or prefix"): only the units under the prefix are tried or listed, however the worklist's pages
 * fall, and `remaining` counts what is left under it.
 */
import { describe, expect, it } from 'vitest';
import type { RepairTask } from '../../worker/engine/index.ts';
import { listWorklist, repairDegraded } from '../../worker/upkeep/repair-sweep.ts';
import { manifest, unit } from '../catalog/fixtures.ts';
import { localCatalog } from '../support/local-catalog.ts';

async function degradedBucket() {
  const catalog = localCatalog();
  await catalog.insertBucket('b', 'us-east-1');
  await catalog.insertBucket('other', 'us-east-1');
  // 'logs' sorts between 'log' and 'logs/', 'logs0' after the 'logs/' range: both outside it.
  const keys = ['a', 'log', 'logs', ...Array.from({ length: 130 }, (_, i) => `logs/${String(i).padStart(3, '0')}`), 'logs0', 'z'];
  for (const key of keys) await catalog.commitManifest('b', key, manifest('b', key, [{ ...unit(), missing: [1] }]), {});
  await catalog.commitManifest('other', 'logs/x', manifest('other', 'logs/x', [{ ...unit(), missing: [0] }]), {});
  return catalog;
}

describe('repair by bucket and prefix', () => {
  it('repairs only the units under the prefix, in batches, and counts what is left under it', async () => {
    const catalog = await degradedBucket();
    const tried: RepairTask[] = [];
    const repair = async (t: RepairTask) => {
      tried.push(t);
      await catalog.markRepaired(t.bucket, t.unitId, t.shards, t.key);
    };
    let r = await repairDegraded(catalog, repair, { bucket: 'b', prefix: 'logs/', limit: 100 });
    expect(r).toMatchObject({ attempted: 100, repaired: 100, failed: [], remaining: 30 });
    r = await repairDegraded(catalog, repair, { bucket: 'b', prefix: 'logs/', limit: 100 });
    expect(r).toMatchObject({ attempted: 30, repaired: 30, remaining: 0 });
    expect(tried.every((t) => t.bucket === 'b' && (t.key ?? '').startsWith('logs/'))).toBe(true);
    expect(new Set(tried.map((t) => t.key)).size).toBe(130);
    // Outside the prefix nothing moved: in b, and the same prefix in another bucket.
    expect((await catalog.bucketHealth('b', new Date())).degradedUnits).toBe(5);
    expect((await catalog.bucketHealth('other', new Date())).degradedUnits).toBe(1);
    // Without a bucket, the prefix applies in every bucket.
    r = await repairDegraded(catalog, repair, { prefix: 'logs/', limit: 100 });
    expect(r).toMatchObject({ attempted: 1, repaired: 1, remaining: 0 });
    expect(tried.at(-1)).toMatchObject({ bucket: 'other', key: 'logs/x' });
  });

  it('a failed repair stays listed and is counted as remaining', async () => {
    const catalog = await degradedBucket();
    const r = await repairDegraded(
      catalog,
      async () => {
        throw new Error('backend b1 is down');
      },
      { bucket: 'b', prefix: 'log', limit: 3 },
    );
    expect(r).toMatchObject({ attempted: 3, repaired: 0, remaining: 133 });
    expect(r.failed.map((f) => f.key)).toEqual(['log', 'logs', 'logs/000']);
    const list = await listWorklist(catalog, { bucket: 'b', prefix: 'log', limit: 1000, stuckOnly: false });
    expect(list.units.length).toBe(133);
    expect(list.units.find((u) => u.key === 'log')).toMatchObject({ attempts: 1, lastError: 'backend b1 is down' });
  });

  it('the worklist under a prefix: every unit of it, none outside', async () => {
    const catalog = await degradedBucket();
    const list = await listWorklist(catalog, { prefix: 'logs/', limit: 1000, stuckOnly: false });
    expect(list.truncated).toBe(false);
    expect(list.units.map((u) => `${u.bucket}/${u.key}`)).toEqual([
      ...Array.from({ length: 130 }, (_, i) => `b/logs/${String(i).padStart(3, '0')}`),
      'other/logs/x',
    ]);
    expect((await listWorklist(catalog, { bucket: 'b', prefix: 'logs/', limit: 10, stuckOnly: false })).truncated).toBe(true);
    expect((await listWorklist(catalog, { bucket: 'b', limit: 1000, stuckOnly: false })).units.length).toBe(135);
  });
});
