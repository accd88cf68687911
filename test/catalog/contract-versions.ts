// Versioning cases of the catalog contract (contract.ts runs them against every Catalog): what a
// commit and a delete keep or queue in each versioning state, the null version, delete markers,
// version-addressed reads, deletes and tags, and ListObjectVersions' order and pages.

import { expect, it } from 'vitest';
import type { Catalog } from '../../worker/catalog/ports.ts';
import type { ListVersionsOptions, ObjectVersionSummary } from '../../worker/model/object-store.ts';
import type { Ctx } from './contract.ts';
import { later } from './contract.ts';
import { expectS3, ids, manifest, takeUnitIds, unit } from './fixtures.ts';

const all = (o: Partial<ListVersionsOptions> = {}): ListVersionsOptions => ({
  prefix: '',
  delimiter: null,
  keyMarker: null,
  versionIdMarker: null,
  maxKeys: 1000,
  ...o,
});
const brief = (v: ObjectVersionSummary) => `${v.key}@${v.versionId}${v.deleteMarker ? ':marker' : ''}${v.isLatest ? ':latest' : ''}`;
const current = async (c: Catalog, b: string, key: string) =>
  (await c.listManifests(b, { prefix: key, delimiter: null, startAfter: null, maxKeys: 1 })).objects.map((o) => o.etag);

