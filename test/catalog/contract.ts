// The behavioural contract of worker/catalog/types.ts, as one suite run against every Catalog
// (hono's router/common.case.test.ts style): the product's CatalogObject over SQLite in wasm in
// Node (sql-node.test.ts), DurableCatalog over the real Durable Object in workerd.
// One catalog serves the whole suite; every test works in its own fresh bucket, and garbage is
// always filtered by bucket, because takeDueGarbage is catalog-wide.

import { beforeAll, describe, expect, it } from 'vitest';
import type { CatalogOptions } from '../../worker/catalog/rules.ts';
import type { Catalog } from '../../worker/catalog/ports.ts';
import { defineDeleteConditionCases } from './contract-delete-conditions.ts';
import { defineExpirationCases } from './contract-expiration.ts';
import { defineHealthCases } from './contract-health.ts';
import { defineQuotaCases } from './contract-quota.ts';
import { defineListingCases } from './contract-listing.ts';
import { defineMultipartCases } from './contract-multipart.ts';
import { defineVersionCases } from './contract-versions.ts';
import { byUtf8, expectS3, ids, inlineManifest, manifest, takeReservedIds, takeUnitIds, unit } from './fixtures.ts';

/** The grace delay the suite configures; "later" is safely past it, "now" safely before it. */
export const GRACE_MS = 60_000;
export const later = () => new Date(Date.now() + GRACE_MS + 60_000);

export interface Ctx {
  c: () => Catalog;
  /** A bucket of its own for one test (created). */
  bucket: () => Promise<string>;
  /** The buckets of this run are split into partitions (what only that changes is said where asked). */
  split: boolean;
  /** Partitions split on line as the cases run (their layout is not known in advance). */
  online: boolean;
}

/**
 * `split`: every bucket of the suite is cut into partitions at these keys as soon as it is made
 * (Catalog.splitBucketStatically), so the same cases hold a partitioned catalog to the contract;
 * `online`: partitions split on line as the cases run (a case whose figures assume a layout skips).
 */
export function runCatalogContract(
  name: string,
  makeCatalog: (options: CatalogOptions) => Catalog | Promise<Catalog>,
  variant: { split?: string[]; online?: true } = {},
): void {
  describe(`Catalog contract: ${name}`, () => {
    let catalog: Catalog;
    const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    let n = 0;
    const ctx: Ctx = {
      c: () => catalog,
      split: variant.split !== undefined,
      online: variant.online === true,
      bucket: async () => {
        const b = `cat-${run}-${++n}`;
        await catalog.insertBucket(b, 'auto');
        if (variant.split) await catalog.splitBucketStatically(b, variant.split);
        return b;
      },
    };
    beforeAll(async () => {
      catalog = await makeCatalog({ garbageGraceMs: GRACE_MS });
    });

    defineBucketCases(ctx);
    defineObjectCases(ctx);
    defineGarbageCases(ctx);
    defineListingCases(ctx);
    defineMultipartCases(ctx);
    defineHealthCases(ctx);
    defineQuotaCases(ctx);
    defineVersionCases(ctx);
    defineExpirationCases(ctx);
    defineDeleteConditionCases(ctx);
  });
}

