// The catalog's operation table (worker/catalog/operations.ts) and routing (routing.ts): the
// request-path (fenced) operations are exactly those of the list the table replaced
// (fenced-methods.ts, as of commit 1923651), the instance's one entry point runs only the
// table's operations, each route names the instance it did before the table, and a gateway
// reaching an instance of the previous release (no dispatch) calls it as that release expects.

import { describe, expect, it } from 'vitest';
import { OPERATIONS, keyOf, operation } from '../../worker/catalog/operations.ts';
import { BUCKET_LIST, bucketInstance, instanceFor } from '../../worker/catalog/routing.ts';
import { BUCKET_LIST_INSTANCE } from '../../worker/format/journal.ts';
import { DurableCatalog, type CatalogNamespace } from '../../worker/catalog/durable-catalog.ts';
import { requestFence, type SettingsFence } from '../../worker/model/bucket-settings.ts';
import { LocalCatalogNamespace, localCatalog } from '../support/local-catalog.ts';
import { manifest, unit } from './fixtures.ts';

/** fenced-methods.ts before the table. */
const FENCED_BEFORE = [
  'getBucket',
  'retireBucket',
  'getBucketCors',
  'setBucketCors',
  'getBucketTagging',
  'setBucketTagging',
  'setObjectTags',
  'setObjectAcl', // added since (issue 43: an object's ACL, changed in place as its tags are)
  'getBucketLifecycle',
  'setBucketLifecycle',
  'getVersioning',
  'setVersioning',
  'getObjectLock',
  'setObjectLock',
  'changeObjectLock',
  'getVersion',
  'listVersions',
  'getManifest',
  'commitManifest',
  'removeManifest',
  'listManifests',
  'insertUpload',
  'getUpload',
  'putPart',
  'listPartRecords',
  'commitUpload',
  'getCompletedUpload',
  'removeUpload',
  'listUploadRecords',
  'prepareWrite',
  'preparePart',
  'reserveUnits',
];

describe('the operation table', () => {
  it('fences exactly the request-path operations it fenced before, all routed inside the bucket', () => {
    const fenced = Object.entries(OPERATIONS)
      .filter(([, op]) => 'fenced' in op && op.fenced)
      .map(([name]) => name);
    expect(fenced.sort()).toEqual([...FENCED_BEFORE].sort());
    for (const name of fenced) expect(['root', 'key', 'walk']).toContain(operation(name)?.to);
  });

  it('knows no name outside its rows (nor those of Object.prototype)', () => {
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'dispatch', 'fenced', 'alarm', 'fetch'])
      expect(operation(name)).toBeUndefined();
  });

  it('routes as the client did before: the bucket list, a bucket, a garbage entry, a journal instance, the sweep', () => {
    expect(BUCKET_LIST).toBe(BUCKET_LIST_INSTANCE);
    expect(instanceFor('registry', ['b'])).toBe('__buckets__');
    for (const scope of ['root', 'walk', 'partition', 'sum'] as const) expect(instanceFor(scope, ['b', 'k'])).toBe('bucket:b');
    expect(instanceFor('key', ['b', 'u', [0]], 'k')).toBe('bucket:b'); // one instance per bucket: every key's
    expect(bucketInstance('b')).toBe('bucket:b');
    expect(instanceFor('garbage', [{ bucket: 'b', units: [] }, 0])).toBe('bucket:b');
    expect(instanceFor('journal', [BUCKET_LIST_INSTANCE])).toBe('__buckets__');
    expect(instanceFor('journal', ['b'])).toBe('bucket:b');
    expect(instanceFor('sweep', [0, 10])).toBe('__buckets__');
    expect(instanceFor('sweep', [0, 10, 'b'])).toBe('bucket:b');
  });
});

/** The rows routed by one key (docs/PARTITIONS.md): everything of a key, and the unit verbs by the unit's key. */
const KEY_SCOPED = [
  'getManifest',
  'getVersion',
  'prepareWrite',
  'commitManifest',
  'removeManifest',
  'setObjectTags',
  'setObjectAcl',
  'changeObjectLock',
  'reserveUnits',
  'releaseUnits',
  'insertUpload',
  'getUpload',
  'preparePart',
  'putPart',
  'listPartRecords',
  'commitUpload',
  'getCompletedUpload',
  'removeUpload',
  'getUnit',
  'markMissing',
  'markRepaired',
  'repairFailed',
  'commitMove',
  'commitRestripe',
  'splitPartition', // the partition holding the key splits (partition-split.test.ts)
  'mergePartition', // the partition holding the key merges into its lower neighbour (partition-merge.test.ts)
];

