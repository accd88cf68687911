/**
 * A catalog written by the release with schema 4 (test/fixtures/catalog-v4-access-log: SQLite
 * files and shard files written by commit 3a1412d's own code, the last release before server
 * access logging; see its generate.ts) opens under this release (schema 5): the access log's
 * tables are created, everything reads as before, the journal goes on from where it was, and a
 * bucket of that release can log into another of that release (a versioned one), its records
 * rolled into one log object.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrate, schemaVersion } from '../../worker/catalog/schema-migrations.ts';
import { SCHEMA_VERSION } from '../../worker/catalog/sql-schema.ts';
import { AccessLogDelivery } from '../../worker/upkeep/access-log.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { readBytes } from '../support/read-bytes.ts';
import { SqliteStorage } from '../support/sqlite-storage.ts';

const FIXTURE = new URL('../fixtures/catalog-v4-access-log/', import.meta.url);
const expected = JSON.parse(readFileSync(new URL('expected.json', FIXTURE), 'utf8')) as { objects: Record<string, { size: number; md5: string }> };
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const INSTANCES = ['__buckets__', 'bucket:site', 'bucket:logs'];
const POLICY = { k: 4, m: 2, blockSize: 4096, small: { threshold: 256, mode: 'inline' } };
const tables = (s: SqliteStorage) =>
  s.sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'access_log%' ORDER BY name")
    .toArray()
    .map((r) => r.name);

describe('a catalog written by schema 4 opens under schema 5 (server access logging)', () => {
  it('the fixture really is schema 4, without the access log tables', () => {
    const old = SqliteStorage.open(readFileSync(new URL('bucket-site.sqlite', FIXTURE)));
    expect(schemaVersion(old.sql)).toBe(4);
    expect(tables(old)).toEqual([]);
    expect(old.transactionSync(() => migrate(old.sql))).toBe(4);
    expect(schemaVersion(old.sql)).toBe(SCHEMA_VERSION);
    expect(tables(old)).toEqual(['access_log', 'access_log_batches']);
    expect(old.transactionSync(() => migrate(old.sql))).toBe(SCHEMA_VERSION); // again: nothing to do
  });

  it('objects read back, the journal goes on, and a bucket of the old release logs into another', async () => {
    const { catalog, store, storages } = await openCatalogFixture(FIXTURE, INSTANCES, POLICY);
    for (const s of storages.values()) expect(schemaVersion(s.sql)).toBe(SCHEMA_VERSION);
    for (const [at, want] of Object.entries(expected.objects)) {
      const [bucket, key] = at.split(/\/(.*)/) as [string, string];
      const got = await readBytes((await store.getObject(bucket, key, { conditions: {} })).body);
      expect({ at, size: got.length, md5: md5(got) }).toEqual({ at, ...want });
    }
    const before = (await catalog.journalStatus('site'))!;
    expect(before.acked).toBeGreaterThan(0); // the old release's journal had stored segments
    await store.config.putBucketLogging('site', { targetBucket: 'logs', targetPrefix: 'from-site/', partitioned: null });
    const take = (await catalog.takeJournal('site', new Date(), 1 << 20))!;
    expect(take.segment.records.some((r) => JSON.stringify(r).includes('"logging"'))).toBe(true); // the setting is journaled
    expect(take.segment.segment).toBe(before.acked + 1); // numbered on from the old release's segments
    const append = await catalog.appendAccessLog(
      'logs',
      { stem: 'from-site/', partitioned: null },
      [{ at: Date.now() - 10, line: 'a record' }],
      new Date(),
      3_600_000,
    );
    expect(append).toMatchObject({ dropped: 0, first: true, batch: null });
    const delivery = new AccessLogDelivery({ catalog, store, rollMs: 0, log: () => {} });
    expect(await delivery.deliverDue('logs')).toBe(1);
    const listed = await store.listObjects('logs', { prefix: 'from-site/', delimiter: null, startAfter: null, maxKeys: 10 });
    expect(listed.objects.length).toBe(1);
    expect(new TextDecoder().decode(await readBytes((await store.getObject('logs', listed.objects[0]!.key, { conditions: {} })).body))).toBe('a record\n');
  });
});