function defineBucketCases({ c, bucket }: Ctx) {
  it('creates, heads, lists and deletes a bucket', async () => {
    const b = await bucket();
    const info = await c().getBucket(b);
    expect(info).toMatchObject({ name: b, region: 'auto' });
    expect(info.creationDate).toBeInstanceOf(Date);
    expect((await c().listBucketRecords()).map((x) => x.name)).toContain(b);
    await expectS3(c().insertBucket(b, 'auto'), 'BucketAlreadyOwnedByYou');
    await c().removeBucket(b);
    await expectS3(c().getBucket(b), 'NoSuchBucket');
    expect((await c().listBucketRecords()).map((x) => x.name)).not.toContain(b);
    await expectS3(c().removeBucket(b), 'NoSuchBucket');
  });

  it('lists buckets in UTF-8 order of their names', async () => {
    const [b1, b2] = [await bucket(), await bucket()];
    const names = (await c().listBucketRecords()).map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining([b1, b2]));
    expect(names).toEqual([...names].sort(byUtf8));
  });

  it('refuses to delete a bucket holding an object or an upload', async () => {
    const b = await bucket();
    await c().commitManifest(b, 'k', manifest(b, 'k'), {});
    await expectS3(c().removeBucket(b), 'BucketNotEmpty');
    await c().removeManifest(b, 'k');
    const up = await c().insertUpload(b, 'u', { metadata: { user: {} }, checksum: null });
    await expectS3(c().removeBucket(b), 'BucketNotEmpty');
    expect(await c().getBucket(b)).toMatchObject({ name: b });
    await c().removeUpload(b, 'u', up.uploadId);
    await c().removeBucket(b);
  });

  it('answers NoSuchBucket for object and upload calls on a missing bucket', async () => {
    const b = `cat-missing-${Math.random().toString(36).slice(2)}`;
    await expectS3(c().getManifest(b, 'k'), 'NoSuchBucket');
    await expectS3(c().commitManifest(b, 'k', manifest(b, 'k'), {}), 'NoSuchBucket');
    await expectS3(c().removeManifest(b, 'k'), 'NoSuchBucket');
    await expectS3(c().listManifests(b, { prefix: '', delimiter: null, startAfter: null, maxKeys: 10 }), 'NoSuchBucket');
    await expectS3(c().insertUpload(b, 'k', { metadata: { user: {} }, checksum: null }), 'NoSuchBucket');
    await expectS3(c().listUploadRecords(b, { prefix: '', delimiter: null, keyMarker: null, uploadIdMarker: null, maxUploads: 10 }), 'NoSuchBucket');
  });

  it("stores, replaces and removes a bucket's CORS rules", async () => {
    const b = await bucket();
    expect(await c().getBucketCors(b)).toBeNull();
    const rules = [
      {
        id: 'web',
        allowedOrigins: ['https://*.example'],
        allowedMethods: ['GET' as const, 'PUT' as const],
        allowedHeaders: ['*'],
        exposeHeaders: ['ETag'],
        maxAgeSeconds: 60,
      },
    ];
    await c().setBucketCors(b, rules);
    expect(await c().getBucketCors(b)).toEqual(rules);
    await c().setBucketCors(b, [{ allowedOrigins: ['*'], allowedMethods: ['HEAD'], allowedHeaders: [], exposeHeaders: [] }]);
    expect(await c().getBucketCors(b)).toHaveLength(1);
    await c().setBucketCors(b, null);
    expect(await c().getBucketCors(b)).toBeNull();
    await expectS3(c().getBucketCors(`${b}-none`), 'NoSuchBucket');
    await expectS3(c().setBucketCors(`${b}-none`, rules), 'NoSuchBucket');
  });

  it('re-creates a deleted bucket empty, and keeps the garbage the deleted one left', async () => {
    const b = await bucket();
    const [u1, u2] = [unit(), unit()];
    await c().commitManifest(b, 'k', manifest(b, 'k', [u1]), {});
    await c().commitManifest(b, 'k', manifest(b, 'k', [u2]), {});
    await c().removeManifest(b, 'k');
    await c().removeBucket(b);
    await expectS3(c().getManifest(b, 'k'), 'NoSuchBucket');
    await c().insertBucket(b, 'eu');
    expect(await c().getBucket(b)).toMatchObject({ name: b, region: 'eu' });
    expect(await c().getManifest(b, 'k')).toBeNull();
    expect((await c().listManifests(b, { prefix: '', delimiter: null, startAfter: null, maxKeys: 10 })).objects).toEqual([]);
    expect(await takeUnitIds(c(), b, later())).toEqual(ids([u1, u2]));
  });
}