describe('routing by scope (issue 39: the seams a partitioned bucket needs)', () => {
  it('routes exactly the operations of one key by their key', () => {
    const keyed = Object.entries(OPERATIONS)
      .filter(([, op]) => op.to === 'key')
      .map(([name]) => name);
    expect(keyed.sort()).toEqual([...KEY_SCOPED].sort());
  });

  it("finds each key-scoped row's key among the port's arguments", () => {
    const at = new Date(0);
    const calls: Record<string, unknown[]> = {
      getManifest: ['b', 'K'],
      getUnit: ['b', 'u', 'K'],
      markMissing: ['b', 'u', [0], 'K'],
      markRepaired: ['b', 'u', [0], 'K'],
      repairFailed: ['b', 'u', 'error', [], 'K'],
      releaseUnits: ['b', ['u'], 'K'],
      reserveUnits: ['b', ['u'], at, 'K'],
      commitMove: ['b', { key: 'K', unitId: 'u', shard: 0, from: 'b0', to: 'b1' }, at],
      commitRestripe: ['b', { key: 'K', versionId: 'v' }, '{}', { kind: 'inline' }, at],
      splitPartition: ['b', 'K', 'm'],
      mergePartition: ['b', 'K'],
    };
    for (const [name, args] of Object.entries(calls)) expect(keyOf(operation(name)!, args), name).toBe('K');
  });

  it('refuses to send a key-scoped call without its key, and an instance takes one from a gateway of the previous release without it', async () => {
    const catalog = localCatalog();
    await catalog.insertBucket('b', 'auto');
    const u = unit();
    await catalog.commitManifest('b', 'k', manifest('b', 'k', [u]), {});
    const untyped = catalog as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    await expect(untyped.getUnit!('b', u.unitId)).rejects.toThrow(/getUnit was called without the key/);
    await expect(untyped.markMissing!('b', u.unitId, [0])).rejects.toThrow(/without the key/);
    expect(await catalog.getUnit('b', u.unitId, 'k')).toMatchObject({ key: 'k', unitId: u.unitId });
    const object = catalog.namespace.instance('bucket:b').object;
    expect(await object.dispatch('getUnit', ['b', u.unitId])).toMatchObject({ ok: { key: 'k' } }); // the previous release's call
  });
});

describe("the instance's one entry point", () => {
  it('runs an operation of the table by name and refuses any other name', async () => {
    const catalog = localCatalog();
    await catalog.insertBucket('b', 'auto');
    const m = manifest('b', 'k');
    await catalog.commitManifest('b', 'k', m, {});
    const object = catalog.namespace.instance('bucket:b').object;
    expect(await object.dispatch('getManifest', ['b', 'k'])).toEqual({ ok: m });
    for (const name of ['alarm', 'constructor', 'destroyIfRetired2', 'fenced', 'dispatch']) {
      await expect(object.dispatch(name, [])).rejects.toThrow(/no operation/);
    }
    await expect(object.dispatch('markMissing', ['b', 'u', [0]], '')).rejects.toThrow(/not a request-path method/);
  });

  it('counts one round trip per operation, named as before the table', async () => {
    const catalog = localCatalog();
    await catalog.insertBucket('b', 'auto');
    catalog.namespace.calls.clear();
    await catalog.commitManifest('b', 'k', manifest('b', 'k'), {});
    await catalog.getManifest('b', 'k');
    await catalog.listBucketRecords();
    expect(Object.fromEntries(catalog.namespace.calls)).toEqual({ commitManifest: 1, getManifest: 1, listBucketRecords: 1 });
  });
});

describe('an instance deployed before the table (a deploy runs both releases for a while)', () => {
  it('answering that it has no dispatch, is called by method name, and fenced calls through fenced()', async () => {
    const ns = new LocalCatalogNamespace();
    // The stub of an older CatalogObject: every method but dispatch, which workerd refuses so.
    const older: CatalogNamespace = {
      idFromName: (name) => ns.idFromName(name),
      get: (id) => {
        const stub = ns.get(id) as unknown as Record<string, unknown>;
        return new Proxy(
          {},
          {
            get: (_, method: string) =>
              method === 'dispatch'
                ? async () => {
                    throw new TypeError('The RPC receiver does not implement the method "dispatch".');
                  }
                : stub[method],
          },
        ) as never;
      },
    };
    const catalog = new DurableCatalog(older);
    await catalog.insertBucket('b', 'auto');
    const m = manifest('b', 'k');
    await catalog.commitManifest('b', 'k', m, {});
    expect(await catalog.getManifest('b', 'k')).toEqual(m);
    expect((await catalog.listBucketRecords()).map((b) => b.name)).toEqual(['b']);
    const fence: SettingsFence = { stampFor: () => '', changed: async () => {} };
    ns.calls.clear();
    expect(await requestFence.run(fence, () => catalog.getManifest('b', 'k'))).toEqual(m);
    expect(Object.fromEntries(ns.calls)).toEqual({ getManifest: 1 }); // through fenced(), counted by the method it carries
    await expect(catalog.getManifest('none', 'k')).rejects.toMatchObject({ code: 'NoSuchBucket' });
  });
});
