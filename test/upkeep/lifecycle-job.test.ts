/**
 * The lifecycle job (upkeep/lifecycle.ts) over the product's catalog in this process: bounded
 * slices that resume from the cursor kept in the bucket's catalog (a key never cut in two), the
 * progress and counts a pass records (what the status shows), buckets without rules untouched,
 * and a current version rewritten after it was judged left alone (If-Match).
 */
import { describe, expect, it } from 'vitest';
import { localCatalog } from '../support/local-catalog.ts';
import { memoryEcStore } from '../support/memory-store.ts';
import { lifecycleBatch } from '../../worker/upkeep/lifecycle.ts';
import type { LifecycleRule } from '../../worker/model/lifecycle.ts';

const put = (size: number) => ({ contentLength: size, metadata: { user: {} }, checksum: null, conditions: {} });
const stream = (b: Uint8Array) => new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(b), c.close()) });
const DAY = 1000;
const later = () => Date.now() + 5 * DAY;

async function setup(rules: LifecycleRule[] | null, versioned = false) {
  const catalog = localCatalog();
  const { store } = memoryEcStore(catalog);
  await store.createBucket('b', { region: 'us-east-1' });
  await store.createBucket('untouched', { region: 'us-east-1' });
  if (versioned) await store.config.putBucketVersioning('b', 'Enabled');
  if (rules) await store.config.putBucketLifecycle('b', rules);
  const write = (bucket: string, key: string, size = 10) => store.putObject(bucket, key, stream(new Uint8Array(size)), put(size));
  return { catalog, store, write };
}

const expireAll: LifecycleRule[] = [{ id: 'all', status: 'Enabled', filter: {}, expiration: { days: 1 } }];

