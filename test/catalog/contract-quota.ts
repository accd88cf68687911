// Bucket quotas and usage in the catalog contract (issue 45; catalog/quota.ts): the quota kept as
// a root setting (and copied to a split bucket's partitions, each with its share), usage counted
// over every version and partition, and a write past the quota refused inside its first call.
// Run against both catalogs, whole and split, by contract.ts.

import { expect, it } from 'vitest';
import type { Ctx } from './contract.ts';
import { later } from './contract.ts';
import { expectS3, inlineManifest, manifest } from './fixtures.ts';
import { setQuota } from '../../worker/catalog/quota-set.ts';

export function defineQuotaCases({ c, bucket, split, online }: Ctx) {
  // Its figures are per partition of a layout known in advance; shares cut by splits on line: partition-split.test.ts.
  it.skipIf(online)('keeps a quota, counts usage over every version, refuses a write past it in its first call', async () => {
    const b = await bucket();
    expect(await c().getBucketQuota(b)).toBeNull();
    await c().setVersioning(b, 'Enabled');
    await c().commitManifest(b, 'a', manifest(b, 'a'), {}); // 100 bytes
    await c().commitManifest(b, 'a', manifest(b, 'a'), {});
    await c().removeManifest(b, 'a'); // a delete marker: neither bytes nor an object
    await c().commitManifest(b, 'x/1', inlineManifest(b, 'x/1'), {}); // 2 bytes
    const upload = await c().insertUpload(b, 'k', { metadata: { user: {} }, checksum: null });
    const usage = await c().bucketUsage(b);
    expect(usage).toMatchObject({
      bytes: 202,
      objects: 3,
      versions: 4,
      deleteMarkers: 1,
      currentObjects: 1,
      inlineBytes: 2,
      multipartBytes: 0,
      uploads: 1,
      quota: null,
    });
    expect(usage.partitions === undefined).toBe(!split);

    const q = await setQuota(c(), b, { bytes: 302, objects: null }, 1);
    expect(await c().getBucketQuota(b)).toEqual(q);
    if (!split) {
      expect(q?.shares).toBeUndefined();
      await expectS3(c().prepareWrite(b, 'n', {}, [], later(), 101), 'QuotaExceeded');
      await expectS3(c().preparePart(b, 'k', upload.uploadId, [], later(), 101), 'QuotaExceeded');
      await c().prepareWrite(b, 'n', {}, [], later(), 100);
    } else {
      // 100 bytes of headroom over 8 ranges: 12 each, the first four 13, on top of what each holds.
      expect(q?.shares?.['']).toEqual({ bytes: 213, objects: null });
      expect(q?.shares?.x).toEqual({ bytes: 14, objects: null });
      expect(q?.shares?.m).toEqual({ bytes: 12, objects: null });
      await expectS3(c().prepareWrite(b, 'n', {}, [], later(), 13), 'QuotaExceeded'); // 'n' is in the range from 'm'
      await expectS3(c().preparePart(b, 'k', upload.uploadId, [], later(), 13), 'QuotaExceeded'); // 'k': from 'k', 12
      await c().prepareWrite(b, 'n', {}, [], later(), 12);
    }
    // Without a size (a gateway of the previous release) nothing is checked.
    await c().prepareWrite(b, 'n', {}, [], later());
    expect((await c().bucketHealth(b, new Date())).quota).toEqual({ bytes: 302, objects: null, usedBytes: 202, usedObjects: 3 });
    await setQuota(c(), b, null, 2);
    expect(await c().getBucketQuota(b)).toBeNull();
    expect((await c().bucketHealth(b, new Date())).quota).toBeUndefined();
    await c().prepareWrite(b, 'n', {}, [], later(), 10_000);
    await c().removeUpload(b, 'k', upload.uploadId);
    await expectS3(c().bucketUsage(`${b}-none`), 'NoSuchBucket');
  });
}
