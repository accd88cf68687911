/**
 * A catalog written by the release with schema 5 (test/fixtures/catalog-v5-placements: SQLite
 * files and shard files written by commit 77cbe02's own code; see its generate.ts) opens under
 * this release (schema 6): the ledger gains the units counted by the backends holding their
 * present shards, taken once from the stored manifests, so a backend down now counts as missing
 * shards for what the old release stored too; later commits and deletes keep those counts.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrate, schemaVersion } from '../../worker/catalog/schema-migrations.ts';
import { SCHEMA_VERSION } from '../../worker/catalog/sql-schema.ts';
import { withUnreachableMissing } from '../../worker/ops/unreachable.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { readBytes } from '../support/read-bytes.ts';
import { SqliteStorage } from '../support/sqlite-storage.ts';

const FIXTURE = new URL('../fixtures/catalog-v5-placements/', import.meta.url);
const expected = JSON.parse(readFileSync(new URL('expected.json', FIXTURE), 'utf8')) as { objects: Record<string, { size: number; md5: string }> };
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const POLICY = { k: 4, m: 2, blockSize: 4096, small: { threshold: 256, mode: 'inline' } };
const ALL = ['mem-0', 'mem-1', 'mem-2', 'mem-3', 'mem-4', 'mem-5'];
const placed = (s: SqliteStorage) => s.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM ledger WHERE name LIKE 'placed-%'").one().n;

describe('a catalog written by schema 5 opens under schema 6 (units counted by placement)', () => {
  it('the fixture really is schema 5, without placement counts; the step adds them once', () => {
    const old = SqliteStorage.open(readFileSync(new URL('bucket-media.sqlite', FIXTURE)));
    expect(schemaVersion(old.sql)).toBe(5);
    expect(placed(old)).toBe(0);
    expect(old.transactionSync(() => migrate(old.sql))).toBe(5);
    expect(schemaVersion(old.sql)).toBe(SCHEMA_VERSION);
    expect(placed(old)).toBe(4); // two placements (whole; one shard short), units and bytes each
    expect(old.transactionSync(() => migrate(old.sql))).toBe(SCHEMA_VERSION); // again: nothing to do
    expect(placed(old)).toBe(4);
  });

  it('the counts match the stored units, count a down backend as missing, and follow later writes', async () => {
    const { catalog, store } = await openCatalogFixture(FIXTURE, ['__buckets__', 'bucket:media'], POLICY);
    for (const [at, want] of Object.entries(expected.objects)) {
      const [bucket, key] = at.split(/\/(.*)/) as [string, string];
      const got = await readBytes((await store.getObject(bucket, key, { conditions: {} })).body);
      expect({ at, size: got.length, md5: md5(got) }).toEqual({ at, ...want });
    }
    let h = await catalog.bucketHealth('media', new Date());
    const byOn = (hh: typeof h) => Object.fromEntries(hh.placements!.map((p) => [p.on.join(','), `${p.units}/${p.bytes}`]));
    expect(byOn(h)).toEqual({ [ALL.join(',')]: '2/30000', [ALL.slice(0, 5).join(',')]: '1/30000' });
    expect(h.placements!.reduce((n, p) => n + p.units, 0)).toBe(h.scrub.units);
    // mem-4 down: the unit already short of mem-5's shard has exactly k, the others k+1.
    const down = withUnreachableMissing(h, new Set(['mem-4']));
    expect(down.redundancy).toMatchObject({ atRisk: 1, atRiskBytes: 30_000, lost: 0 });
    expect(down.redundancy.byPolicy['4+2']!.byShardsLeft.map((s) => s.units)).toEqual([0, 2, 1]);

    // A delete of an old object and a new write keep the counts (no negative leftovers).
    await store.deleteObject('media', 'a.bin', {});
    await store.putObject('media', 'd.bin', new Blob([new Uint8Array(5000)]).stream(), {
      contentLength: 5000,
      metadata: { user: {} },
      checksum: null,
      conditions: {},
    });
    h = await catalog.bucketHealth('media', new Date());
    expect(byOn(h)).toEqual({ [ALL.join(',')]: '2/25000', [ALL.slice(0, 5).join(',')]: '1/30000' });
  });
});
