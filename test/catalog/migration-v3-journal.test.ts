/**
 * A catalog written by the release with schema 3 (test/fixtures/catalog-v3-journal: SQLite files and
 * shard files written by commit dce209f's own code, the last release before the catalog journal;
 * see its generate.ts) opens under this release (schema 4): everything reads as before, and the
 * journal's first run stores everything that release wrote, versions, a delete marker, inline
 * objects and bucket settings included, as segments on the backends whose replay is exactly the
 * catalog's journaled tables.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bucketImages, replayJournal } from '../../worker/catalog/journal-replay.ts';
import { schemaVersion } from '../../worker/catalog/schema-migrations.ts';
import { JOURNALED } from '../../worker/catalog/sql-journal.ts';
import { journaledRows } from '../support/journaled-rows.ts';
import { SCHEMA_VERSION } from '../../worker/catalog/sql-schema.ts';
import type { JournalTake } from '../../worker/catalog/types.ts';
import { BUCKET_LIST_INSTANCE, JOURNAL_BUCKET, type JournalSegment } from '../../worker/format/journal.ts';
import { flushJournal } from '../../worker/upkeep/journal.ts';
import { configurationSettled, DAY_MS } from '../../worker/model/lifecycle.ts';
import { parseConfig } from '../../worker/config/config.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { readBytes } from '../support/read-bytes.ts';
import { SqliteStorage } from '../support/sqlite-storage.ts';

const FIXTURE = new URL('../fixtures/catalog-v3-journal/', import.meta.url);
const expected = JSON.parse(readFileSync(new URL('expected.json', FIXTURE), 'utf8')) as {
  objects: Record<string, { size: number; md5: string }>;
  history: Record<string, { size: number; md5: string }>;
};
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const INSTANCES = ['__buckets__', 'bucket:photos', 'bucket:history'];
const POLICY = { k: 4, m: 2, blockSize: 4096, small: { threshold: 256, mode: 'inline' } };

describe('a catalog written by schema 3 opens under this release and its journal stores all of it', () => {
  it('the fixture really is schema 3, with no journal', () => {
    const old = SqliteStorage.open(readFileSync(new URL('bucket-history.sqlite', FIXTURE)));
    expect(schemaVersion(old.sql)).toBe(3);
    expect(old.sql.exec("SELECT name FROM sqlite_master WHERE name LIKE 'journal%'").toArray()).toEqual([]);
  });

  it('every object and version reads back; the first journal run stores every journaled row', async () => {
    const { catalog, store, units, backends, storages } = await openCatalogFixture(FIXTURE, INSTANCES, POLICY);
    for (const s of storages.values()) expect(schemaVersion(s.sql)).toBe(SCHEMA_VERSION);
    for (const [key, want] of Object.entries(expected.objects)) {
      const got = await readBytes((await store.getObject('photos', key, { conditions: {} })).body);
      expect({ key, size: got.length, md5: md5(got) }).toEqual({ key, ...want });
    }
    for (const [at, want] of Object.entries(expected.history)) {
      const [key, versionId] = at.split('@') as [string, string];
      const got = await readBytes((await store.getObject('history', key, { conditions: {}, versionId })).body);
      expect({ at, size: got.length, md5: md5(got) }).toEqual({ at, ...want });
    }
    // Its lifecycle rules were stored without the time they were set (lifecycle-set-at is newer):
    // long settled, so the job acts on them at once (model/lifecycle.ts configurationSettled).
    const run = await catalog.getLifecycleRun('history');
    expect(run).toMatchObject({ rules: [{ id: 'old' }], setAt: null });
    expect(configurationSettled(run.setAt, Date.now(), DAY_MS)).toBe(true);

    // The journal run, as the cron makes it, its segments stored on the fixture's backends.
    const segments: JournalSegment[] = [];
    const spied = Object.assign(Object.create(catalog) as typeof catalog, {
      takeJournal: async (instance: string, now: Date, maxBytes: number) => {
        const take: JournalTake | null = await catalog.takeJournal(instance, now, maxBytes);
        if (take) segments.push(take.segment);
        return take;
      },
    });
    const policy = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: POLICY },
      defaultPolicy: 'ec',
    }).policies.ec!;
    const report = await flushJournal({ catalog: spied, units, policy }, { deadline: Date.now() + 60_000 });
    expect(report).toMatchObject({ instances: 3, failed: [] });
    expect(report.segments).toBe(segments.length);
    expect(new Set(segments.filter((s) => s.completes).map((s) => s.instance))).toEqual(new Set([BUCKET_LIST_INSTANCE, 'photos', 'history']));
    // On the backends: the journal's shard files (sealed: shelved, so found by the unit ids stored).
    const stored = storages.get('bucket:history')!.sql.exec<{ units: string }>('SELECT units FROM journal_files').toArray();
    expect(stored.length).toBeGreaterThan(0);
    const keys = (await Promise.all(backends.map(async (b) => (await b.list('')).entries.map((e) => e.key)))).flat();
    for (const u of stored.flatMap((r) => JSON.parse(r.units) as { unitId: string }[]))
      expect(
        keys.some((k) => k.includes(u.unitId.split('.').at(-1)!)),
        u.unitId,
      ).toBe(true);

    // The replay is the catalog's journaled tables, row for row.
    const images = replayJournal(segments);
    for (const name of INSTANCES) {
      const sql = storages.get(name)!.sql;
      const image = images.get(name === BUCKET_LIST_INSTANCE ? name : name.slice('bucket:'.length))!;
      for (const [table, pk] of Object.entries(JOURNALED)) {
        const rows = journaledRows(sql, table);
        const replayed = [...(image.tables.get(table)?.values() ?? [])].sort((a, b) =>
          JSON.stringify(pk.map((c) => a[c])) < JSON.stringify(pk.map((c) => b[c])) ? -1 : 1,
        );
        expect(replayed.length, `${name} ${table}`).toBe(rows.length);
        expect(new Set(replayed.map((r) => JSON.stringify(r))), `${name} ${table}`).toEqual(new Set(rows.map((r) => JSON.stringify(r))));
      }
    }
    const { buckets } = bucketImages(images);
    const photos = buckets.find((b) => b.name === 'photos')!;
    const history = buckets.find((b) => b.name === 'history')!;
    expect(photos.settings.cors).toMatchObject([{ allowedOrigins: ['https://app.example'] }]);
    expect(photos.settings.tagging).toEqual([{ key: 'cost-center', value: '42' }]);
    expect(history.settings.versioning).toBe('Enabled');
    expect(history.settings.lifecycle).toMatchObject([{ id: 'old' }]);
    expect(history.versions.filter((v) => !v.deleteMarker).length).toBe(Object.keys(expected.history).length);
    expect(history.versions.filter((v) => v.deleteMarker).map((v) => v.key)).toEqual(['removed']);
    expect(
      photos.versions
        .filter((v) => v.current)
        .map((v) => v.key)
        .sort(),
    ).toEqual(Object.keys(expected.objects).sort());
    expect(photos.versions.find((v) => v.key === 'inline.txt')!.manifest!.storage.kind).toBe('inline');
    expect(JOURNAL_BUCKET.startsWith('.')).toBe(true); // never a name S3 accepts for a bucket
  });
});
