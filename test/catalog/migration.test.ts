/**
 * A catalog written by the release with schema 1 (test/fixtures/catalog-v1: SQLite files and
 * shard files written by commit 27d427c's own code, see generate.ts) opens under this release:
 * every object readable byte for byte and listable, the upload in progress completable, the
 * degraded unit still on the worklist by its id and repairable, bucket settings kept, what was
 * held for deletion still held, and the scrubber starting a pass over units.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrate, schemaVersion } from '../../worker/catalog/schema-migrations.ts';
import { SCHEMA_VERSION } from '../../worker/catalog/sql-schema.ts';
import { runRepair } from '../../worker/upkeep/repair.ts';
import { scrubBatch } from '../../worker/upkeep/scrubber.ts';
import { readBytes } from '../support/read-bytes.ts';
import { openCatalogFixture } from '../support/catalog-fixture.ts';
import { SqliteStorage } from '../support/sqlite-storage.ts';

const FIXTURE = new URL('../fixtures/catalog-v1/', import.meta.url);
const expected = JSON.parse(readFileSync(new URL('expected.json', FIXTURE), 'utf8')) as {
  objects: Record<string, { size: number; md5: string }>;
  pendingUpload: { key: string; uploadId: string; part1: { size: number; md5: string } };
  degraded: { key: string; unitId: string; missing: number[]; attempts: number };
  orphan: string;
};
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const INSTANCES = ['__buckets__', 'bucket:photos', 'bucket:empty'];

/** The fixture as the old release left it (test/support/catalog-fixture.ts). */
const openFixture = () => openCatalogFixture(FIXTURE, INSTANCES, { k: 4, m: 2, blockSize: 4096 });

const readAll = readBytes;

describe('a catalog written by schema 1 opens under this release', () => {
  it('the fixture really is schema 1: objects keyed by key with the manifest inline', () => {
    const old = SqliteStorage.open(readFileSync(new URL('bucket-photos.sqlite', FIXTURE)));
    expect(schemaVersion(old.sql)).toBe(1);
    const columns = old.sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info('objects')")
      .toArray()
      .map((r) => r.name);
    expect(columns).toContain('manifest');
    expect(columns).not.toContain('version_id');
  });

  it('every object is listed and reads back byte for byte', async () => {
    const { catalog, store } = await openFixture();
    expect((await catalog.listBucketRecords()).map((b) => [b.name, b.region])).toEqual([
      ['empty', 'eu-west-1'],
      ['photos', 'us-east-1'],
    ]);
    const listed = await store.listObjects('photos', { prefix: '', delimiter: null, startAfter: null, maxKeys: 1000 });
    expect(listed.objects.map((o) => o.key).sort()).toEqual(Object.keys(expected.objects).sort());
    for (const o of listed.objects) expect(o.size, o.key).toBe(expected.objects[o.key]!.size);
    const dirs = await store.listObjects('photos', { prefix: '', delimiter: '/', startAfter: null, maxKeys: 1000 });
    expect(dirs.commonPrefixes).toEqual(['dir/', 'é/']);
    for (const [key, want] of Object.entries(expected.objects)) {
      const got = await readAll((await store.getObject('photos', key, { conditions: {} })).body);
      expect({ key, size: got.length, md5: md5(got) }).toEqual({ key, ...want });
    }
    expect((await store.headObject('photos', 'tagged.bin', { conditions: {} })).metadata.tags).toEqual([{ key: 'team', value: 'blue' }]);
    expect(await catalog.getBucketCors('photos')).toMatchObject([{ allowedOrigins: ['https://app.example'] }]);
    expect(await catalog.getBucketTagging('photos')).toEqual([{ key: 'cost-center', value: '42' }]);
  });

  it('the upload in progress completes; the degraded unit is on the worklist by its id and repairs', async () => {
    const { catalog, store, backends } = await openFixture();
    const uploads = await store.listMultipartUploads('photos', { prefix: '', delimiter: null, keyMarker: null, uploadIdMarker: null, maxUploads: 10 });
    expect(uploads.uploads.map((u) => [u.key, u.uploadId])).toEqual([[expected.pendingUpload.key, expected.pendingUpload.uploadId]]);
    const parts = await store.listParts('photos', 'pending.bin', expected.pendingUpload.uploadId, { partNumberMarker: 0, maxParts: 10 });
    await store.completeMultipartUpload(
      'photos',
      'pending.bin',
      expected.pendingUpload.uploadId,
      parts.parts.map((p) => ({ partNumber: p.partNumber, etag: p.etag })),
      { conditions: {} },
    );
    const body = await readAll((await store.getObject('photos', 'pending.bin', { conditions: {} })).body);
    expect(md5(body)).toBe(expected.pendingUpload.part1.md5);

    const [d] = await catalog.listDegradedUnits('photos', null, 10);
    expect(d).toMatchObject({
      key: expected.degraded.key,
      unitId: expected.degraded.unitId,
      missing: expected.degraded.missing,
      attempts: expected.degraded.attempts,
    });
    const found = await catalog.getUnit('photos', expected.degraded.unitId, expected.degraded.key);
    expect(found).toMatchObject({ key: 'degraded.bin', unitId: expected.degraded.unitId, unit: { missing: [1] } });
    await runRepair(
      { bucket: 'photos', key: expected.degraded.key, unitId: expected.degraded.unitId, shards: [1], reason: { kind: 'worklist' } },
      { catalog, backends: new Map(backends.map((b) => [b.id, b])) },
    );
    expect(await catalog.listDegradedUnits('photos', null, 10)).toEqual([]);
    expect(md5(await readAll((await store.getObject('photos', 'degraded.bin', { conditions: {} })).body))).toBe(expected.objects['degraded.bin']!.md5);
  });

  it('keeps what was held for deletion or reserved, and the scrubber starts a pass over units', async () => {
    const { catalog, units } = await openFixture();
    const pending = await catalog.pendingUnitIds('photos');
    expect(pending).toContain(expected.orphan);
    expect(pending.length).toBeGreaterThanOrEqual(3); // over.bin's first version, gone.bin, the orphan
    expect(await catalog.getScrubCursor('photos')).toBeNull(); // a key cursor means nothing to a walk over units
    const before = (await catalog.bucketHealth('photos', new Date())).scrub;
    const unitCount = (await catalog.listUnits('photos', null, 1000)).length;
    expect(before).toMatchObject({ units: unitCount, checked: 0, passes: 0 });
    expect(unitCount).toBe(7 + 3); // one unit per coded single-PUT object (inline.txt has none), three for multi.bin
    const found: string[] = [];
    await scrubBatch(catalog, units.byId, { mode: 'verify', unitsPerRun: 1000 }, (t) => found.push(t.unitId));
    const after = (await catalog.bucketHealth('photos', new Date())).scrub;
    expect(after).toMatchObject({ units: unitCount, checked: unitCount, passes: 1 });
    expect(found).toEqual([expected.degraded.unitId]); // the one shard the old release lost
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
