// Object Lock in the catalog's atomic step (sql-objects.ts), through the product's catalog run in
// Node (test/support/local-catalog.ts): whoever asks the catalog to remove or replace a version
// (S3, lifecycle, rebuild, an operator) meets the same refusal, and the collector is never handed
// the units of a locked version, whatever put them in the garbage.

import { describe, expect, it } from 'vitest';
import { localCatalog } from '../support/local-catalog.ts';
import type { ObjectLockState } from '../../worker/model/object-lock.ts';
import { expectS3, manifest, takeUnitIds, unit } from './fixtures.ts';

const DAY = 86_400_000;
const inDays = (n: number) => new Date(Date.now() + n * DAY).toISOString();
const farLater = () => new Date(Date.now() + 400 * DAY);

async function lockedBucket(name: string) {
  const c = localCatalog({ garbageGraceMs: 0 });
  await c.insertBucket(name, 'us-east-1', { objectLock: true });
  return c;
}

function lockedManifest(bucket: string, key: string, objectLock: ObjectLockState) {
  const m = manifest(bucket, key, [unit()]);
  m.metadata = { ...m.metadata, objectLock };
  return m;
}

describe('a lock-enabled bucket', () => {
  it('is created versioning Enabled, which can never be Suspended', async () => {
    const c = await lockedBucket('vault');
    expect(await c.getVersioning('vault')).toBe('Enabled');
    expect(await c.getObjectLock('vault')).toEqual({ rule: null });
    await expectS3(c.setVersioning('vault', 'Suspended'), 'InvalidBucketState');
    expect(await c.getVersioning('vault')).toBe('Enabled');
  });

  it('enabling lock later needs versioning Enabled', async () => {
    const c = localCatalog();
    await c.insertBucket('plain', 'us-east-1');
    await expectS3(c.setObjectLock('plain', { mode: 'GOVERNANCE', days: 1 }), 'InvalidBucketState');
    await c.setVersioning('plain', 'Suspended');
    await expectS3(c.setObjectLock('plain', { mode: 'GOVERNANCE', days: 1 }), 'InvalidBucketState');
    await c.setVersioning('plain', 'Enabled');
    await c.setObjectLock('plain', { mode: 'GOVERNANCE', days: 1 });
    expect(await c.getObjectLock('plain')).toEqual({ rule: { mode: 'GOVERNANCE', days: 1 } });
  });

  it('a write naming a lock in a bucket without lock is InvalidRequest (commit and multipart upload)', async () => {
    const c = localCatalog();
    await c.insertBucket('plain', 'us-east-1');
    await expectS3(c.commitManifest('plain', 'k', lockedManifest('plain', 'k', { legalHold: 'ON' }), {}), 'InvalidRequest');
    await expectS3(c.insertUpload('plain', 'k', { metadata: { user: {}, objectLock: { legalHold: 'ON' } }, checksum: null }), 'InvalidRequest');
    expect(await c.getVersion('plain', 'k', null)).toEqual({ kind: 'none' });
  });

  it('the default retention is given to a version that names none, counted from its commit', async () => {
    const c = await lockedBucket('vault');
    await c.setObjectLock('vault', { mode: 'COMPLIANCE', days: 2 });
    const before = Date.now();
    const { versionId: id } = await c.commitManifest('vault', 'k', manifest('vault', 'k'), {});
    const found = await c.getVersion('vault', 'k', id!);
    const lock = found.kind === 'object' ? found.manifest.metadata.objectLock : undefined;
    expect(lock?.mode).toBe('COMPLIANCE');
    expect(Date.parse(lock!.retainUntil!)).toBeGreaterThanOrEqual(before + 2 * DAY);
    expect(Date.parse(lock!.retainUntil!)).toBeLessThanOrEqual(Date.now() + 2 * DAY);
    // Its own retention wins over the default.
    const retainUntil = inDays(9);
    const { versionId: own } = await c.commitManifest('vault', 'k', lockedManifest('vault', 'k', { mode: 'GOVERNANCE', retainUntil }), {});
    const second = await c.getVersion('vault', 'k', own!);
    expect(second.kind === 'object' && second.manifest.metadata.objectLock).toEqual({ mode: 'GOVERNANCE', retainUntil });
  });
});