function defineObjectCases({ c, bucket }: Ctx) {
  it('commits, gets and deletes an object', async () => {
    const b = await bucket();
    expect(await c().getManifest(b, 'a/b')).toBeNull();
    const m = manifest(b, 'a/b');
    await c().commitManifest(b, 'a/b', m, {});
    const got = await c().getManifest(b, 'a/b');
    expect(got).toEqual(m);
    got!.etag = '"changed"'; // callers get copies
    expect((await c().getManifest(b, 'a/b'))!.etag).toBe(m.etag);
    await c().removeManifest(b, 'a/b');
    expect(await c().getManifest(b, 'a/b')).toBeNull();
    await c().removeManifest(b, 'a/b'); // absent: no error
  });

  it('If-None-Match * installs only when the key is absent (412 otherwise)', async () => {
    const b = await bucket();
    const first = manifest(b, 'k');
    await c().commitManifest(b, 'k', first, { ifNoneMatch: '*' });
    const err = await expectS3(c().commitManifest(b, 'k', manifest(b, 'k'), { ifNoneMatch: '*' }), 'PreconditionFailed');
    expect(err.status).toBe(412);
    expect(await c().getManifest(b, 'k')).toEqual(first);
  });

  it('If-Match: NoSuchKey when absent, 412 on mismatch, installs on a match (quoted or not)', async () => {
    const b = await bucket();
    await expectS3(c().commitManifest(b, 'k', manifest(b, 'k'), { ifMatch: '"abc"' }), 'NoSuchKey');
    const m1 = manifest(b, 'k', [unit()], '"etag-one"');
    await c().commitManifest(b, 'k', m1, {});
    await expectS3(c().commitManifest(b, 'k', manifest(b, 'k'), { ifMatch: '"etag-other"' }), 'PreconditionFailed');
    expect(await c().getManifest(b, 'k')).toEqual(m1);
    const m2 = manifest(b, 'k', [unit()], '"etag-two"');
    await c().commitManifest(b, 'k', m2, { ifMatch: 'etag-one' });
    expect(await c().getManifest(b, 'k')).toEqual(m2);
    const m3 = manifest(b, 'k');
    await c().commitManifest(b, 'k', m3, { ifMatch: '"nope", "etag-two"' });
    expect(await c().getManifest(b, 'k')).toEqual(m3);
  });

  it('deletes conditionally: 412 on mismatch keeps the object, a match removes it', async () => {
    const b = await bucket();
    await expectS3(c().removeManifest(b, 'k', { ifMatch: '"x"' }), 'NoSuchKey');
    const m = manifest(b, 'k', [unit()], '"e1"');
    await c().commitManifest(b, 'k', m, {});
    await expectS3(c().removeManifest(b, 'k', { ifMatch: '"e2"' }), 'PreconditionFailed');
    expect(await c().getManifest(b, 'k')).toEqual(m);
    await c().removeManifest(b, 'k', { ifMatch: '"e1"' });
    expect(await c().getManifest(b, 'k')).toBeNull();
  });

  it('lets exactly one of two concurrent If-None-Match * commits win', async () => {
    const b = await bucket();
    const [m1, m2] = [manifest(b, 'race'), manifest(b, 'race')];
    const results = await Promise.allSettled([
      c().commitManifest(b, 'race', m1, { ifNoneMatch: '*' }),
      c().commitManifest(b, 'race', m2, { ifNoneMatch: '*' }),
    ]);
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [[m1, m2][i]] : []));
    expect(won).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toMatchObject({ code: 'PreconditionFailed' });
    expect(await c().getManifest(b, 'race')).toEqual(won[0]);
  });

  it('lets exactly one of several concurrent If-Match commits on one ETag win (compare-and-swap)', async () => {
    const b = await bucket();
    await c().commitManifest(b, 'cas', manifest(b, 'cas', [unit()], '"base"'), {});
    const next = [1, 2, 3, 4].map(() => manifest(b, 'cas'));
    const results = await Promise.allSettled(next.map((m) => c().commitManifest(b, 'cas', m, { ifMatch: '"base"' })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'PreconditionFailed' });
    expect(await c().getManifest(b, 'cas')).toEqual(next[results.findIndex((r) => r.status === 'fulfilled')]);
  });
}

