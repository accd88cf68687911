// On-line merges of two neighbouring partitions (docs/PARTITIONS.md "Merges", issue 39): the
// upper partition's keys go into the lower one while writes go on, with the driver stopped where
// a crash would stop it and the instances restarted, in Node over the product's SQL
// (test/support/local-catalog.ts); and the cron's rule of when small neighbours merge.

import { describe, expect, it } from 'vitest';
import { localCatalog } from '../support/local-catalog.ts';
import { expectS3, manifest } from './fixtures.ts';
import { expectHolds, fill, keyAt, writersOf, type Local, type Model } from './partition-model.ts';
import { prng } from '../support/random.ts';
import { setQuota } from '../../worker/catalog/quota-set.ts';
import { splitDuePartitions } from '../../worker/upkeep/split-partitions.ts';
import { partitionsCell } from '../../cli/commands/status.ts';
import type { SplitThresholds } from '../../worker/model/split-thresholds.ts';

const sqlOf = (c: Local, instance: string) => c.namespace.instance(instance).storage.sql;

/** A bucket of `n` keys split on line at each of `at` (keys of keyAt). */
async function splitBucket(c: Local, bucket: string, n: number, at: number[], model: Model): Promise<void> {
  await c.insertBucket(bucket, 'auto');
  await fill(c, bucket, n, model);
  for (const i of at) await c.splitPartition(bucket, keyAt(i), keyAt(i));
}

