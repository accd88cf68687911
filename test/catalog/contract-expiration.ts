// Lifecycle expiration cases of the catalog contract (contract.ts runs them against every
// Catalog): a commit answers when a Days or Date rule will expire the version it installs (what
// x-amz-expiration states on PutObject, CopyObject and CompleteMultipartUpload), judged in the
// commit itself, the same judgement a read of the current version makes; a completed upload
// remembers it for a repeated Complete.

import { expect, it } from 'vitest';
import type { PartRecord } from '../../worker/catalog/types.ts';
import type { LifecycleRule } from '../../worker/model/lifecycle.ts';
import type { Ctx } from './contract.ts';
import { manifest, unit } from './fixtures.ts';

// fixtures.ts writes every manifest at 2025-01-02T03:04:05Z: Days 3 is due 2025-01-05 03:04, rounded up to midnight UTC.
const DAYS_3 = Date.UTC(2025, 0, 6);
const rules: LifecycleRule[] = [
  { id: 'logs-3', status: 'Enabled', filter: { prefix: 'logs/' }, expiration: { days: 3 } },
  { id: 'logs-30', status: 'Enabled', filter: { prefix: 'logs/' }, expiration: { days: 30 } },
  { id: 'off', status: 'Disabled', filter: { prefix: 'off/' }, expiration: { days: 1 } },
  { id: 'big', status: 'Enabled', filter: { objectSizeGreaterThan: 1_000_000 }, expiration: { date: '2030-01-01T00:00:00.000Z' } },
  { id: 'old-versions', status: 'Enabled', filter: { prefix: 'nc/' }, noncurrentVersionExpiration: { noncurrentDays: 1 } },
];

export function defineExpirationCases({ c, bucket }: Ctx) {
  it('a commit answers the earliest Days or Date rule that will expire the new version, as a read of it does', async () => {
    const b = await bucket();
    expect(await c().commitManifest(b, 'logs/a', manifest(b, 'logs/a'), {})).toEqual({}); // no rules yet
    await c().setBucketLifecycle(b, rules);
    const result = await c().commitManifest(b, 'logs/a', manifest(b, 'logs/a'), {});
    expect(result).toEqual({ expiration: { date: DAYS_3, ruleId: 'logs-3' } });
    const read = await c().getVersion(b, 'logs/a', null);
    expect(read.kind === 'object' && read.expiration).toEqual(result.expiration);
    // A disabled rule, a rule whose filter does not match, a noncurrent-only rule: nothing to state.
    for (const key of ['off/a', 'other', 'nc/a']) expect(await c().commitManifest(b, key, manifest(b, key), {}), key).toEqual({});
    // Beside the version id of an Enabled bucket.
    await c().setVersioning(b, 'Enabled');
    const m = manifest(b, 'logs/b');
    expect(await c().commitManifest(b, 'logs/b', m, {})).toEqual({ versionId: m.versionId, expiration: { date: DAYS_3, ruleId: 'logs-3' } });
    await c().setBucketLifecycle(b, null);
    expect(await c().commitManifest(b, 'logs/b', manifest(b, 'logs/b'), {})).toEqual({ versionId: expect.any(String) });
  });

  it('a size filter is judged on the committed version; a Date rule states its date', async () => {
    const b = await bucket();
    await c().setBucketLifecycle(b, rules);
    const big = { ...unit(), size: 2_000_000 };
    expect(await c().commitManifest(b, 'x', manifest(b, 'x', [big]), {})).toEqual({ expiration: { date: Date.UTC(2030, 0, 1), ruleId: 'big' } });
    expect(await c().commitManifest(b, 'y', manifest(b, 'y', [unit()]), {})).toEqual({});
  });

  it('a completed upload answers its expiration and remembers it for a repeated Complete', async () => {
    const b = await bucket();
    await c().setBucketLifecycle(b, rules);
    const { uploadId } = await c().insertUpload(b, 'logs/u', { metadata: { user: {} }, checksum: null });
    const u = unit(1);
    const part: PartRecord = { partNumber: 1, etag: '"p1"', size: u.size, lastModified: new Date().toISOString(), units: [u] };
    await c().putPart(b, 'logs/u', uploadId, part);
    const done = { ...manifest(b, 'logs/u', [u], '"abc-1"'), partsCount: 1 };
    const expiration = { date: DAYS_3, ruleId: 'logs-3' };
    expect(await c().commitUpload(b, 'logs/u', uploadId, done, {})).toEqual({ expiration });
    expect(await c().getCompletedUpload(b, 'logs/u', uploadId)).toMatchObject({ etag: '"abc-1"', expiration });
  });
}