function defineGarbageCases({ c, bucket }: Ctx) {
  it('queues superseded and deleted units only after the grace delay', async () => {
    const b = await bucket();
    const [u1, u2, u3] = [unit(), unit(), unit()];
    await c().commitManifest(b, 'k', manifest(b, 'k', [u1, u2]), {});
    await c().commitManifest(b, 'k', manifest(b, 'k', [u3]), {});
    await c().commitManifest(b, 'inline', inlineManifest(b, 'inline'), {});
    await c().commitManifest(b, 'inline', inlineManifest(b, 'inline'), {}); // nothing to delete
    expect(await takeUnitIds(c(), b, new Date())).toEqual([]); // still readable by in-flight GETs
    expect(await takeUnitIds(c(), b, later())).toEqual(ids([u1, u2]));
    expect(await takeUnitIds(c(), b, later())).toEqual([]); // taken means removed
    await c().removeManifest(b, 'k');
    expect(await takeUnitIds(c(), b, later())).toEqual(ids([u3]));
  });

  it('names the units held for deletion or reserved (what a rebuild must not restore)', async () => {
    const b = await bucket();
    const [old, current, deleted, reserved] = [unit(), unit(), unit(), unit()];
    await c().commitManifest(b, 'k', manifest(b, 'k', [old]), {});
    await c().commitManifest(b, 'k', manifest(b, 'k', [current]), {});
    await c().commitManifest(b, 'gone', manifest(b, 'gone', [deleted]), {});
    await c().removeManifest(b, 'gone');
    await c().reserveUnits(b, [reserved.unitId], later(), 'k');
    expect((await c().pendingUnitIds(b)).sort()).toEqual(ids([old, deleted, reserved]).sort());
    await takeUnitIds(c(), b, later()); // collected: nothing of them is held any more
    expect(await c().pendingUnitIds(b)).toEqual([]);
    await expectS3(c().pendingUnitIds(`${b}-none`), 'NoSuchBucket');
  });

  it('a tag change marks the unit that carries the tag record, and the mark goes to the collector with it', async () => {
    const b = await bucket();
    const [first, second, part1, part2] = [unit(), unit(), unit(1), unit(2)];
    const tags = [{ key: 'env', value: 'test' }];
    await c().commitManifest(b, 'segmented', manifest(b, 'segmented', [first, second]), {});
    await c().commitManifest(b, 'inline', inlineManifest(b, 'inline'), {});
    await c().commitManifest(b, 'multipart', { ...manifest(b, 'multipart', [part1, part2]), partsCount: 2 }, {});
    const marked = await c().setObjectTags(b, 'segmented', tags);
    expect(marked).toMatchObject({ unitId: first.unitId, placement: first.placement, tagRecord: true });
    const stored = (await c().getManifest(b, 'segmented'))!;
    expect(stored.metadata.tags).toEqual(tags);
    expect(stored.storage.kind === 'coded' && stored.storage.units.map((u) => u.tagRecord ?? false)).toEqual([true, false]);
    expect(await c().setObjectTags(b, 'inline', tags), 'inline: no shards, no record').toBeNull();
    expect(await c().setObjectTags(b, 'multipart', tags), 'multipart: a rebuild cannot restore it').toBeNull();
    await expectS3(c().setObjectTags(b, 'none', tags), 'NoSuchKey');
    await c().removeManifest(b, 'segmented');
    const taken = (await c().takeDueGarbage(later(), 100_000)).filter((g) => g.bucket === b).flatMap((g) => g.units);
    expect(taken.find((u) => u.unitId === first.unitId)?.tagRecord).toBe(true);
  });

  it('takes queued garbage when due, at most `limit` entries, each once', async () => {
    const b = await bucket();
    const due = new Date(Date.UTC(1971, 0, 1)); // before anything the other tests queue
    const [u1, u2, u3] = [unit(), unit(), unit()];
    await c().queueGarbage({ bucket: b, units: [u1] }, due);
    await c().queueGarbage({ bucket: b, units: [u2, u3] }, due);
    expect(await c().takeDueGarbage(new Date(due.getTime() - 1), 10)).toEqual([]);
    const first = await c().takeDueGarbage(due, 1);
    expect(first).toHaveLength(1);
    const rest = await c().takeDueGarbage(due, 10);
    expect(rest).toHaveLength(1);
    expect([...first, ...rest].flatMap((g) => g.units.map((u) => u.unitId)).sort()).toEqual(ids([u1, u2, u3]));
    expect([...first, ...rest].every((g) => g.bucket === b)).toBe(true);
    expect(await c().takeDueGarbage(due, 10)).toEqual([]);
  });

  it("takes repaired shards off a unit's missing list, by unit id, and ignores units no longer stored", async () => {
    const b = await bucket();
    const [u1, u2] = [{ ...unit(), missing: [1, 3] }, unit()];
    await c().commitManifest(b, 'k', manifest(b, 'k', [u1, u2]), {});
    await c().markRepaired(b, u1.unitId, [3], 'k');
    const after = await c().getManifest(b, 'k');
    expect(after?.storage.kind === 'coded' && after.storage.units.map((u) => u.missing)).toEqual([[1], u2.missing]);
    await c().markRepaired(b, unit().unitId, [1], 'k'); // a unit never stored (or overwritten): nothing to do
    expect(await c().getManifest(b, 'k')).toEqual(after);
    await expectS3(c().markRepaired(`${b}-none`, u1.unitId, [1], 'k'), 'NoSuchBucket');
  });

  it('indexes every unit of a stored version: by id, in id order, gone when the version is replaced or deleted', async () => {
    const b = await bucket();
    const [u1, u2, u3] = [unit(), unit(), unit()];
    const m = manifest(b, 'k', [u1, u2]);
    await c().commitManifest(b, 'k', m, {});
    await c().commitManifest(b, 'j', manifest(b, 'j', [u3]), {});
    expect(await c().getUnit(b, u2.unitId, 'k')).toEqual({ unitId: u2.unitId, key: 'k', versionId: m.versionId, ordinal: 1, unit: u2 });
    const all = await c().listUnits(b, null, 10);
    expect(all.map((u) => u.unitId)).toEqual([u1, u2, u3].map((u) => u.unitId).sort());
    expect((await c().listUnits(b, all[0]!.unitId, 1)).map((u) => u.unitId)).toEqual([all[1]!.unitId]);
    await c().commitManifest(b, 'k', manifest(b, 'k', [unit()]), {}); // overwrite: u1 and u2 leave the index
    expect(await c().getUnit(b, u1.unitId, 'k')).toBeNull();
    await c().removeManifest(b, 'j');
    expect(await c().getUnit(b, u3.unitId, 'j')).toBeNull();
    expect(await c().listUnits(b, null, 10)).toHaveLength(1);
    await expectS3(c().getUnit(`${b}-none`, u1.unitId, 'k'), 'NoSuchBucket');
  });

  it('records a unit found damaged by its id, whichever key holds it', async () => {
    const b = await bucket();
    const [u1, u2] = [unit(), unit()];
    await c().commitManifest(b, 'k', manifest(b, 'k', [u1, u2]), {});
    await c().markMissing(b, u2.unitId, [0, 2], 'k');
    const m = await c().getManifest(b, 'k');
    expect(m?.storage.kind === 'coded' && m.storage.units.map((u) => u.missing)).toEqual([[], [0, 2]]);
    expect((await c().getUnit(b, u2.unitId, 'k'))?.unit.missing).toEqual([0, 2]);
    await c().markMissing(b, unit().unitId, [1], 'k'); // not stored: nothing happens
    expect(await c().getManifest(b, 'k')).toEqual(m);
  });

  it("keeps the scrubber's cursor per bucket, and counts coverage in units checked", async () => {
    const [b1, b2] = [await bucket(), await bucket()];
    const units = [unit(), unit(), unit()];
    await c().commitManifest(b1, 'k', manifest(b1, 'k', units), {});
    const ids = (await c().listUnits(b1, null, 10)).map((u) => u.unitId);
    expect(await c().getScrubCursor(b1)).toBeNull();
    expect((await c().bucketHealth(b1, new Date())).scrub).toMatchObject({ units: 3, checked: 0, passStartedAt: null, passes: 0 });
    await c().recordScrub(b1, ids.slice(0, 2), { afterUnit: ids[1]! });
    expect(await c().getScrubCursor(b1)).toEqual({ afterUnit: ids[1] });
    const mid = (await c().bucketHealth(b1, new Date())).scrub;
    expect(mid).toMatchObject({ units: 3, checked: 2, passes: 0 });
    expect(mid.passStartedAt).not.toBeNull();
    expect(mid.oldestUnchecked?.unitId).toBe(ids[2]);
    expect(await c().getScrubCursor(b2)).toBeNull();
    await c().recordScrub(b1, ids.slice(2), null);
    expect(await c().getScrubCursor(b1)).toBeNull();
    expect((await c().bucketHealth(b1, new Date())).scrub).toMatchObject({ units: 3, checked: 3, passStartedAt: null, passes: 1 });
    // A unit written after the pass is unchecked: coverage drops below 100% until it is checked.
    await c().commitManifest(b1, 'later', manifest(b1, 'later', [unit()]), {});
    expect((await c().bucketHealth(b1, new Date())).scrub).toMatchObject({ units: 4, checked: 3 });
    await expectS3(c().getScrubCursor(`${b1}-none`), 'NoSuchBucket');
  });

  it('hands reservations to the collector at expiry unless a commit or a part released them', async () => {
    const b = await bucket();
    const expires = new Date(Date.now() + 5 * 60_000);
    const [committed, part, abandoned, replaced] = [unit(), unit(1), unit(), unit()];
    const refused = unit();
    await c().reserveUnits(
      b,
      [committed, abandoned, replaced, refused].map((u) => u.unitId),
      expires,
      'k',
    );
    await c().reserveUnits(b, [part.unitId], expires, 'mp'); // reserved under the key it is written to
    await c().releaseUnits(b, [refused.unitId, unit().unitId], 'k'); // refused before any shard; an unknown id is fine
    await c().commitManifest(b, 'k', manifest(b, 'k', [committed]), {});
    const upload = await c().insertUpload(b, 'mp', { metadata: { user: {} }, checksum: null });
    await c().putPart(b, 'mp', upload.uploadId, { partNumber: 1, etag: '"e"', size: 1, lastModified: new Date().toISOString(), units: [part] });
    expect(await takeReservedIds(c(), b, new Date(expires.getTime() - 1))).toEqual([]); // the write may still be running
    expect(await takeReservedIds(c(), b, expires)).toEqual(ids([abandoned, replaced]));
    expect(await takeReservedIds(c(), b, later())).toEqual([]); // taken means removed
    await expectS3(c().reserveUnits(`${b}-none`, [unit().unitId], expires, 'k'), 'NoSuchBucket');
  });

  it('keeps the reservations of a deleted bucket for the collector', async () => {
    const b = await bucket();
    const u = unit();
    const expires = new Date(Date.UTC(1973, 0, 1));
    await c().reserveUnits(b, [u.unitId], expires, 'k');
    await c().removeBucket(b);
    expect(await takeReservedIds(c(), b, expires)).toEqual([u.unitId]);
  });

  it('keeps garbage queued for a bucket that no longer exists', async () => {
    const b = `cat-gone-${Math.random().toString(36).slice(2)}`;
    const u = unit();
    await c().queueGarbage({ bucket: b, units: [u] }, new Date(Date.UTC(1972, 0, 1)));
    expect(await takeUnitIds(c(), b, new Date(Date.UTC(1972, 0, 1)))).toEqual([u.unitId]);
  });
}
