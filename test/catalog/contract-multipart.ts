// Multipart cases of the catalog contract: upload records, parts (a part number uploaded again
// replaces the part and queues the old unit), ListParts paging, atomic completion and abort with
// their garbage, ListMultipartUploads with prefix, delimiter and markers, NoSuchUpload.

import { expect, it } from 'vitest';
import type { CodedUnit } from '../../worker/format/manifest.ts';
import type { PartRecord } from '../../worker/catalog/types.ts';
import type { ListUploadsOptions } from '../../worker/model/object-store.ts';
import { later, type Ctx } from './contract.ts';
import { expectS3, ids, manifest, takeUnitIds, unit } from './fixtures.ts';

const noOptions = { metadata: { user: {} }, checksum: null };

function part(partNumber: number, u: CodedUnit = unit(partNumber)): PartRecord {
  return { partNumber, etag: `"${u.md5}"`, size: u.size, lastModified: new Date(Date.UTC(2025, 1, 1)).toISOString(), units: [u] };
}

export function defineMultipartCases({ c, bucket }: Ctx) {
  it('creates an upload and reads its record back; NoSuchUpload for another key or id', async () => {
    const b = await bucket();
    const metadata = { contentType: 'image/png', user: { a: '1' } };
    const checksum = { algorithm: 'CRC32C' as const, type: 'COMPOSITE' as const };
    const up = await c().insertUpload(b, 'photos/x.png', { metadata, checksum });
    expect(up).toMatchObject({ key: 'photos/x.png', metadata, checksum });
    expect(up.uploadId).toMatch(/\S/);
    expect(up.initiated).toBeInstanceOf(Date);
    expect(await c().getUpload(b, 'photos/x.png', up.uploadId)).toEqual(up);
    await expectS3(c().getUpload(b, 'photos/y.png', up.uploadId), 'NoSuchUpload');
    await expectS3(c().getUpload(b, 'photos/x.png', 'no-such-id'), 'NoSuchUpload');
    await expectS3(c().putPart(b, 'photos/x.png', 'no-such-id', part(1)), 'NoSuchUpload');
    await expectS3(c().listPartRecords(b, 'photos/x.png', 'no-such-id', 0, 10), 'NoSuchUpload');
    await expectS3(c().commitUpload(b, 'photos/x.png', 'no-such-id', manifest(b, 'photos/x.png'), {}), 'NoSuchUpload');
    await expectS3(c().removeUpload(b, 'photos/x.png', 'no-such-id'), 'NoSuchUpload');
  });

  it("preparePart answers the upload's checksum spec and SSE record and reserves the ids; a missing upload reserves nothing", async () => {
    const b = await bucket();
    const checksum = { algorithm: 'CRC32C' as const, type: 'COMPOSITE' as const };
    const sse = { kind: 'c' as const, keyMD5: 'md5', salt: 'salt', fingerprint: 'fp' };
    const { uploadId } = await c().insertUpload(b, 'k', { metadata: { user: {}, sse }, checksum });
    const { uploadId: plain } = await c().insertUpload(b, 'k', noOptions);
    const expires = new Date(Date.now() + 3_600_000);
    expect(await c().preparePart(b, 'k', uploadId, ['p1', 'p2'], expires)).toEqual({ checksum, sse });
    expect(await c().preparePart(b, 'k', plain, ['p3'], expires)).toEqual({ checksum: null, sse: null });
    await expectS3(c().preparePart(b, 'k', 'no-such-id', ['p4'], expires), 'NoSuchUpload');
    await expectS3(c().preparePart(b, 'other', uploadId, ['p5'], expires), 'NoSuchUpload');
    expect((await c().bucketHealth(b, new Date())).reservations.held, 'p1-p3, not the refused ones').toBe(3);
  });

  it('puts parts, replaces a part (queueing its old unit) and pages ListParts', async () => {
    const b = await bucket();
    const { uploadId } = await c().insertUpload(b, 'k', noOptions);
    const parts = new Map([3, 1, 5, 2].map((n) => [n, part(n)]));
    for (const p of parts.values()) await c().putPart(b, 'k', uploadId, p);
    const replacement = part(2);
    await c().putPart(b, 'k', uploadId, replacement);
    await c().putPart(b, 'k', uploadId, replacement); // a retry of the same unit frees nothing
    expect(await takeUnitIds(c(), b, later())).toEqual([parts.get(2)!.units[0]!.unitId]);
    parts.set(2, replacement);
    const first = await c().listPartRecords(b, 'k', uploadId, 0, 2);
    expect(first).toEqual({ parts: [parts.get(1), parts.get(2)], isTruncated: true });
    expect(await c().listPartRecords(b, 'k', uploadId, 2, 2)).toEqual({ parts: [parts.get(3), parts.get(5)], isTruncated: false });
    expect(await c().listPartRecords(b, 'k', uploadId, 5, 2)).toEqual({ parts: [], isTruncated: false });
    expect((await c().listPartRecords(b, 'k', uploadId, 0, 1000)).parts.map((p) => p.partNumber)).toEqual([1, 2, 3, 5]);
  });

  it('completes atomically: object visible, upload gone, unused parts and the old object queued', async () => {
    const b = await bucket();
    const old = unit();
    await c().commitManifest(b, 'k', manifest(b, 'k', [old]), {});
    const { uploadId } = await c().insertUpload(b, 'k', noOptions);
    const [p1, p2, p3] = [part(1), part(2), part(3)];
    for (const p of [p1, p2, p3]) await c().putPart(b, 'k', uploadId, p);
    const done = { ...manifest(b, 'k', [p1.units[0]!, p3.units[0]!], '"abc-2"'), partsCount: 2 };
    await expectS3(c().commitUpload(b, 'k', uploadId, done, { ifNoneMatch: '*' }), 'PreconditionFailed');
    expect(await c().getUpload(b, 'k', uploadId)).toMatchObject({ uploadId }); // a failed completion changes nothing
    await c().commitUpload(b, 'k', uploadId, done, {});
    expect(await c().getManifest(b, 'k')).toEqual(done);
    await expectS3(c().getUpload(b, 'k', uploadId), 'NoSuchUpload');
    await expectS3(c().commitUpload(b, 'k', uploadId, done, {}), 'NoSuchUpload');
    expect((await c().listUploadRecords(b, { prefix: '', delimiter: null, keyMarker: null, uploadIdMarker: null, maxUploads: 10 })).uploads).toEqual([]);
    expect(await takeUnitIds(c(), b, later())).toEqual(ids([old, p2.units[0]!]));
  });

  it('remembers a completed upload for its key: result for a repeated Complete, nothing for other keys or ids', async () => {
    const b = await bucket();
    const { uploadId } = await c().insertUpload(b, 'k', noOptions);
    const p1 = part(1);
    await c().putPart(b, 'k', uploadId, p1);
    expect(await c().getCompletedUpload(b, 'k', uploadId)).toBeNull(); // not completed yet
    const done = { ...manifest(b, 'k', [p1.units[0]!], '"abc-1"'), partsCount: 1 };
    await c().commitUpload(b, 'k', uploadId, done, {});
    expect(await c().getCompletedUpload(b, 'k', uploadId)).toEqual({
      key: 'k',
      etag: '"abc-1"',
      checksum: done.checksum,
      size: done.size,
      lastModified: done.lastModified,
    });
    expect(await c().getCompletedUpload(b, 'other', uploadId)).toBeNull();
    expect(await c().getCompletedUpload(b, 'k', 'no-such-id')).toBeNull();
    await c().commitManifest(b, 'k', manifest(b, 'k', [unit()], '"overwritten"'), {});
    expect((await c().getCompletedUpload(b, 'k', uploadId))?.etag, 'the completion, not the current object').toBe('"abc-1"');
    const aborted = await c().insertUpload(b, 'k', noOptions);
    await c().removeUpload(b, 'k', aborted.uploadId);
    expect(await c().getCompletedUpload(b, 'k', aborted.uploadId)).toBeNull();
    await expectS3(c().getCompletedUpload(`${b}-none`, 'k', uploadId), 'NoSuchBucket');
  });

  it('refuses to complete with a unit that is no longer a part (replaced meanwhile)', async () => {
    const b = await bucket();
    const { uploadId } = await c().insertUpload(b, 'k', noOptions);
    const stale = part(1);
    await c().putPart(b, 'k', uploadId, stale);
    await c().putPart(b, 'k', uploadId, part(1));
    await expectS3(c().commitUpload(b, 'k', uploadId, manifest(b, 'k', [stale.units[0]!]), {}), 'InvalidPart');
    expect(await c().getManifest(b, 'k')).toBeNull();
  });

  it('aborts an upload: NoSuchUpload afterwards, its parts queued', async () => {
    const b = await bucket();
    const { uploadId } = await c().insertUpload(b, 'k', noOptions);
    const [p1, p2] = [part(1), part(2)];
    await c().putPart(b, 'k', uploadId, p1);
    await c().putPart(b, 'k', uploadId, p2);
    await c().removeUpload(b, 'k', uploadId);
    await expectS3(c().getUpload(b, 'k', uploadId), 'NoSuchUpload');
    await expectS3(c().removeUpload(b, 'k', uploadId), 'NoSuchUpload');
    await expectS3(c().putPart(b, 'k', uploadId, part(3)), 'NoSuchUpload');
    expect(await takeUnitIds(c(), b, later())).toEqual(ids([p1.units[0]!, p2.units[0]!]));
  });

  it('lists uploads by key then initiation, with prefix, delimiter and markers', async () => {
    const b = await bucket();
    const made: { key: string; uploadId: string }[] = [];
    for (const key of ['b', 'a/1', 'c', 'a/2', 'b', 'a/1', '\u{1F600}', '\uFFFD']) made.push(await c().insertUpload(b, key, noOptions));
    const list = (o: Partial<ListUploadsOptions>) =>
      c().listUploadRecords(b, { prefix: '', delimiter: null, keyMarker: null, uploadIdMarker: null, maxUploads: 1000, ...o });
    const all = await list({});
    expect(all.uploads.map((u) => u.key)).toEqual(['a/1', 'a/1', 'a/2', 'b', 'b', 'c', '\uFFFD', '\u{1F600}']);
    expect(all.isTruncated).toBe(false);
    for (let i = 1; i < all.uploads.length; i++) {
      const [p, u] = [all.uploads[i - 1], all.uploads[i]];
      if (p.key === u.key) expect(p.initiated.getTime()).toBeLessThanOrEqual(u.initiated.getTime());
    }
    expect(new Set(all.uploads.map((u) => u.uploadId))).toEqual(new Set(made.map((u) => u.uploadId)));

    // Paging one at a time by the next markers visits every upload once, in order.
    const paged: string[] = [];
    let markers = { keyMarker: null as string | null, uploadIdMarker: null as string | null };
    for (let i = 0; i < 20; i++) {
      const r = await list({ ...markers, maxUploads: 1 });
      paged.push(...r.uploads.map((u) => u.uploadId));
      if (!r.isTruncated) break;
      markers = { keyMarker: r.nextKeyMarker, uploadIdMarker: r.nextUploadIdMarker };
    }
    expect(paged).toEqual(all.uploads.map((u) => u.uploadId));

    const rolled = await list({ delimiter: '/' });
    expect(rolled.commonPrefixes).toEqual(['a/']);
    expect(rolled.uploads.map((u) => u.key)).toEqual(['b', 'b', 'c', '\uFFFD', '\u{1F600}']);
    const small = await list({ delimiter: '/', maxUploads: 2 });
    expect(small).toMatchObject({ commonPrefixes: ['a/'], isTruncated: true, nextKeyMarker: 'b', nextUploadIdMarker: all.uploads[3].uploadId });
    expect((await list({ delimiter: '/', keyMarker: 'a/' })).commonPrefixes).toEqual([]);
    expect((await list({ prefix: 'a/' })).uploads.map((u) => u.key)).toEqual(['a/1', 'a/1', 'a/2']);
    expect((await list({ keyMarker: 'b' })).uploads.map((u) => u.key)).toEqual(['c', '\uFFFD', '\u{1F600}']);
    const afterFirstB = await list({ keyMarker: 'b', uploadIdMarker: all.uploads[3].uploadId });
    expect(afterFirstB.uploads.map((u) => u.uploadId)).toEqual(all.uploads.slice(4).map((u) => u.uploadId));
    expect(await list({ maxUploads: 0 })).toMatchObject({ uploads: [], commonPrefixes: [], isTruncated: false });
  });
}
