// Bucket health in the catalog contract (issue 13): the counts every commit, delete, completion
// and repair mark keeps, the degraded units, the scrubber's progress, reservations and garbage.
// Run against both catalogs by contract.ts.

import { expect, it } from 'vitest';
import type { Ctx } from './contract.ts';
import { later } from './contract.ts';
import { expectS3, inlineManifest, manifest, unit } from './fixtures.ts';

/**
 * The stored length of one shard of fixtures.ts's unit(), from docs/FORMAT.md by hand: 100 bytes
 * of k=2 in blocks of 64 are one stripe whose blocks hold ceil(100/2) = 50 bytes; a shard file is
 * header 90 + (checksum 8 + block 50) + footer (65 + 8 x 3 shards) = 237 bytes.
 */
const SHARD_BYTES = 237;

export function defineHealthCases({ c, bucket, split }: Ctx) {
  it('health of an empty bucket: nothing stored, no scrub yet; NoSuchBucket for a missing one', async () => {
    const b = await bucket();
    expect(await c().bucketHealth(b, new Date())).toEqual({
      bucket: b,
      objects: 0,
      bytes: 0,
      inlineBytes: 0,
      backends: {},
      degradedObjects: 0,
      degradedUnits: 0,
      missingShards: 0,
      redundancy: { atRisk: 0, lost: 0, atRiskBytes: 0, lostBytes: 0, byMissing: {}, byPolicy: {} },
      placements: [],
      classes: {},
      oldestDegradedAt: null,
      repairStuck: 0,
      uploads: 0,
      reservations: { held: 0, expired: 0 },
      garbage: { queued: 0, due: 0 },
      scrub: { units: 0, checked: 0, oldestUnchecked: null, passStartedAt: null, lastPassStartedAt: null, lastPassCompletedAt: null, passes: 0 },
      // Quota figures (catalog/quota.ts): no quota, so none of it.
      versions: 0,
      deleteMarkers: 0,
      multipartBytes: 0,
      // The bucket's own row waits for the journal's first segment, which dumps it (sql-journal.ts);
      // a split bucket's root journals its partition map and its own range too.
      journal: {
        pending: split ? expect.any(Number) : 1,
        dumping: true,
        acked: 0,
        ackedTakenAt: null,
        generation: 1,
        complete: false,
        files: 0,
        redundancy: { units: 0, atRisk: 0, lost: 0, byCode: {}, shardsByBackend: {}, placements: [] },
      },
      // Each partition's range and figures (one, the root, unless the bucket is split).
      partitions: expect.any(Array),
    });
    const parts = (await c().bucketHealth(b, new Date())).partitions!;
    expect(parts[0]).toMatchObject({ low: '', versions: 0, bytes: 0, splitting: null });
    expect(parts.at(-1)!.high).toBeNull();
    if (!split) expect(parts).toHaveLength(1);
    for (const [i, p] of parts.entries()) if (i > 0) expect(p.low).toBe(parts[i - 1]!.high);
    await expectS3(c().bucketHealth(`${b}-none`, new Date()), 'NoSuchBucket');
    await expectS3(c().listDegradedUnits(`${b}-none`, null, 10), 'NoSuchBucket');
  });

  it('counts objects, bytes and shards per backend through commits, overwrites and deletes', async () => {
    const b = await bucket();
    await c().commitManifest(b, 'a', manifest(b, 'a', [unit(), unit()]), {});
    await c().commitManifest(b, 'i', inlineManifest(b, 'i'), {});
    let h = await c().bucketHealth(b, new Date());
    expect(h).toMatchObject({ objects: 2, bytes: 202, inlineBytes: 2 });
    expect(h.backends).toEqual({
      b0: { shards: 2, bytes: 2 * SHARD_BYTES },
      b1: { shards: 2, bytes: 2 * SHARD_BYTES },
      b2: { shards: 2, bytes: 2 * SHARD_BYTES },
    });
    await c().commitManifest(b, 'a', manifest(b, 'a', [unit()]), {}); // overwrite: one unit now
    h = await c().bucketHealth(b, new Date());
    expect(h).toMatchObject({ objects: 2, bytes: 102 });
    expect(h.backends.b0).toEqual({ shards: 1, bytes: SHARD_BYTES });
    expect(h.garbage).toEqual({ queued: 1, due: 0 }); // the superseded units, within their grace delay
    expect((await c().bucketHealth(b, later())).garbage).toEqual({ queued: 1, due: 1 });
    await c().removeManifest(b, 'a');
    await c().removeManifest(b, 'i');
    h = await c().bucketHealth(b, new Date());
    expect(h).toMatchObject({ objects: 0, bytes: 0, inlineBytes: 0, backends: {} });
  });

  it('tracks units with missing shards until a repair marks them, and lists them in order', async () => {
    const b = await bucket();
    const u1 = { ...unit(), missing: [2] };
    const u2 = { ...unit(), missing: [0, 1] };
    await c().commitManifest(b, 'x', manifest(b, 'x', [u1, unit()]), {});
    await c().commitManifest(b, 'y', manifest(b, 'y', [u2]), {});
    let h = await c().bucketHealth(b, new Date());
    expect(h).toMatchObject({ degradedObjects: 2, degradedUnits: 2, missingShards: 3 });
    // k=2, m=1: u1 (one missing) has exactly k shards, u2 (two missing) fewer.
    expect(h.redundancy).toMatchObject({ atRisk: 1, lost: 1, atRiskBytes: 100, lostBytes: 100, byMissing: { 1: 1, 2: 1 } });
    // Every unit, whole ones too, by shards left: x's second unit whole (3), u1 at k (2), u2 below.
    expect(h.redundancy.byPolicy).toEqual({
      '2+1': {
        k: 2,
        m: 1,
        byShardsLeft: [
          { shardsLeft: 3, units: 1, bytes: 100 },
          { shardsLeft: 2, units: 1, bytes: 100 },
        ],
        belowK: { units: 1, bytes: 100 },
      },
    });
    // The same units by the backends their present shards are on (issue 37: what a down backend takes away).
    const placed = (hh: typeof h) => Object.fromEntries((hh.placements ?? []).map((p) => [p.on.join(','), p.units]));
    expect(placed(h)).toEqual({ 'b0,b1,b2': 1, 'b0,b1': 1, b2: 1 });
    expect(h.oldestDegradedAt).toBe(Date.parse(manifest(b, 'x').lastModified));
    expect(h.backends.b2).toEqual({ shards: 2, bytes: 2 * SHARD_BYTES }); // 'x' unit 1 lacks shard 2
    expect(h.backends.b0).toEqual({ shards: 2, bytes: 2 * SHARD_BYTES }); // 'y' lacks 0 and 1
    const all = await c().listDegradedUnits(b, null, 10);
    expect(all.map((d) => [d.key, d.unitId, d.missing])).toEqual([
      ['x', u1.unitId, [2]],
      ['y', u2.unitId, [0, 1]],
    ]);
    expect(await c().listDegradedUnits(b, { key: 'x', unitId: u1.unitId }, 10)).toEqual([all[1]]);
    expect(await c().listDegradedUnits(b, null, 1)).toEqual([all[0]]);

    await c().markRepaired(b, u2.unitId, [0], 'y');
    h = await c().bucketHealth(b, new Date());
    expect(h).toMatchObject({ degradedObjects: 2, degradedUnits: 2, missingShards: 2 });
    expect(h.redundancy).toMatchObject({ atRisk: 2, lost: 0, atRiskBytes: 200, lostBytes: 0, byMissing: { 1: 2 } });
    expect(h.redundancy.byPolicy['2+1']).toMatchObject({
      byShardsLeft: [
        { shardsLeft: 3, units: 1 },
        { shardsLeft: 2, units: 2, bytes: 200 },
      ],
      belowK: { units: 0, bytes: 0 },
    });
    expect(h.backends.b0).toEqual({ shards: 3, bytes: 3 * SHARD_BYTES });
    expect(placed(h)).toEqual({ 'b0,b1,b2': 1, 'b0,b1': 1, 'b0,b2': 1 }); // a repair mark moves the unit's placement too
    await c().markRepaired(b, u2.unitId, [1], 'y');
    await c().markRepaired(b, u1.unitId, [2], 'x');
    h = await c().bucketHealth(b, new Date());
    expect(h).toMatchObject({
      degradedObjects: 0,
      degradedUnits: 0,
      missingShards: 0,
      oldestDegradedAt: null,
      redundancy: { atRisk: 0, lost: 0, atRiskBytes: 0, lostBytes: 0, byMissing: {} },
    });
    expect(h.redundancy.byPolicy['2+1']!.byShardsLeft.map((s) => s.units)).toEqual([3, 0]); // back to whole
    expect(h.backends).toEqual({
      b0: { shards: 3, bytes: 3 * SHARD_BYTES },
      b1: { shards: 3, bytes: 3 * SHARD_BYTES },
      b2: { shards: 3, bytes: 3 * SHARD_BYTES },
    });

    await c().commitManifest(b, 'z', manifest(b, 'z', [{ ...unit(), missing: [1] }]), {});
    await c().removeManifest(b, 'z'); // a deleted object is no longer degraded
    expect(await c().listDegradedUnits(b, null, 10)).toEqual([]);
  });

  it('counts units and bytes per policy by shards left, whole ones too, through versions, damage, repair and deletes; they sum to the units stored', async () => {
    const b = await bucket();
    const wide = (size: number, missing: number[] = []) => ({
      ...unit(),
      size,
      k: 4,
      m: 2,
      placement: ['b0', 'b1', 'b2', 'b3', 'b4', 'b5'],
      headerLens: Array(6).fill(90),
      shardDigests: Array(6).fill('00'),
      missing,
    });
    const w1 = wide(1000),
      w2 = wide(2000),
      w3 = wide(4000);
    await c().setVersioning(b, 'Enabled');
    await c().commitManifest(b, 'w', manifest(b, 'w', [w1, w2]), {});
    const { versionId: second } = await c().commitManifest(b, 'w', manifest(b, 'w', [w3]), {}); // a second version: the first one's units stay stored
    await c().commitManifest(b, 'n', manifest(b, 'n', [unit()]), {}); // another policy: 2+1
    await c().commitManifest(b, 'i', inlineManifest(b, 'i'), {}); // inline: no unit
    const ladder = async () => {
      const h = await c().bucketHealth(b, new Date());
      const units = Object.values(h.redundancy.byPolicy)
        .flatMap((p) => [...p.byShardsLeft.map((s) => s.units), p.belowK.units])
        .reduce((x, y) => x + y, 0);
      expect(units, 'every unit in one state').toBe(h.scrub.units);
      return {
        ...h.redundancy,
        byPolicy: Object.fromEntries(
          Object.entries(h.redundancy.byPolicy).map(([name, p]) => [
            name,
            [...p.byShardsLeft.map((s) => `${s.shardsLeft}:${s.units}/${s.bytes}`), `<k:${p.belowK.units}/${p.belowK.bytes}`],
          ]),
        ),
      };
    };
    expect((await ladder()).byPolicy).toEqual({ '4+2': ['6:3/7000', '5:0/0', '4:0/0', '<k:0/0'], '2+1': ['3:1/100', '2:0/0', '<k:0/0'] });
    await c().markMissing(b, w2.unitId, [0], 'w');
    await c().markMissing(b, w3.unitId, [1, 4], 'w');
    let r = await ladder();
    expect(r.byPolicy['4+2']).toEqual(['6:1/1000', '5:1/2000', '4:1/4000', '<k:0/0']);
    expect(r).toMatchObject({ atRisk: 1, atRiskBytes: 4000, lost: 0, lostBytes: 0 });
    await c().markMissing(b, w3.unitId, [5], 'w'); // a third shard gone: below k
    r = await ladder();
    expect(r.byPolicy['4+2']).toEqual(['6:1/1000', '5:1/2000', '4:0/0', '<k:1/4000']);
    expect(r).toMatchObject({ atRisk: 0, atRiskBytes: 0, lost: 1, lostBytes: 4000 });
    await c().markRepaired(b, w2.unitId, [0], 'w');
    r = await ladder();
    expect(r.byPolicy['4+2']).toEqual(['6:2/3000', '5:0/0', '4:0/0', '<k:1/4000']);
    await c().removeManifest(b, 'w', undefined, second); // the lost version goes
    r = await ladder();
    expect(r.byPolicy['4+2']).toEqual(['6:2/3000', '5:0/0', '4:0/0', '<k:0/0']);
    expect(r).toMatchObject({ atRisk: 0, lost: 0, lostBytes: 0 });
  });

  it('records shards found missing by a read, and counts failed repairs until a unit is stuck', async () => {
    const b = await bucket();
    const u = unit();
    await c().commitManifest(b, 'r', manifest(b, 'r', [u]), {});
    await c().markMissing(b, u.unitId, [1, 99], 'r'); // 99 is no shard of the unit: ignored
    await c().markMissing(b, 'no-such-unit', [0], 'r'); // nothing happens
    expect((await c().getManifest(b, 'r'))!.storage).toMatchObject({ units: [{ unitId: u.unitId, missing: [1] }] });
    let [d] = await c().listDegradedUnits(b, null, 10);
    expect(d).toMatchObject({ key: 'r', unitId: u.unitId, missing: [1], attempts: 0 });
    for (let i = 1; i <= 8; i++) await c().repairFailed(b, u.unitId, `backend down (${i})`, [], 'r');
    [d] = await c().listDegradedUnits(b, null, 10);
    expect(d).toMatchObject({ attempts: 8, lastError: 'backend down (8)' });
    expect((await c().bucketHealth(b, new Date())).repairStuck).toBe(1);
    await c().repairSoon(b, true);
    await c().commitManifest(b, 'r', manifest(b, 'r', [{ ...u, missing: [1, 2] }]), {}); // the same unit, still degraded: keeps its record
    [d] = await c().listDegradedUnits(b, null, 10);
    expect(d).toMatchObject({ missing: [1, 2], attempts: 8 });
    await c().markRepaired(b, u.unitId, [1, 2], 'r');
    expect(await c().listDegradedUnits(b, null, 10)).toEqual([]);
    expect((await c().bucketHealth(b, new Date())).repairStuck).toBe(0);
    await expectS3(c().markMissing(`${b}-none`, u.unitId, [0], 'r'), 'NoSuchBucket');
    await expectS3(c().repairFailed(`${b}-none`, u.unitId, 'x', [], 'r'), 'NoSuchBucket');
    await expectS3(c().repairSoon(`${b}-none`, false), 'NoSuchBucket');
  });

  it('counts a completed multipart object, its degraded parts, and uploads in progress', async () => {
    const b = await bucket();
    const { uploadId } = await c().insertUpload(b, 'mp', { metadata: { user: {} }, checksum: null });
    const p1 = { ...unit(1), missing: [1] };
    await c().putPart(b, 'mp', uploadId, { partNumber: 1, etag: '"e1"', size: 100, lastModified: new Date().toISOString(), units: [p1] });
    expect((await c().bucketHealth(b, new Date())).uploads).toBe(1);
    await c().commitUpload(b, 'mp', uploadId, { ...manifest(b, 'mp', [p1], '"x-1"'), partsCount: 1 }, {});
    expect(await c().bucketHealth(b, new Date())).toMatchObject({ objects: 1, bytes: 100, uploads: 0, degradedUnits: 1, missingShards: 1 });
  });

  it('counts reservations held and expired', async () => {
    const b = await bucket();
    await c().reserveUnits(b, ['r1', 'r2'], new Date(Date.now() + 3_600_000), 'k');
    await c().reserveUnits(b, ['r3'], new Date(Date.now() - 1000), 'k');
    expect((await c().bucketHealth(b, new Date())).reservations).toEqual({ held: 3, expired: 1 });
    await c().releaseUnits(b, ['r1'], 'k');
    expect((await c().bucketHealth(b, new Date())).reservations).toEqual({ held: 2, expired: 1 });
  });

  it('follows the scrubber: units checked in the current pass, then a completed pass, then new units unchecked', async () => {
    const b = await bucket();
    for (const k of ['a', 'b']) await c().commitManifest(b, k, manifest(b, k, [unit(), unit()]), {});
    const ids = (await c().listUnits(b, null, 10)).map((u) => u.unitId);
    const before = Date.now();
    await c().recordScrub(b, ids.slice(0, 1), { afterUnit: ids[0]! });
    let s = (await c().bucketHealth(b, new Date())).scrub;
    expect(s).toMatchObject({ units: 4, checked: 1, passes: 0, lastPassCompletedAt: null });
    expect(s.passStartedAt).toBeGreaterThanOrEqual(before);
    await c().recordScrub(b, ids.slice(1, 3), { afterUnit: ids[2]! });
    expect((await c().bucketHealth(b, new Date())).scrub).toMatchObject({ units: 4, checked: 3 });
    await c().recordScrub(b, ids.slice(3), null);
    s = (await c().bucketHealth(b, new Date())).scrub;
    expect(s).toMatchObject({ units: 4, checked: 4, passes: 1, passStartedAt: null });
    expect(s.lastPassCompletedAt).toBeGreaterThanOrEqual(s.lastPassStartedAt!);
    expect(await c().getScrubCursor(b)).toBeNull();
    // The next pass starts over: what it has not reached yet counts as unchecked.
    await new Promise((r) => setTimeout(r, 2));
    await c().recordScrub(b, ids.slice(0, 1), { afterUnit: ids[0]! });
    expect((await c().bucketHealth(b, new Date())).scrub).toMatchObject({ units: 4, checked: 1, passes: 1 });
  });

  it("keeps a deleted bucket's garbage countable until the collector takes it", async () => {
    const b = await bucket();
    await c().reserveUnits(b, ['orphan'], new Date(Date.now() + 1000), 'k'); // due at later()
    const before = await c().deletedBucketGarbage(later());
    await c().removeBucket(b);
    const after = await c().deletedBucketGarbage(later());
    expect(after.queued).toBe(before.queued + 1);
    expect(after.due).toBe(before.due + 1);
  });
}