export function defineVersionCases({ c, bucket }: Ctx) {
  it('a bucket never versioned: no version ids, one null version per key, the replaced one queued', async () => {
    const b = await bucket();
    expect(await c().getVersioning(b)).toBeNull();
    const [u1, u2] = [unit(), unit()];
    const m1 = manifest(b, 'k', [u1]);
    expect(await c().commitManifest(b, 'k', m1, {})).toEqual({});
    expect(await c().getVersion(b, 'k', null)).toEqual({ kind: 'object', manifest: m1 });
    expect(await c().getVersion(b, 'k', 'null')).toEqual({ kind: 'object', manifest: m1, versionId: 'null' });
    await c().commitManifest(b, 'k', manifest(b, 'k', [u2]), {});
    expect((await c().listVersions(b, all())).versions.map(brief)).toEqual(['k@null:latest']);
    expect(await takeUnitIds(c(), b, later())).toEqual(ids([u1]));
    expect(await c().removeManifest(b, 'k')).toEqual({});
    expect(await c().getVersion(b, 'k', null)).toEqual({ kind: 'none' });
    expect(await takeUnitIds(c(), b, later())).toEqual(ids([u2]));
    await expectS3(c().getVersioning(`${b}-none`), 'NoSuchBucket');
  });

  it('Enabled: every version kept with its units; reads by id; a delete adds a marker the listing hides', async () => {
    const b = await bucket();
    await c().setVersioning(b, 'Enabled');
    expect(await c().getVersioning(b)).toBe('Enabled');
    const [u1, u2] = [unit(), unit()];
    const [m1, m2] = [manifest(b, 'k', [u1]), manifest(b, 'k', [u2])];
    expect(await c().commitManifest(b, 'k', m1, {})).toEqual({ versionId: m1.versionId });
    expect(await c().commitManifest(b, 'k', m2, {})).toEqual({ versionId: m2.versionId });
    expect(await takeUnitIds(c(), b, later())).toEqual([]); // the noncurrent version keeps its shards
    expect(await c().getVersion(b, 'k', null)).toEqual({ kind: 'object', manifest: m2, versionId: m2.versionId });
    expect(await c().getVersion(b, 'k', m1.versionId)).toEqual({ kind: 'object', manifest: m1, versionId: m1.versionId });
    expect(await c().getVersion(b, 'k', 'null')).toEqual({ kind: 'none' });
    expect((await c().getUnit(b, u1.unitId, 'k'))?.versionId).toBe(m1.versionId); // upkeep still finds it

    const del = await c().removeManifest(b, 'k');
    expect(del).toEqual({ versionId: expect.any(String), deleteMarker: true });
    expect(await c().getManifest(b, 'k')).toBeNull();
    expect(await current(c(), b, 'k')).toEqual([]);
    expect(await c().getVersion(b, 'k', null)).toEqual({ kind: 'marker', versionId: del.versionId, lastModified: expect.any(String) });
    expect((await c().listVersions(b, all())).versions.map(brief)).toEqual([`k@${del.versionId}:marker:latest`, `k@${m2.versionId}`, `k@${m1.versionId}`]);
    await expectS3(c().removeBucket(b), 'BucketNotEmpty');

    // Removing the marker makes the version under it current again; nothing is queued.
    expect(await c().removeManifest(b, 'k', undefined, del.versionId)).toEqual({ versionId: del.versionId, deleteMarker: true });
    expect(await current(c(), b, 'k')).toEqual([m2.etag]);
    // Removing the current version by id: the next newest becomes current, its units queued.
    expect(await c().removeManifest(b, 'k', undefined, m2.versionId)).toEqual({ versionId: m2.versionId });
    expect(await current(c(), b, 'k')).toEqual([m1.etag]);
    expect(await c().getManifest(b, 'k')).toEqual(m1);
    expect(await takeUnitIds(c(), b, later())).toEqual(ids([u2]));
    expect(await c().removeManifest(b, 'k', undefined, m2.versionId)).toEqual({ versionId: m2.versionId }); // gone already: no error
    await c().removeManifest(b, 'k', undefined, m1.versionId);
    expect((await c().listVersions(b, all())).versions).toEqual([]);
    await c().removeBucket(b);
  });

  it('Suspended: a write replaces the null version wherever it stands; a delete leaves a null marker', async () => {
    const b = await bucket();
    const [u0, u1, u2, u3] = [unit(), unit(), unit(), unit()];
    const m0 = manifest(b, 'k', [u0]);
    await c().commitManifest(b, 'k', m0, {}); // before versioning: the null version
    await c().setVersioning(b, 'Enabled');
    const m1 = manifest(b, 'k', [u1]);
    await c().commitManifest(b, 'k', m1, {});
    await c().setVersioning(b, 'Suspended');
    expect(await c().commitManifest(b, 'k', manifest(b, 'k', [u2]), {})).toEqual({}); // the null version: no id sent back
    expect((await c().listVersions(b, all())).versions.map(brief)).toEqual(['k@null:latest', `k@${m1.versionId}`]);
    expect(await takeUnitIds(c(), b, later())).toEqual(ids([u0])); // the old null version, below m1
    expect(await c().removeManifest(b, 'k')).toEqual({ versionId: 'null', deleteMarker: true });
    expect(await takeUnitIds(c(), b, later())).toEqual(ids([u2]));
    expect((await c().listVersions(b, all())).versions.map(brief)).toEqual(['k@null:marker:latest', `k@${m1.versionId}`]);
    expect(await c().getVersion(b, 'k', null)).toMatchObject({ kind: 'marker', versionId: 'null' });
    // A write replaces the null marker too, and If-None-Match * sees no object under a marker.
    await c().commitManifest(b, 'k', manifest(b, 'k', [u3]), { ifNoneMatch: '*' });
    expect((await c().listVersions(b, all())).versions.map(brief)).toEqual(['k@null:latest', `k@${m1.versionId}`]);
    await expectS3(c().commitManifest(b, 'k', manifest(b, 'k', [unit()]), { ifNoneMatch: '*' }), 'PreconditionFailed');
  });

  it('tags one version by id; NoSuchVersion for a version not stored, MethodNotAllowed for a delete marker', async () => {
    const b = await bucket();
    await c().setVersioning(b, 'Enabled');
    const [m1, m2] = [manifest(b, 'k'), manifest(b, 'k')];
    await c().commitManifest(b, 'k', m1, {});
    await c().commitManifest(b, 'k', m2, {});
    await c().setObjectTags(b, 'k', [{ key: 'old', value: '1' }], m1.versionId);
    const got = async (v: string) => ((await c().getVersion(b, 'k', v)) as { manifest: { metadata: { tags?: unknown } } }).manifest.metadata.tags;
    expect(await got(m1.versionId)).toEqual([{ key: 'old', value: '1' }]);
    expect(await got(m2.versionId)).toBeUndefined();
    await expectS3(c().setObjectTags(b, 'k', [], 'null'), 'NoSuchVersion');
    const marker = await c().removeManifest(b, 'k');
    await expectS3(c().setObjectTags(b, 'k', [{ key: 'a', value: 'b' }], marker.versionId), 'MethodNotAllowed');
  });

  it('a degraded unit of a noncurrent version stays on the worklist when a newer version is committed', async () => {
    const b = await bucket();
    await c().setVersioning(b, 'Enabled');
    const u = unit();
    await c().commitManifest(b, 'k', manifest(b, 'k', [u]), {});
    await c().markMissing(b, u.unitId, [1], 'k');
    await c().commitManifest(b, 'k', manifest(b, 'k'), {});
    expect((await c().listDegradedUnits(b, null, 10)).map((d) => d.unitId)).toEqual([u.unitId]);
    expect((await c().bucketHealth(b, new Date())).objects).toBe(2); // stored versions
  });

  it('ListObjectVersions: keys in order, newest first, pages resume inside a key and past common prefixes', async () => {
    const b = await bucket();
    await c().setVersioning(b, 'Enabled');
    const made: Record<string, string[]> = {};
    for (const key of ['a', 'd/x', 'd/y', 'b', 'a', 'c', 'a', 'b']) {
      const m = manifest(b, key);
      await c().commitManifest(b, key, m, {});
      (made[key] ??= []).unshift(m.versionId);
    }
    const marker = (await c().removeManifest(b, 'c')).versionId!;
    made.c!.unshift(marker);
    const full = (await c().listVersions(b, all())).versions.map((v) => `${v.key}@${v.versionId}`);
    expect(full).toEqual(['a', 'b', 'c', 'd/x', 'd/y'].flatMap((k) => made[k]!.map((v) => `${k}@${v}`)));

    for (const delimiter of [null, '/']) {
      for (const maxKeys of [1, 2, 3]) {
        const seen: string[] = [];
        let page = await c().listVersions(b, all({ delimiter, maxKeys }));
        for (let n = 0; ; n++) {
          expect(n).toBeLessThan(20);
          seen.push(...page.versions.map((v) => `${v.key}@${v.versionId}`), ...page.commonPrefixes);
          if (!page.isTruncated) break;
          page = await c().listVersions(b, all({ delimiter, maxKeys, keyMarker: page.nextKeyMarker, versionIdMarker: page.nextVersionIdMarker }));
        }
        const want = delimiter ? [...full.filter((e) => !e.startsWith('d/')), 'd/'] : full;
        expect(seen, `delimiter ${delimiter} max ${maxKeys}`).toEqual(want);
      }
    }
    const latest = (await c().listVersions(b, all({ prefix: 'a' }))).versions.map((v) => v.isLatest);
    expect(latest).toEqual([true, false, false]);
    // A key marker alone skips every version of that key.
    expect((await c().listVersions(b, all({ keyMarker: 'b' }))).versions[0]!.key).toBe('c');
  });
}