describe('a locked version', () => {
  it('COMPLIANCE: no removal by id, with bypass or not; its units are never queued; a delete marker is allowed', async () => {
    const c = await lockedBucket('vault');
    const u = unit();
    const m = manifest('vault', 'k', [u]);
    m.metadata = { ...m.metadata, objectLock: { mode: 'COMPLIANCE', retainUntil: inDays(1) } };
    const id = (await c.commitManifest('vault', 'k', m, {})).versionId!;
    await expectS3(c.removeManifest('vault', 'k', undefined, id), 'AccessDenied');
    await expectS3(c.removeManifest('vault', 'k', undefined, id, true), 'AccessDenied');
    const marker = await c.removeManifest('vault', 'k');
    expect(marker.deleteMarker).toBe(true);
    await c.removeManifest('vault', 'k', undefined, marker.versionId); // the marker itself may go
    // Overwrite: a new version, the locked one stays.
    await c.commitManifest('vault', 'k', manifest('vault', 'k'), {});
    expect((await c.getVersion('vault', 'k', id)).kind).toBe('object');
    expect(await takeUnitIds(c, 'vault', farLater())).toEqual([]);
  });

  it('a conditional delete that matches still meets the lock (AccessDenied); one that does not is 412; neither removes it', async () => {
    const c = await lockedBucket('vault');
    const m = lockedManifest('vault', 'k', { mode: 'COMPLIANCE', retainUntil: inDays(1) });
    const id = (await c.commitManifest('vault', 'k', m, {})).versionId!;
    const all = { ifMatch: m.etag, size: m.size, lastModifiedTime: Date.parse(m.lastModified) };
    await expectS3(c.removeManifest('vault', 'k', all, id, true), 'AccessDenied');
    await expectS3(c.removeManifest('vault', 'k', { ...all, size: m.size + 1 }, id, true), 'PreconditionFailed');
    expect((await c.getVersion('vault', 'k', id)).kind).toBe('object');
    expect(await takeUnitIds(c, 'vault', farLater())).toEqual([]);
  });

  it('the collector is never handed its units, even when they were queued as garbage', async () => {
    const c = await lockedBucket('vault');
    const [held, free] = [unit(), unit()];
    await c.commitManifest('vault', 'held', lockedManifest('vault', 'held', { legalHold: 'ON' }), {});
    const m = manifest('vault', 'held2', [held]);
    m.metadata = { ...m.metadata, objectLock: { mode: 'COMPLIANCE', retainUntil: inDays(1) } };
    await c.commitManifest('vault', 'held2', m, {});
    await c.queueGarbage({ bucket: 'vault', units: [held, free] }, new Date(0));
    await c.reserveUnits('vault', [held.unitId], new Date(0), 'held2');
    const taken = await c.takeDueGarbage(new Date(), 100);
    expect(taken.flatMap((g) => [...g.units.map((x) => x.unitId), ...(g.unitIds ?? [])])).toEqual([free.unitId]);
  });

  it('GOVERNANCE: removed only with bypass; a legal hold blocks even that, until it is OFF', async () => {
    const c = await lockedBucket('vault');
    const id = (await c.commitManifest('vault', 'k', lockedManifest('vault', 'k', { mode: 'GOVERNANCE', retainUntil: inDays(1), legalHold: 'ON' }), {}))
      .versionId!;
    await expectS3(c.removeManifest('vault', 'k', undefined, id, true), 'AccessDenied');
    await c.changeObjectLock('vault', 'k', id, { legalHold: 'OFF' });
    await expectS3(c.removeManifest('vault', 'k', undefined, id), 'AccessDenied');
    expect(await c.removeManifest('vault', 'k', undefined, id, true)).toEqual({ versionId: id });
    expect((await c.getVersion('vault', 'k', id)).kind).toBe('none');
  });

  it('retention changes: COMPLIANCE only extends; GOVERNANCE shortens, changes mode or goes only with bypass', async () => {
    const c = await lockedBucket('vault');
    const id = (await c.commitManifest('vault', 'k', lockedManifest('vault', 'k', { mode: 'COMPLIANCE', retainUntil: inDays(2) }), {})).versionId!;
    await expectS3(c.changeObjectLock('vault', 'k', id, { retention: { mode: 'COMPLIANCE', retainUntil: inDays(1) } }, true), 'AccessDenied');
    await expectS3(c.changeObjectLock('vault', 'k', id, { retention: { mode: 'GOVERNANCE', retainUntil: inDays(3) } }, true), 'AccessDenied');
    await expectS3(c.changeObjectLock('vault', 'k', id, { retention: null }, true), 'AccessDenied');
    await c.changeObjectLock('vault', 'k', id, { retention: { mode: 'COMPLIANCE', retainUntil: inDays(3) } });

    const g = (await c.commitManifest('vault', 'g', lockedManifest('vault', 'g', { mode: 'GOVERNANCE', retainUntil: inDays(2) }), {})).versionId!;
    await expectS3(c.changeObjectLock('vault', 'g', g, { retention: { mode: 'GOVERNANCE', retainUntil: inDays(1) } }), 'AccessDenied');
    await expectS3(c.changeObjectLock('vault', 'g', g, { retention: { mode: 'COMPLIANCE', retainUntil: inDays(3) } }), 'AccessDenied');
    await c.changeObjectLock('vault', 'g', g, { retention: { mode: 'GOVERNANCE', retainUntil: inDays(3) } });
    await c.changeObjectLock('vault', 'g', g, { retention: null }, true);
    const found = await c.getVersion('vault', 'g', g);
    expect(found.kind === 'object' && found.manifest.metadata.objectLock).toBeUndefined();
    expect(await c.removeManifest('vault', 'g', undefined, g)).toEqual({ versionId: g });
  });

  it('an expired retention no longer holds', async () => {
    const c = await lockedBucket('vault');
    const id = (
      await c.commitManifest('vault', 'k', lockedManifest('vault', 'k', { mode: 'COMPLIANCE', retainUntil: new Date(Date.now() - 1000).toISOString() }), {})
    ).versionId!;
    expect(await c.removeManifest('vault', 'k', undefined, id)).toEqual({ versionId: id });
  });
});
