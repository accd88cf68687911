/**
 * A catalog written by the release with schema 3 (test/fixtures/catalog-v3: SQLite files and shard
 * files written by commit dce209f's own code, see its generate.ts) opens under this release
 * (schema 4): the ledger's redundancy counts per policy, which that release did not keep, are
 * taken from what it stored (whole units, two versions of a key, a multipart object, one unit a
 * shard short, one at exactly k), then move with repairs and deletes as commits keep them.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrate, schemaVersion } from '../../worker/catalog/schema-migrations.ts';
import { SCHEMA_VERSION } from '../../worker/catalog/sql-schema.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { SqliteStorage } from '../support/sqlite-storage.ts';
import type { PolicyRedundancy } from '../../worker/catalog/redundancy.ts';

const FIXTURE = new URL('../fixtures/catalog-v3/', import.meta.url);
const expected = JSON.parse(readFileSync(new URL('expected.json', FIXTURE), 'utf8')) as {
  units: { key: string; unitId: string; size: number; k: number; m: number; missing: number[] }[];
};
const INSTANCES = ['__buckets__', 'bucket:photos'];
const openFixture = () => openCatalogFixture(FIXTURE, INSTANCES, { k: 4, m: 2, blockSize: 4096, small: { threshold: 256, mode: 'inline' } });

/** A policy's ladder as "shards left:units/bytes", whole first, then below k. */
const ladder = (p: PolicyRedundancy | undefined) =>
  p ? [...p.byShardsLeft.map((s) => `${s.shardsLeft}:${s.units}/${s.bytes}`), `<k:${p.belowK.units}/${p.belowK.bytes}`] : null;
const unitOf = (key: string) => expected.units.find((u) => u.key === key)!;

describe('a catalog written by schema 3 opens under schema 4 (redundancy per policy in the ledger)', () => {
  it('the fixture really is schema 3, its ledger without redundancy counts, and holds what generate.ts wrote', () => {
    const old = SqliteStorage.open(readFileSync(new URL('bucket-photos.sqlite', FIXTURE)));
    expect(schemaVersion(old.sql)).toBe(3);
    expect(old.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM ledger WHERE name LIKE 'unit%'").one().n).toBe(0);
    // Seven units of 4+2: coded 20000, two.bin's two versions 8000 and 9000, multi.bin's parts 6000 and 1000, short-one 12000 (one shard missing), short-two 15000 (two).
    expect(expected.units.map((u) => [u.key, u.size, `${u.k}+${u.m}`, u.missing.length]).sort()).toEqual([
      ['coded.bin', 20000, '4+2', 0],
      ['multi.bin', 1000, '4+2', 0],
      ['multi.bin', 6000, '4+2', 0],
      ['short-one.bin', 12000, '4+2', 1],
      ['short-two.bin', 15000, '4+2', 2],
      ['two.bin', 8000, '4+2', 0],
      ['two.bin', 9000, '4+2', 0],
    ]);
  });

  it('counts every stored unit and its bytes by shards left, agreeing with the worklist and the unit index', async () => {
    const { catalog } = await openFixture();
    const h = await catalog.bucketHealth('photos', new Date());
    expect(Object.keys(h.redundancy.byPolicy)).toEqual(['4+2']);
    expect(ladder(h.redundancy.byPolicy['4+2'])).toEqual(['6:5/44000', '5:1/12000', '4:1/15000', '<k:0/0']);
    expect(h.redundancy).toMatchObject({ atRisk: 1, atRiskBytes: 15000, lost: 0, lostBytes: 0, byMissing: { 1: 1, 2: 1 } });
    expect(h.scrub.units).toBe(7);
  });

  it('after the migration the counts move with repairs and deletes, as commits keep them', async () => {
    const { catalog } = await openFixture();
    await catalog.markRepaired('photos', unitOf('short-two.bin').unitId, [0, 5], 'short-two.bin');
    await catalog.markMissing('photos', unitOf('coded.bin').unitId, [2, 3, 4], 'coded.bin'); // below k
    let h = await catalog.bucketHealth('photos', new Date());
    expect(ladder(h.redundancy.byPolicy['4+2'])).toEqual(['6:5/39000', '5:1/12000', '4:0/0', '<k:1/20000']);
    await catalog.removeManifest('photos', 'coded.bin', undefined, (await catalog.getManifest('photos', 'coded.bin'))!.versionId);
    await catalog.removeManifest('photos', 'multi.bin'); // versioned: a delete marker; its units stay stored
    h = await catalog.bucketHealth('photos', new Date());
    expect(ladder(h.redundancy.byPolicy['4+2'])).toEqual(['6:5/39000', '5:1/12000', '4:0/0', '<k:0/0']);
    expect(h.scrub.units).toBe(6);
  });

  it('migrates once: a second start changes nothing', async () => {
    const { storages } = await openFixture();
    const photos = storages.get('bucket:photos')!;
    expect(schemaVersion(photos.sql)).toBe(SCHEMA_VERSION);
    const snapshot = photos.export();
    expect(photos.transactionSync(() => migrate(photos.sql))).toBe(SCHEMA_VERSION);
    expect(Buffer.compare(Buffer.from(photos.export()), Buffer.from(snapshot))).toBe(0);
  });
});
