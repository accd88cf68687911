// Conditional deletes in the catalog's delete step (contract.ts runs them against every Catalog):
// If-Match, the last-modified time and the size, checked against the version named or the current
// version in the same call that deletes; a mismatch changes nothing (model/conditions.ts
// checkDeleteConditions says whose rules).

import { expect, it } from 'vitest';
import type { ObjectManifest } from '../../worker/format/manifest.ts';
import type { Ctx } from './contract.ts';
import { expectS3, manifest, unit } from './fixtures.ts';

const versionsOf = async (ctx: Ctx, b: string) =>
  (await ctx.c().listVersions(b, { prefix: '', delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 1000 })).versions.map(
    (v) => `${v.versionId}${v.deleteMarker ? ':marker' : ''}`,
  );

/** A manifest of `size` bytes (one unit) modified at `at`. */
function sized(b: string, key: string, etag: string, size: number, at: Date): ObjectManifest {
  const m = manifest(b, key, [{ ...unit(), size }], etag);
  return { ...m, lastModified: at.toISOString() };
}

export function defineDeleteConditionCases(ctx: Ctx) {
  const { c, bucket } = ctx;
  const at = new Date(Date.UTC(2026, 5, 1, 12, 0, 0, 250));

  it('a version named: a mismatch of ETag, time or size keeps it (412), a match removes it', async () => {
    const b = await bucket();
    await c().setVersioning(b, 'Enabled');
    const m = sized(b, 'k', '"e1"', 7, at);
    const { versionId } = await c().commitManifest(b, 'k', m, {});
    await c().commitManifest(b, 'k', sized(b, 'k', '"e2"', 9, at), {}); // the named one is not current
    for (const bad of [{ ifMatch: '"e2"' }, { lastModifiedTime: at.getTime() - 1000 }, { size: 9 }, { ifMatch: '"e1"', size: 8 }]) {
      const err = await expectS3(c().removeManifest(b, 'k', bad, versionId), 'PreconditionFailed');
      expect(err.fields.Condition).toBe('size' in bad ? 'x-amz-if-match-size' : 'ifMatch' in bad ? 'If-Match' : 'x-amz-if-match-last-modified-time');
      expect(await c().getVersion(b, 'k', versionId!)).toEqual({ kind: 'object', manifest: m, versionId });
    }
    // One-second resolution (Last-Modified shows seconds), unquoted ETag, `*`, all three at once.
    expect(await c().removeManifest(b, 'k', { ifMatch: 'e1', lastModifiedTime: Date.UTC(2026, 5, 1, 12, 0, 0), size: 7 }, versionId)).toEqual({ versionId });
    expect(await c().getVersion(b, 'k', versionId!)).toEqual({ kind: 'none' });
    // Gone: nothing to delete and no error, whatever the condition (as an unconditional delete of it).
    expect(await c().removeManifest(b, 'k', { ifMatch: '"other"', size: 1 }, versionId)).toEqual({ versionId });
    const { versionId: v3 } = await c().commitManifest(b, 'k', sized(b, 'k', '"e3"', 0, at), {});
    expect(await c().removeManifest(b, 'k', { ifMatch: '*' }, v3)).toEqual({ versionId: v3 });
  });

  it("a delete marker named holds no condition; without a version the conditions are the current object's", async () => {
    const b = await bucket();
    await c().setVersioning(b, 'Enabled');
    const m = sized(b, 'k', '"e1"', 3, at);
    await c().commitManifest(b, 'k', m, {});
    await expectS3(c().removeManifest(b, 'k', { ifMatch: '"e0"' }), 'PreconditionFailed');
    await expectS3(c().removeManifest(b, 'k', { size: 4 }), 'PreconditionFailed');
    expect(await versionsOf(ctx, b)).toEqual([m.versionId]); // no marker added
    const marker = await c().removeManifest(b, 'k', { ifMatch: '"e1"', size: 3 });
    expect(marker.deleteMarker).toBe(true);
    // The current version is now a marker: no current object, NoSuchKey, nothing added.
    await expectS3(c().removeManifest(b, 'k', { ifMatch: '*' }), 'NoSuchKey');
    await expectS3(c().removeManifest(b, 'k', { size: 3 }), 'NoSuchKey');
    await expectS3(c().removeManifest(b, 'k', { ifMatch: '*' }, marker.versionId), 'PreconditionFailed');
    expect(await versionsOf(ctx, b)).toEqual([`${marker.versionId}:marker`, m.versionId]);
    // Unconditional, the marker may go, and the object is current again.
    await c().removeManifest(b, 'k', undefined, marker.versionId);
    expect(await c().getManifest(b, 'k')).toEqual(m);
  });

  it('a bucket never versioned: conditions on the key; absent with a condition is NoSuchKey', async () => {
    const b = await bucket();
    await expectS3(c().removeManifest(b, 'k', { size: 0 }), 'NoSuchKey');
    await expectS3(c().removeManifest(b, 'k', { lastModifiedTime: at.getTime() }), 'NoSuchKey');
    const m = sized(b, 'k', '"e1"', 5, at);
    await c().commitManifest(b, 'k', m, {});
    await expectS3(c().removeManifest(b, 'k', { lastModifiedTime: at.getTime() + 1000 }), 'PreconditionFailed');
    await expectS3(c().removeManifest(b, 'k', { ifMatch: '"e1"', size: 6 }), 'PreconditionFailed');
    expect(await c().getManifest(b, 'k')).toEqual(m);
    expect(await c().removeManifest(b, 'k', { ifMatch: '"e1"', lastModifiedTime: at.getTime(), size: 5 })).toEqual({});
    expect(await c().getManifest(b, 'k')).toBeNull();
  });

  it('the check and the delete are one step: a conditional delete racing overwrites never removes a newer object', async () => {
    const b = await bucket();
    let current = sized(b, 'k', '"gen-0"', 1, at);
    await c().commitManifest(b, 'k', current, {});
    for (let i = 1; i <= 20; i++) {
      const next = sized(b, 'k', `"gen-${i}"`, 1, at);
      // Issued together, in both orders (a check made by a call of its own would let the
      // overwrite in between it and the delete, when the delete goes first): the delete names the older ETag.
      const put = () => c().commitManifest(b, 'k', next, {});
      const remove = () => c().removeManifest(b, 'k', { ifMatch: current.etag });
      const removeFirst = i % 2 === 0;
      const removing = removeFirst ? remove() : undefined;
      const putting = put();
      const [putDone, del] = await Promise.allSettled([putting, removing ?? remove()]);
      expect(putDone.status).toBe('fulfilled');
      if (del.status === 'rejected') expect((del.reason as { code: string }).code).toBe('PreconditionFailed');
      // The overwrite survives whichever came first: deleted-then-written, or 412.
      expect((await c().getManifest(b, 'k'))?.etag).toBe(next.etag);
      current = next;
    }
  });
}
