/**
 * A catalog written by the release with schema 6 (test/fixtures/catalog-v6-reservations: SQLite
 * files and shard files written by commit f48626e's own code; see its generate.ts) opens under
 * this release (schema 7): `reservations` gains the key of the write in flight. The old
 * release's reservations have none, so an on-line split of the partition waits (SlowDown) until
 * they end; then it splits, and everything the old release stored reads back from where its key
 * now lives.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrate, schemaVersion } from '../../worker/catalog/schema-migrations.ts';
import { SCHEMA_VERSION } from '../../worker/catalog/sql-schema.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { readBytes } from '../support/read-bytes.ts';
import { SqliteStorage } from '../support/sqlite-storage.ts';
import { expectS3 } from './fixtures.ts';

const FIXTURE = new URL('../fixtures/catalog-v6-reservations/', import.meta.url);
const expected = JSON.parse(readFileSync(new URL('expected.json', FIXTURE), 'utf8')) as {
  upload: string;
  objects: Record<string, { size: number; md5: string }>;
};
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const POLICY = { k: 4, m: 2, blockSize: 4096, small: { threshold: 256, mode: 'inline' } };
const columns = (s: SqliteStorage) =>
  s.sql
    .exec<{ name: string }>("SELECT name FROM pragma_table_info('reservations')")
    .toArray()
    .map((c) => c.name);

describe('a catalog written by schema 6 opens under schema 7 (reservations keep their key)', () => {
  it('the fixture really is schema 6 with keyless reservations; the step adds the column once', () => {
    const old = SqliteStorage.open(readFileSync(new URL('bucket-media.sqlite', FIXTURE)));
    expect(schemaVersion(old.sql)).toBe(6);
    expect(columns(old)).toEqual(['unit_id', 'expires']);
    expect(old.transactionSync(() => migrate(old.sql))).toBe(6);
    expect(schemaVersion(old.sql)).toBe(SCHEMA_VERSION);
    expect(columns(old)).toEqual(['unit_id', 'expires', 'key']);
    expect(old.sql.exec('SELECT unit_id, key FROM reservations ORDER BY unit_id').toArray()).toEqual([
      { unit_id: 'fixture-unit-b', key: null },
      { unit_id: 'fixture-unit-y', key: null },
    ]);
    expect(old.transactionSync(() => migrate(old.sql))).toBe(SCHEMA_VERSION); // again: nothing to do
  });

  it('a split waits for the old writes in flight, then moves what the old release stored where its keys now live', async () => {
    const { catalog, store } = await openCatalogFixture(FIXTURE, ['__buckets__', 'bucket:media'], POLICY);
    await expectS3(catalog.splitPartition('media', 'a/one.bin', 'm'), 'SlowDown');
    // The old writes never commit: their reservations expire and go to the collector.
    const taken = await catalog.takeDueGarbage(new Date(Date.parse('2030-01-02T00:00:00Z')), 100);
    expect(taken.flatMap((g) => g.unitIds ?? []).sort()).toEqual(['fixture-unit-b', 'fixture-unit-y']);
    const map = (await catalog.splitPartition('media', 'a/one.bin', 'm'))!;
    expect(map.ranges.map((r) => r.low)).toEqual(['', 'm']);
    for (const [at, want] of Object.entries(expected.objects)) {
      const [bucket, key] = at.split(/\/(.*)/) as [string, string];
      const got = await readBytes((await store.getObject(bucket, key, { conditions: {} })).body);
      expect({ at, size: got.length, md5: md5(got) }).toEqual({ at, ...want });
    }
    // The upload the old release left open moved with its key and its part.
    expect((await catalog.listPartRecords('media', 'z/big.bin', expected.upload, 0, 10)).parts.map((p) => p.size)).toEqual([6000]);
    const listed = await catalog.listManifests('media', { prefix: '', delimiter: null, startAfter: null, maxKeys: 100 });
    expect(listed.objects.map((o) => o.key)).toEqual(['a/inline.txt', 'a/one.bin', 'm/two.bin', 'z/three.bin']);
    // A write of this release reserves with its key.
    await catalog.prepareWrite('media', 'z/next.bin', {}, ['new-unit'], new Date(Date.now() + 60_000));
    const upper = catalog.namespace.instance(map.ranges[1]!.instance).storage;
    expect(upper.sql.exec("SELECT key FROM reservations WHERE unit_id = 'new-unit'").toArray()).toEqual([{ key: 'z/next.bin' }]);
  });
});