describe('an on-line merge', () => {
  it('joins a partition into its lower neighbour: every key, version, upload, part, count and garbage row goes with it', async () => {
    const c = localCatalog({ garbageGraceMs: 3_600_000 }, undefined, { split: false });
    await c.insertBucket('m', 'auto');
    await c.setVersioning('m', 'Enabled');
    const model: Model = new Map();
    await fill(c, 'm', 120, model);
    for (let i = 0; i < 120; i += 10) {
      const m = manifest('m', keyAt(i));
      await c.commitManifest('m', keyAt(i), m, {}); // a second version
      model.set(keyAt(i), m);
    }
    const upload = await c.insertUpload('m', keyAt(100), { metadata: { user: {} }, checksum: null });
    await c.putPart('m', keyAt(100), upload.uploadId, { partNumber: 1, etag: '"e"', size: 5, lastModified: new Date().toISOString(), units: [] } as never);
    const split = (await c.splitPartition('m', keyAt(0), keyAt(60)))!;
    const upper = split.ranges[1]!.instance;
    // Garbage of the upper partition's own commits: a noncurrent version removed.
    const [, doomed] = (await c.listVersions('m', { prefix: keyAt(110), delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 10 })).versions;
    await c.removeManifest('m', keyAt(110), {}, doomed!.versionId);
    const garbageInUpper = sqlOf(c, upper).exec<{ n: number }>('SELECT COUNT(*) AS n FROM garbage').one().n;
    expect(garbageInUpper).toBeGreaterThan(0);
    const before = await c.bucketHealth('m', new Date());
    const versionsBefore = await c.listVersions('m', { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 1000 });

    const map = (await c.mergePartition('m', keyAt(60)))!;
    expect(map).toEqual({ epoch: 2, ranges: [{ low: '', instance: 'bucket:m' }], retired: [upper] });
    await expectHolds(c, 'm', model, '', 131);
    const after = await c.bucketHealth('m', new Date());
    expect(after.partitions!.map((p) => [p.low, p.high, p.versions])).toEqual([['', null, 131]]);
    expect({ objects: after.objects, bytes: after.bytes, units: after.scrub.units }).toEqual({
      objects: before.objects,
      bytes: before.bytes,
      units: before.scrub.units,
    });
    const versionsAfter = await c.listVersions('m', { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 1000 });
    expect(versionsAfter.versions.map((v) => [v.key, v.versionId])).toEqual(versionsBefore.versions.map((v) => [v.key, v.versionId]));
    expect((await c.listPartRecords('m', keyAt(100), upload.uploadId, 0, 10)).parts).toHaveLength(1);
    // The root's ledger is its rows' (a count taken afresh agrees); the upper partition holds nothing, no staging is left.
    const root = sqlOf(c, 'bucket:m');
    expect(root.exec<{ value: number }>("SELECT value FROM ledger WHERE name = 'objects'").one().value).toBe(
      root.exec<{ n: number }>('SELECT COUNT(*) AS n FROM versions WHERE delete_marker = 0').one().n,
    );
    expect(root.exec("SELECT name FROM sqlite_master WHERE name LIKE 'merge_%' OR name LIKE 'split_%'").toArray()).toEqual([]);
    const gone = sqlOf(c, upper);
    for (const t of ['versions', 'objects', 'units', 'uploads', 'parts', 'garbage', 'reservations'])
      expect(gone.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t}`).one().n, t).toBe(0);
    expect(gone.exec<{ n: number }>("SELECT value AS n FROM ledger WHERE name = 'objects'").one().n).toBe(0);
    // The upper partition's garbage is the root's now, collected when due.
    expect(root.exec<{ n: number }>('SELECT COUNT(*) AS n FROM garbage').one().n).toBeGreaterThanOrEqual(garbageInUpper);
    const taken = await c.takeDueGarbage(new Date(Date.now() + 2 * 3_600_000), 1000);
    const removed = doomed!.versionId;
    expect(taken.length, `garbage of version ${removed}`).toBeGreaterThan(0);
    // A partition merged away keeps its journal (known to the loss look) and goes with the bucket.
    expect(await c.journalInstances()).toContain(upper.slice('part:'.length));
    // Split again after the merge: a new partition (ids are never reused), the bucket as before.
    const again = (await c.splitPartition('m', keyAt(0), keyAt(60)))!;
    expect(again.ranges[1]!.instance).not.toBe(upper);
    await expectHolds(c, 'm', model, 'split again', 131);
    await expectS3(c.mergePartition('m', keyAt(0)), 'InvalidRequest'); // the first partition has no lower neighbour
  });

  it('loses, duplicates and resurrects nothing while writes, overwrites and deletes go on during it; a stale isolate is sent on', async () => {
    const c = localCatalog({}, undefined, { split: false });
    const other = localCatalog({}, c.namespace, { split: false }); // a second isolate, its map left stale
    const model: Model = new Map();
    await splitBucket(c, 'busy', 800, [200, 400, 600], model);
    await other.getPartitionMap('busy');
    const traffic = writersOf([c, other], 'busy', model, prng(7));
    const first = await c.mergePartition('busy', keyAt(400)); // [400, 600) into [200, 400)
    const second = await c.mergePartition('busy', keyAt(700)); // [600, end) into [200, end)
    expect(await traffic.stop()).toBeGreaterThan(30); // or the race proves little
    expect(first!.ranges.map((r) => r.low)).toEqual(['', keyAt(200), keyAt(600)]);
    expect(second!.ranges.map((r) => r.low)).toEqual(['', keyAt(200)]);
    await expectHolds(c, 'busy', model);
    await expectHolds(other, 'busy', model, 'stale isolate');
  });

  it('has exactly one winner of a conditional create racing across the commit', async () => {
    const c = localCatalog({}, undefined, { split: false });
    const model: Model = new Map();
    await splitBucket(c, 'race', 60, [30], model);
    const racers = Array.from({ length: 8 }, (_, i) =>
      localCatalog({}, c.namespace, { split: false }).commitManifest('race', 'k/9999', manifest('race', `k/9999-${i}`), { ifNoneMatch: '*' }),
    );
    const [settled] = await Promise.all([Promise.allSettled(racers), c.mergePartition('race', keyAt(30))]);
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
    expect(settled.filter((s) => s.status === 'rejected').every((s) => (s as PromiseRejectedResult).reason.code === 'PreconditionFailed')).toBe(true);
  });

  for (const stop of ['page', 'fence', 'commit'] as const) {
    it(`resumes after a crash at "${stop}": the old owners answer until the commit, the merge completes once driven again`, async () => {
      const c = localCatalog({}, undefined, { split: false });
      const model: Model = new Map();
      // Three partitions; the upper merges into the middle one (not the root: the commit and the apply are then two steps).
      await splitBucket(c, 'crash', 500, [100, 300], model);
      const stale = localCatalog({}, c.namespace, { split: false });
      await stale.getPartitionMap('crash'); // an isolate that reads no map after the crash
      const [, middle, upper] = (await c.getPartitionMap('crash')).ranges;
      expect(await c.mergePartition('crash', keyAt(300), stop)).toBeNull();
      // The status shows the merge under way: the partition going, its phase; the one receiving.
      const moving = async () => (await c.partitionsOf('crash')).map((p) => p.merging ?? null);
      if (stop === 'commit')
        expect(await moving()).toEqual([null, 'receiving']); // the map has the upper no more
      else {
        expect(await moving()).toEqual([null, 'receiving', stop === 'page' ? 'copying' : expect.stringMatching(/^(copying|committing)$/)]);
        // (At the fence a call routed to the partition going drives its merge on: the health's sum would finish it.)
        if (stop === 'page') expect(partitionsCell((await c.bucketHealth('crash', new Date())).partitions)).toMatch(/\), 1 merging$/);
      }
      c.namespace.restart(upper!.instance);
      c.namespace.restart(middle!.instance);
      if (stop === 'commit') {
        // The root committed and the middle partition never heard: a call routed by the new map drives its apply
        // (before any call reaches the partition merging away, which would drive it too).
        const fresh = localCatalog({}, c.namespace, { split: false });
        expect((await fresh.getPartitionMap('crash')).ranges.map((r) => r.low)).toEqual(['', keyAt(100)]);
        const m = manifest('crash', keyAt(450));
        await fresh.commitManifest('crash', keyAt(450), m, {});
        model.set(keyAt(450), m);
      }
      // Writes meanwhile, below and in the range merging, by isolates with the map before the crash.
      for (const i of [5, 150, 350, 480, 510]) {
        const m = manifest('crash', keyAt(i));
        await stale.commitManifest('crash', keyAt(i), m, {});
        model.set(keyAt(i), m);
      }
      await stale.removeManifest('crash', keyAt(400));
      model.set(keyAt(400), null);
      await expectHolds(stale, 'crash', model, `after the crash at ${stop}`);
      // Driven again by the alarm (the partition merging away resumes its stored state); asked again, it joins that run or finds it done.
      const q = c.namespace.instance(upper!.instance).object;
      await q.alarm();
      const again = await q.mergePartition('crash', keyAt(300));
      if (again.error) expect(again.error.code).toBe('OperationAborted'); // done already: no range of its own in the map
      const final = await c.getPartitionMap('crash');
      expect(final.ranges.map((r) => r.low)).toEqual(['', keyAt(100)]);
      expect(final.retired).toEqual([upper!.instance]);
      await expectHolds(c, 'crash', model, `resumed after ${stop}`);
      expect(await moving()).toEqual([null, null]);
      await expectHolds(stale, 'crash', model, `stale isolate after ${stop}`);
      for (const r of [...final.ranges, upper!]) {
        expect(sqlOf(c, r.instance).exec("SELECT name FROM sqlite_master WHERE name LIKE 'split_%' OR name LIKE 'merge_%'").toArray(), r.instance).toEqual([]);
      }
    });
  }

  it("joins the two quota shares: the bucket's limit holds as one partition again", async () => {
    const c = localCatalog({}, undefined, { split: false });
    await c.insertBucket('quota', 'auto');
    await setQuota(c, 'quota', { bytes: null, objects: 100 }, Date.now());
    const model: Model = new Map();
    await fill(c, 'quota', 60, model);
    await c.splitPartition('quota', keyAt(0));
    await c.mergePartition('quota', keyAt(59));
    expect((await c.getBucketQuota('quota'))!.shares).toEqual({ '': { bytes: null, objects: 100 } });
    for (let i = 0; i < 40; i++) await c.commitManifest('quota', `z/${i}`, manifest('quota', `z/${i}`), {});
    await expectS3(c.commitManifest('quota', 'z/over', manifest('quota', 'z/over'), {}), 'QuotaExceeded');
  });

  it('refuses while either side splits, and a split of the partition merged into gives a merge still copying up', async () => {
    const c = localCatalog({}, undefined, { split: false });
    const model: Model = new Map();
    await splitBucket(c, 'busy2', 300, [150], model);
    const [, upper] = (await c.getPartitionMap('busy2')).ranges;
    expect(await c.mergePartition('busy2', keyAt(200), 'page')).toBeNull(); // copying, staged in the root
    // The root splits meanwhile: the merge's staging there is dropped, and the merge gives up when it next reaches it.
    await c.splitPartition('busy2', keyAt(0), keyAt(50));
    await expectS3(c.mergePartition('busy2', keyAt(200)), 'OperationAborted');
    expect(sqlOf(c, upper!.instance).exec("SELECT name FROM sqlite_master WHERE name LIKE 'split_%'").toArray()).toEqual([]);
    // Tried again, it goes into its neighbour as it is now.
    const map = (await c.mergePartition('busy2', keyAt(200)))!;
    expect(map.ranges.map((r) => r.low)).toEqual(['', keyAt(50)]);
    await expectHolds(c, 'busy2', model);
  });
});

describe('a bucket whose partitions merged', () => {
  it('is deleted whole once empty: its partitions and those merged away are freed, and a bucket of its name starts afresh', async () => {
    const c = localCatalog({}, undefined, { split: false });
    const model: Model = new Map();
    await splitBucket(c, 'gone', 90, [30, 60], model);
    const merged = (await c.mergePartition('gone', keyAt(70)))!;
    const instances = [...merged.ranges.map((r) => r.instance), ...merged.retired!];
    expect(instances).toHaveLength(3);
    await expectS3(c.removeBucket('gone'), 'BucketNotEmpty');
    for (let i = 0; i < 90; i++) await c.removeManifest('gone', keyAt(i));
    await c.removeBucket('gone');
    for (const instance of instances) {
      const tables = sqlOf(c, instance).exec<{ n: number }>("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'buckets'").one().n;
      expect(tables, instance).toBe(0); // storage deleted
    }
    await c.insertBucket('gone', 'auto');
    expect(await c.getPartitionMap('gone')).toEqual({ epoch: 0, ranges: [{ low: '', instance: 'bucket:gone' }] });
    expect(await c.getManifest('gone', keyAt(70))).toBeNull();
  });
});

describe("the cron's merges", () => {
  const thresholds: SplitThresholds = {
    autoSplit: true,
    splitRows: 400,
    splitBytes: 1024 ** 4,
    splitRequestRate: 1e9,
    warnFraction: 0.8,
    autoMerge: true,
    mergeAfterDays: 3,
  };

  it('merges two neighbours only once both stayed under a quarter of every threshold for mergeAfterDays, and never one near a threshold', async () => {
    const c = localCatalog({}, undefined, { split: false });
    const model: Model = new Map();
    // Ranges of 50, 50, 150 and 250 keys: the first two are small (under 100 = 400 / 4), the others not.
    await splitBucket(c, 'shrink', 500, [50, 100, 250], model);
    const day = 86_400_000;
    const t0 = Date.now();
    const run = (now: number) => splitDuePartitions(c, thresholds, { deadline: Date.now() + 60_000, now });
    expect((await run(t0)).merged).toEqual([]);
    expect((await run(t0 + 2 * day)).merged).toEqual([]); // small for 2 days: not yet
    const r = await run(t0 + 3 * day);
    expect(r.merged).toEqual([{ bucket: 'shrink', low: keyAt(50), into: '' }]);
    expect(r.failed).toEqual([]);
    // [0, 100) holds 100 keys now (a quarter): not small, so it does not merge with [100, 250) however long.
    expect((await run(t0 + 30 * day)).merged).toEqual([]);
    expect((await c.getPartitionMap('shrink')).ranges.map((r) => r.low)).toEqual(['', keyAt(100), keyAt(250)]);
    // Deletes make the upper two small: noted now, merged 3 days on.
    for (let i = 100; i < 500; i++) if (i % 5 !== 0) await c.removeManifest('shrink', keyAt(i)).then(() => model.set(keyAt(i), null));
    expect((await run(t0 + 31 * day)).merged).toEqual([]);
    expect((await run(t0 + 34 * day)).merged).toEqual([{ bucket: 'shrink', low: keyAt(250), into: keyAt(100) }]);
    await expectHolds(c, 'shrink', model);
  });
});