describe('lifecycle job', () => {
  it('walks a bucket in bounded slices, never cutting a key, and records each pass', async () => {
    const { catalog, store, write } = await setup(
      [{ id: 'nc', status: 'Enabled', filter: { prefix: 'k' }, noncurrentVersionExpiration: { noncurrentDays: 1 } }],
      true,
    );
    for (const key of ['k1', 'k2', 'k3']) for (let i = 0; i < 3; i++) await write('b', key);
    await write('untouched', 'k1');
    const runs = [];
    for (let i = 0; i < 10; i++) {
      const r = await lifecycleBatch(catalog, store, { dayMs: DAY, versionsPerRun: 2, now: later });
      runs.push(r);
      if (r.passesCompleted) break;
    }
    // 3 versions per key and 2 per slice: each slice reads one whole key.
    expect(runs.map((r) => r.examined)).toEqual([3, 3, 3]); // the third slice sees no key after its own: the pass completes
    expect(runs.reduce((n, r) => n + r.noncurrentDeleted, 0)).toBe(6);
    expect(runs.every((r) => r.buckets === 1)).toBe(true); // 'untouched' has no rules
    for (const key of ['k1', 'k2', 'k3'])
      expect(
        (await store.listObjectVersions('b', { prefix: key, delimiter: null, keyMarker: null, versionIdMarker: null, maxKeys: 100 })).versions,
      ).toHaveLength(1);
    const { progress } = await catalog.getLifecycleRun('b');
    expect(progress).toMatchObject({ cursor: null, passes: 1, last: { examined: 9, noncurrentDeleted: 6, failed: 0 }, current: { examined: 0 } });
    expect(progress!.lastPassCompletedAt).toBeGreaterThanOrEqual(progress!.lastPassStartedAt!);
    expect((await catalog.bucketHealth('b', new Date())).lifecycle?.passes).toBe(1);
    expect((await catalog.getLifecycleRun('untouched')).progress).toBeNull();
  });

  it('stops a run at its action budget, before a key, and the next run goes on from there', async () => {
    const { catalog, store, write } = await setup(expireAll);
    for (const key of ['a', 'b', 'c']) await write('b', key);
    expect(await lifecycleBatch(catalog, store, { dayMs: DAY, actionsPerRun: 2, now: later })).toMatchObject({ expired: 2, passesCompleted: 0 });
    expect((await catalog.getLifecycleRun('b')).progress?.cursor).toEqual({ phase: 'versions', afterKey: 'b', afterUploadId: null });
    expect(await lifecycleBatch(catalog, store, { dayMs: DAY, actionsPerRun: 2, now: later })).toMatchObject({ expired: 1, passesCompleted: 1 });
    expect((await store.listObjects('b', { prefix: '', delimiter: null, startAfter: null, maxKeys: 10 })).objects).toEqual([]);
  });

  it('a slice in progress shows where it stands', async () => {
    const { catalog, store, write } = await setup(expireAll);
    for (const key of ['a', 'b', 'c']) await write('b', key);
    await lifecycleBatch(catalog, store, { dayMs: DAY, versionsPerRun: 1, now: later });
    const { progress } = await catalog.getLifecycleRun('b');
    expect(progress).toMatchObject({ cursor: { phase: 'versions', afterKey: 'a' }, passes: 0, current: { examined: 1, expired: 1 } });
    expect(progress!.passStartedAt).not.toBeNull();
  });

  it('leaves alone a current version rewritten after it was judged', async () => {
    const { catalog, store, write } = await setup(expireAll);
    await write('b', 'k', 10);
    // The store a client rewrites through, between the job's read and its delete.
    const racing = {
      deleteObject: async (bucket: string, key: string, o?: { ifMatch?: string; versionId?: string }) => {
        await write('b', 'k', 20);
        return await store.deleteObject(bucket, key, o);
      },
      abortMultipartUpload: store.abortMultipartUpload.bind(store),
    };
    const r = await lifecycleBatch(catalog, racing, { dayMs: DAY, now: later });
    expect(r).toMatchObject({ expired: 0, failed: 0 });
    expect((await store.headObject('b', 'k', { range: null, partNumber: null, conditions: {} })).size).toBe(20);
  });

  it('aborts due uploads after the keys, by prefix', async () => {
    const { catalog, store } = await setup([{ id: 'mp', status: 'Enabled', prefix: 'up/', abortIncompleteMultipartUpload: { daysAfterInitiation: 1 } }]);
    await store.createMultipartUpload('b', 'up/1', { metadata: { user: {} }, checksum: null });
    await store.createMultipartUpload('b', 'other/1', { metadata: { user: {} }, checksum: null });
    expect(await lifecycleBatch(catalog, store, { dayMs: DAY, now: Date.now })).toMatchObject({ uploadsAborted: 0 });
    expect(await lifecycleBatch(catalog, store, { dayMs: DAY, now: later })).toMatchObject({ uploadsAborted: 1, passesCompleted: 1 });
    const left = await store.listMultipartUploads('b', { prefix: '', delimiter: null, keyMarker: null, uploadIdMarker: null, maxUploads: 100 });
    expect(left.uploads.map((u) => u.key)).toEqual(['other/1']);
  });

  it('leaves a configuration alone until it has settled (half a test day), then acts; a changed one settles again', async () => {
    const { catalog, store, write } = await setup(null);
    await write('b', 'k');
    await store.config.putBucketLifecycle('b', [{ id: 'past', status: 'Enabled', filter: {}, expiration: { date: '2015-01-01T00:00:00.000Z' } }]);
    const { setAt } = await catalog.getLifecycleRun('b');
    expect(setAt).toBeGreaterThan(Date.now() - 60_000);
    const at = (ms: number) => () => setAt! + ms;
    // Due at once (a Date long past), yet untouched right after the configuration was stored.
    expect(await lifecycleBatch(catalog, store, { dayMs: DAY, now: at(DAY / 2 - 1) })).toMatchObject({ settling: 1, buckets: 0, expired: 0 });
    expect((await store.listObjects('b', { prefix: '', delimiter: null, startAfter: null, maxKeys: 10 })).objects.map((o) => o.key)).toEqual(['k']);
    expect(await lifecycleBatch(catalog, store, { dayMs: DAY, now: at(DAY / 2) })).toMatchObject({ settling: 0, buckets: 1, expired: 1 });
    // Stored again: settles again.
    await store.config.putBucketLifecycle('b', expireAll);
    const again = (await catalog.getLifecycleRun('b')).setAt!;
    expect(again).toBeGreaterThanOrEqual(setAt!);
    expect(await lifecycleBatch(catalog, store, { dayMs: DAY, now: () => again + DAY / 2 - 1 })).toMatchObject({ settling: 1, buckets: 0 });
    await store.config.deleteBucketLifecycle('b');
    expect(await catalog.getLifecycleRun('b')).toMatchObject({ rules: null, setAt: null });
  });
});
