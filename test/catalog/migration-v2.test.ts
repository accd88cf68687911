/**
 * A catalog written by the release with schema 2 (test/fixtures/catalog-v2: SQLite files and shard
 * files written by commit 577597e's own code, the last release before versioning; see its
 * generate.ts) opens under this release (schema 3): every stored version is its key's null
 * version, readable and listable as before and by versionId=null; ListObjectVersions lists each;
 * once versioning is enabled a write keeps the migrated version (its shards are not collected),
 * Suspended replaces it; the degraded unit is still on the worklist and repairs.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrate, schemaVersion } from '../../worker/catalog/schema-migrations.ts';
import { SCHEMA_VERSION } from '../../worker/catalog/sql-schema.ts';
import { runRepair } from '../../worker/upkeep/repair.ts';
import { readBytes } from '../support/read-bytes.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { SqliteStorage } from '../support/sqlite-storage.ts';

const FIXTURE = new URL('../fixtures/catalog-v2/', import.meta.url);
const expected = JSON.parse(readFileSync(new URL('expected.json', FIXTURE), 'utf8')) as {
  objects: Record<string, { size: number; md5: string }>;
  degraded: { key: string; unitId: string; missing: number[]; attempts: number };
};
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const INSTANCES = ['__buckets__', 'bucket:photos'];
const ALL = { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 1000 };
const body = (s: string) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new TextEncoder().encode(s)), c.close()) });

/** The fixture as the old release left it (test/support/catalog-fixture.ts). */
const openFixture = () => openCatalogFixture(FIXTURE, INSTANCES, { k: 4, m: 2, blockSize: 4096, small: { threshold: 256, mode: 'inline' } });

describe('a catalog written by schema 2 opens under schema 3 (versioning)', () => {
  it('the fixture really is schema 2: versions without commit order or null marks', () => {
    const old = SqliteStorage.open(readFileSync(new URL('bucket-photos.sqlite', FIXTURE)));
    expect(schemaVersion(old.sql)).toBe(2);
    const columns = old.sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info('versions')")
      .toArray()
      .map((r) => r.name);
    expect(columns).toContain('delete_marker');
    expect(columns).not.toContain('seq');
  });

  it('every object reads back byte for byte, current and as version null; each is listed as its null version', async () => {
    const { store } = await openFixture();
    expect(await store.config.getBucketVersioning('photos')).toBeNull();
    const listed = await store.listObjects('photos', { prefix: '', delimiter: null, startAfter: null, maxKeys: 1000 });
    expect(listed.objects.map((o) => o.key).sort()).toEqual(Object.keys(expected.objects).sort());
    for (const [key, want] of Object.entries(expected.objects)) {
      for (const versionId of [undefined, 'null']) {
        const got = await store.getObject('photos', key, { conditions: {}, versionId });
        const bytes = await readBytes(got.body);
        expect({ key, versionId: got.versionId, size: bytes.length, md5: md5(bytes) }).toEqual({ key, versionId, ...want });
      }
    }
    expect((await store.headObject('photos', 'tagged.bin', { conditions: {} })).metadata.tags).toEqual([{ key: 'team', value: 'blue' }]);
    const versions = await store.listObjectVersions('photos', ALL);
    expect(versions.versions.map((v) => [v.key, v.versionId, v.isLatest, v.deleteMarker])).toEqual(
      Object.keys(expected.objects)
        .sort()
        .map((k) => [k, 'null', true, false]),
    );
  });

  it('Enabled keeps the migrated version and its shards under a new one; Suspended replaces it', async () => {
    const { catalog, store } = await openFixture();
    const pending = new Set(await catalog.pendingUnitIds('photos'));
    const migratedUnits = (await catalog.getManifest('photos', 'coded.bin'))!.storage;
    await store.config.putBucketVersioning('photos', 'Enabled');
    const put = await store.putObject('photos', 'coded.bin', body('new'), { contentLength: 3, metadata: { user: {} }, checksum: null, conditions: {} });
    expect(put.versionId).toMatch(/^[0-9a-f]{28}$/);
    expect(new Set(await catalog.pendingUnitIds('photos'))).toEqual(pending); // nothing of the old version queued
    expect(md5(await readBytes((await store.getObject('photos', 'coded.bin', { conditions: {}, versionId: 'null' })).body))).toBe(
      expected.objects['coded.bin']!.md5,
    );
    await store.config.putBucketVersioning('photos', 'Suspended');
    await store.putObject('photos', 'coded.bin', body('newer'), { contentLength: 5, metadata: { user: {} }, checksum: null, conditions: {} });
    const now = await catalog.pendingUnitIds('photos');
    expect(migratedUnits.kind).toBe('coded');
    for (const u of migratedUnits.kind === 'coded' ? migratedUnits.units : []) expect(now).toContain(u.unitId);
    const versions = (await store.listObjectVersions('photos', { ...ALL, prefix: 'coded.bin' })).versions;
    expect(versions.map((v) => [v.versionId, v.isLatest])).toEqual([
      ['null', true],
      [put.versionId, false],
    ]);
  });

  it('the degraded unit is still on the worklist by its id and repairs', async () => {
    const { catalog, store, backends } = await openFixture();
    const [d] = await catalog.listDegradedUnits('photos', null, 10);
    expect(d).toMatchObject({
      key: expected.degraded.key,
      unitId: expected.degraded.unitId,
      missing: expected.degraded.missing,
      attempts: expected.degraded.attempts,
    });
    await runRepair(
      { bucket: 'photos', key: expected.degraded.key, unitId: expected.degraded.unitId, shards: [1], reason: { kind: 'worklist' } },
      { catalog, backends: new Map(backends.map((b) => [b.id, b])) },
    );
    expect(await catalog.listDegradedUnits('photos', null, 10)).toEqual([]);
    expect(md5(await readBytes((await store.getObject('photos', 'degraded.bin', { conditions: {} })).body))).toBe(expected.objects['degraded.bin']!.md5);
  });

  it('migrates once: the storage is at the current schema and a second start changes nothing', async () => {
    const { storages } = await openFixture();
    const photos = storages.get('bucket:photos')!;
    expect(schemaVersion(photos.sql)).toBe(SCHEMA_VERSION);
    const snapshot = photos.export();
    expect(photos.transactionSync(() => migrate(photos.sql))).toBe(SCHEMA_VERSION);
    expect(Buffer.compare(Buffer.from(photos.export()), Buffer.from(snapshot))).toBe(0);
  });
});
