// On-line splits of a partition (docs/PARTITIONS.md "Splits on line", issue 39 slice 4): a
// partition cut in two while writes go on, with the driver stopped where a crash would stop it
// and the instance restarted, in Node over the product's SQL (test/support/local-catalog.ts).

import { describe, expect, it } from 'vitest';
import { localCatalog } from '../support/local-catalog.ts';
import { expectS3, manifest } from './fixtures.ts';
import { expectHolds, fill, keyAt, writersOf, type Model } from './partition-model.ts';
import { prng } from '../support/random.ts';
import { rowsOfKeys } from '../../worker/catalog/sql-split.ts';
import { setQuota } from '../../worker/catalog/quota-set.ts';

describe('an on-line split', () => {
  it('cuts a filled bucket at its median: every key, version, upload, part and count goes where its key now lives', async () => {
    const c = localCatalog({}, undefined, { split: false });
    await c.insertBucket('b', 'auto');
    await c.setVersioning('b', 'Enabled');
    const model: Model = new Map();
    await fill(c, 'b', 120, model);
    for (let i = 0; i < 120; i += 10) {
      const m = manifest('b', keyAt(i));
      await c.commitManifest('b', keyAt(i), m, {}); // a second version
      model.set(keyAt(i), m);
    }
    const upload = await c.insertUpload('b', keyAt(100), { metadata: { user: {} }, checksum: null });
    await c.putPart('b', keyAt(100), upload.uploadId, { partNumber: 1, etag: '"e"', size: 5, lastModified: new Date().toISOString(), units: [] } as never);
    const before = await c.bucketHealth('b', new Date());
    const versionsBefore = await c.listVersions('b', { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 1000 });

    const map = (await c.splitPartition('b', keyAt(0)))!;
    expect(map).toMatchObject({ epoch: 1, ranges: [{ low: '' }, { low: keyAt(60) }] });
    await expectHolds(c, 'b', model, '', 132);
    // Both halves hold their range at the new epoch (what a partition numbers its events by: sql-outbox.ts).
    for (const r of map.ranges) {
      const row = c.namespace.instance(r.instance).storage.sql.exec<{ value: string }>("SELECT value FROM state WHERE name = 'partition-range'").one();
      expect(JSON.parse(row.value).epoch, r.instance).toBe(1);
    }
    const after = await c.bucketHealth('b', new Date());
    // The health lists each partition's range and figures, in key order.
    expect(after.partitions!.map((p) => [p.low, p.high, p.versions])).toEqual([
      ['', keyAt(60), 66],
      [keyAt(60), null, 66],
    ]);
    expect({ objects: after.objects, bytes: after.bytes, units: after.scrub.units }).toEqual({
      objects: before.objects,
      bytes: before.bytes,
      units: before.scrub.units,
    });
    const versionsAfter = await c.listVersions('b', { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 1000 });
    expect(versionsAfter.versions.map((v) => [v.key, v.versionId])).toEqual(versionsBefore.versions.map((v) => [v.key, v.versionId]));
    expect((await c.listPartRecords('b', keyAt(100), upload.uploadId, 0, 10)).parts).toHaveLength(1);
    // The new partition's ledger is its rows' (a count taken afresh agrees), and the root's too.
    for (const r of map.ranges) {
      const sql = c.namespace.instance(r.instance).storage.sql;
      const counted = sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM versions WHERE delete_marker = 0').one().n;
      expect(sql.exec<{ value: number }>("SELECT value FROM ledger WHERE name = 'objects'").one().value).toBe(counted);
    }
    // Split again, in the new partition (not the root): the root commits the third range.
    const again = (await c.splitPartition('b', keyAt(119), keyAt(90)))!;
    expect(again.ranges.map((r) => r.low)).toEqual(['', keyAt(60), keyAt(90)]);
    await expectHolds(c, 'b', model, '', 132);
    await expectS3(c.splitPartition('b', keyAt(119), keyAt(90)), 'InvalidArgument'); // the partition's first key
  });

  it('loses, duplicates and resurrects nothing while writes, overwrites and deletes go on during it', async () => {
    const c = localCatalog({}, undefined, { split: false });
    const other = localCatalog({}, c.namespace, { split: false }); // a second isolate, its map left stale
    await c.insertBucket('busy', 'auto');
    const model: Model = new Map();
    await fill(c, 'busy', 800, model);
    const traffic = writersOf([c, other], 'busy', model, prng(4));
    const map = await c.splitPartition('busy', keyAt(0));
    const second = await c.splitPartition('busy', keyAt(799));
    expect(await traffic.stop()).toBeGreaterThan(30); // or the race proves little
    expect(map!.ranges).toHaveLength(2);
    expect(second!.ranges).toHaveLength(3);
    await expectHolds(c, 'busy', model);
    await expectHolds(other, 'busy', model, 'stale isolate');
  });

  it('has exactly one winner of a conditional create racing across the commit', async () => {
    const c = localCatalog({}, undefined, { split: false });
    await c.insertBucket('race', 'auto');
    const model: Model = new Map();
    await fill(c, 'race', 60, model);
    const racers = Array.from({ length: 8 }, (_, i) =>
      localCatalog({}, c.namespace, { split: false }).commitManifest('race', 'k/9999', manifest('race', `k/9999-${i}`), { ifNoneMatch: '*' }),
    );
    const [settled] = await Promise.all([Promise.allSettled(racers), c.splitPartition('race', keyAt(0), 'k/5')]);
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
    expect(settled.filter((s) => s.status === 'rejected').every((s) => (s as PromiseRejectedResult).reason.code === 'PreconditionFailed')).toBe(true);
  });

  for (const stop of ['page', 'fence', 'commit'] as const) {
    it(`resumes after a crash at "${stop}": the old owner answers until the commit, the split completes once driven again`, async () => {
      const c = localCatalog({}, undefined, { split: false });
      await c.insertBucket('crash', 'auto');
      const model: Model = new Map();
      await fill(c, 'crash', 500, model);
      // 'commit' is a crash between the root's commit and the splitting partition's narrowing:
      // only a partition other than the root has that gap (the root commits and narrows in one step).
      let from = 'bucket:crash';
      if (stop === 'commit') {
        const first = (await c.splitPartition('crash', keyAt(0), keyAt(100)))!;
        from = first.ranges[1]!.instance;
      }
      expect(await c.splitPartition('crash', keyAt(499), keyAt(300), stop)).toBeNull();
      c.namespace.restart(from);
      const stale = localCatalog({}, c.namespace, { split: false }); // an isolate that read no map since
      await stale.getPartitionMap('crash');
      // Writes meanwhile, below and above the split key, by isolates with the map before the crash.
      for (const i of [5, 150, 350, 480, 510]) {
        const m = manifest('crash', keyAt(i));
        await stale.commitManifest('crash', keyAt(i), m, {});
        model.set(keyAt(i), m);
      }
      await stale.removeManifest('crash', keyAt(400));
      model.set(keyAt(400), null);
      await expectHolds(stale, 'crash', model, `after the crash at ${stop}`);
      // Driven again: by the call (a split left committing drives itself) or by the alarm.
      await c.namespace.instance(from).object.alarm();
      const map = await c.splitPartition('crash', keyAt(499), keyAt(300)).catch((e: { code?: string }) => e.code);
      if (typeof map === 'string') expect(map).toBe('InvalidArgument'); // done already: 300 is now a partition's first key
      const final = await c.getPartitionMap('crash');
      expect(final.ranges.map((r) => r.low)).toEqual(stop === 'commit' ? ['', keyAt(100), keyAt(300)] : ['', keyAt(300)]);
      await expectHolds(c, 'crash', model, `resumed after ${stop}`);
      await expectHolds(stale, 'crash', model, `stale isolate after ${stop}`);
      // No split state or change log is left behind.
      for (const r of final.ranges) {
        const sql = c.namespace.instance(r.instance).storage.sql;
        expect(sql.exec("SELECT name FROM sqlite_master WHERE name LIKE 'split_%'").toArray()).toEqual([]);
      }
    });
  }

  it('moves a write in flight with its key: its reservation is released where it commits, never collected', async () => {
    const c = localCatalog({ garbageGraceMs: 0 }, undefined, { split: false });
    await c.insertBucket('flight', 'auto');
    const model: Model = new Map();
    await fill(c, 'flight', 40, model);
    const m = manifest('flight', 'k/9000');
    const expires = new Date(Date.now() + 60_000);
    await c.prepareWrite('flight', 'k/9000', {}, m.storage.kind === 'coded' ? m.storage.units.map((u) => u.unitId) : [], expires);
    await c.splitPartition('flight', keyAt(0), 'k/5');
    await c.commitManifest('flight', 'k/9000', m, {}); // in the new partition, where the reservation went
    model.set('k/9000', m);
    await expectHolds(c, 'flight', model);
    // Long after the reservation's expiry nothing of the committed write is collected.
    const taken = await c.takeDueGarbage(new Date(Date.now() + 3_600_000), 1000);
    const unitIds = new Set(taken.flatMap((g) => [...g.units.map((u) => u.unitId), ...(g.unitIds ?? [])]));
    for (const u of m.storage.kind === 'coded' ? m.storage.units : []) expect(unitIds.has(u.unitId)).toBe(false);
  });

  it('bulk-loads keys across partitions, a batch a partition, a stale map sent on and a split committing meanwhile', async () => {
    const c = localCatalog({}, undefined, { split: false });
    const stale = localCatalog({}, c.namespace, { split: false }); // its map: one partition
    await c.insertBucket('bulk', 'auto');
    const model: Model = new Map();
    await fill(c, 'bulk', 100, model);
    await c.splitPartition('bulk', keyAt(0), keyAt(50));
    const items = Array.from({ length: 300 }, (_, i) => ({ key: keyAt(i), manifest: manifest('bulk', keyAt(i)), conditions: {} }));
    await Promise.all([stale.commitManifests('bulk', items), c.splitPartition('bulk', keyAt(99), keyAt(200))]);
    for (const i of items) model.set(i.key, i.manifest);
    expect((await c.getPartitionMap('bulk')).ranges.map((r) => r.low)).toEqual(['', keyAt(50), keyAt(200)]);
    await expectHolds(c, 'bulk', model);
    await expectS3(
      stale.commitManifests('bulk', [{ key: keyAt(7), manifest: manifest('bulk', keyAt(7)), conditions: { ifNoneMatch: '*' } }]),
      'PreconditionFailed',
    );
  });

  it("copies a page within its byte budget, at least one key's rows whatever their size", async () => {
    const c = localCatalog({}, undefined, { split: false });
    await c.insertBucket('pages', 'auto');
    const model: Model = new Map();
    await fill(c, 'pages', 5, model);
    const sql = c.namespace.instance('bucket:pages').storage.sql;
    const keys = [keyAt(0), keyAt(1), keyAt(2)];
    expect(rowsOfKeys(sql, keys, 1).map((k) => k.key)).toEqual([keyAt(0)]);
    const one = rowsOfKeys(sql, [keyAt(0)])[0]!;
    const size = one.rows.reduce((n, { r }) => n + Object.values(r).reduce<number>((m, v) => m + (typeof v === 'string' ? v.length : 8), 0), 0);
    expect(rowsOfKeys(sql, keys, size + 1).map((k) => k.key)).toEqual([keyAt(0), keyAt(1)]);
    expect(rowsOfKeys(sql, keys).map((k) => k.key)).toEqual(keys);
  });

  it("cuts the splitting partition's quota share in two: the shares still add up to the quota, both sides may grow, the bucket never passes it", async () => {
    const c = localCatalog({}, undefined, { split: false });
    await c.insertBucket('quota', 'auto');
    await setQuota(c, 'quota', { bytes: null, objects: 100 }, Date.now());
    const model: Model = new Map();
    await fill(c, 'quota', 60, model);
    const map = (await c.splitPartition('quota', keyAt(0)))!;
    expect(map.ranges.map((r) => r.low)).toEqual(['', keyAt(30)]);
    // 60 stored, 30 moved, 40 of headroom: the new partition 30 + 20, the root the other 50.
    expect((await c.getBucketQuota('quota'))!.shares).toEqual({ '': { bytes: null, objects: 50 }, [keyAt(30)]: { bytes: null, objects: 50 } });
    const upper = c.namespace.instance(map.ranges[1]!.instance).storage.sql;
    expect(JSON.parse(upper.exec<{ value: string }>("SELECT value FROM state WHERE name = 'quota'").one().value).shares[keyAt(30)]).toEqual({
      bytes: null,
      objects: 50,
    });
    let stored = 60;
    for (const [prefix, room] of [
      ['k/9', 20],
      ['a/', 20],
    ] as const) {
      for (let i = 0; i < room; i++) await c.commitManifest('quota', `${prefix}${i}`, manifest('quota', `${prefix}${i}`), {});
      stored += room;
      await expectS3(c.commitManifest('quota', `${prefix}over`, manifest('quota', `${prefix}over`), {}), 'QuotaExceeded');
    }
    expect(stored).toBe(100);
    expect((await c.bucketHealth('quota', new Date())).objects).toBe(100);
    // The new partition splits in turn (driven there, committed at the root): no headroom left, each side keeps what it holds.
    const again = (await c.splitPartition('quota', keyAt(30)))!;
    const third = again.ranges[2]!;
    const shares = (await c.getBucketQuota('quota'))!.shares!;
    expect(Object.values(shares).reduce((n, x) => n + x.objects!, 0)).toBe(100);
    const own = (r: { instance: string }) =>
      JSON.parse(c.namespace.instance(r.instance).storage.sql.exec<{ value: string }>("SELECT value FROM state WHERE name = 'quota'").one().value).shares;
    expect(own(again.ranges[1]!)[keyAt(30)]).toEqual(shares[keyAt(30)]); // the splitting partition took its smaller share from the commit's answer
    expect(own(third)[third.low]).toEqual(shares[third.low]);
    await expectS3(c.commitManifest('quota', 'k/new', manifest('quota', 'k/new'), {}), 'QuotaExceeded');
  });
});
