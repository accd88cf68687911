/**
 * The shard key scheme (worker/format/shard-key.ts): keys and prefixes built in one place, and
 * the parser that reads them back (rebuild, rescue, the meter).
 */
import { describe, expect, it } from 'vitest';
import { newId } from '../../worker/format/ids.ts';
import {
  bucketPrefix,
  bucketsByDirectory,
  directoryOfShardKey,
  parseShardKey,
  parseTagRecordKey,
  prefixesOf,
  shardKey,
  shelfDirectory,
  shelfOfUnitId,
  shelfPrefix,
  shelvedUnitId,
  tagRecordKey,
  unitPrefix,
} from '../../worker/format/shard-key.ts';
import { KeyRing } from '../../worker/format/seal.ts';

describe('shard keys', () => {
  it('parses what it builds', () => {
    const unitId = newId();
    for (const [bucket, i] of [
      ['photos', 0],
      ['my.bucket-1', 5],
      ['b', 19],
    ] as const) {
      const key = shardKey(bucket, unitId, i);
      expect(parseShardKey(key)).toEqual({ bucket, directory: bucket, unitId, shardIndex: i });
      expect(directoryOfShardKey(key)).toBe(bucket);
      expect(key.startsWith(unitPrefix(bucket, unitId))).toBe(true);
      expect(key.startsWith(bucketPrefix(bucket))).toBe(true);
      expect(key.startsWith(bucketPrefix())).toBe(true);
    }
  });

  it('a unit prefix does not take in a unit whose id it begins', () => {
    expect(shardKey('b', 'abc1', 0).startsWith(unitPrefix('b', 'abc'))).toBe(false);
    expect(shardKey('bb', 'u', 0).startsWith(bucketPrefix('b'))).toBe(false);
  });

  it('anything else is not a shard key', () => {
    for (const key of ['shardgate-probe', 'sg1/', 'sg1/b/', 'sg1/b/u', 'sg1/b/u/', 'sg1/b/u/x', 'sg1/b/u/01', 'sg1/b/u/1/2', 'sg2/b/u/1', 'x/sg1/b/u/1']) {
      expect(parseShardKey(key), key).toBeNull();
    }
    expect(directoryOfShardKey('shardgate-probe')).toBeNull();
    expect(directoryOfShardKey('sg1/')).toBeNull();
    expect(directoryOfShardKey('sg1/b')).toBeNull();
  });

  it("a tag record sits under its unit's prefix, is no shard, and parses back to its unit", () => {
    const unitId = newId();
    const key = tagRecordKey('photos', unitId);
    expect(key).toBe(`sg1/photos/${unitId}/tags`);
    expect(key.startsWith(unitPrefix('photos', unitId))).toBe(true);
    expect(directoryOfShardKey(key)).toBe('photos');
    expect(parseShardKey(key)).toBeNull();
    expect(parseTagRecordKey(key)).toEqual({ bucket: 'photos', directory: 'photos', unitId });
    for (const other of [shardKey('photos', unitId, 0), 'sg1/photos/tags', `sg1/photos/${unitId}/tags/1`, `sg2/photos/${unitId}/tags`]) {
      expect(parseTagRecordKey(other), other).toBeNull();
    }
  });

  it("a shelved unit's keys name its shelf, never its bucket, and parse back to its id", () => {
    const shelf = 'a1b2c3d4e5f6a7b8c9d0e1f2',
      id = newId();
    const unitId = shelvedUnitId(shelf, id);
    expect(shelfOfUnitId(unitId)).toBe(shelf);
    expect(shelfOfUnitId(id)).toBeNull();
    for (const bucket of ['photos', 'payroll']) {
      const key = shardKey(bucket, unitId, 3);
      expect(key).toBe(`sg1/_${shelf}/${id}/3`);
      expect(key).not.toContain(bucket);
      expect(parseShardKey(key)).toEqual({ bucket: null, directory: `_${shelf}`, unitId, shardIndex: 3 });
      expect(directoryOfShardKey(key)).toBe(shelfDirectory(shelf));
      expect(key.startsWith(shelfPrefix(shelf))).toBe(true);
      expect(key.startsWith(bucketPrefix(bucket))).toBe(false);
      expect(tagRecordKey(bucket, unitId)).toBe(`sg1/_${shelf}/${id}/tags`);
      expect(parseTagRecordKey(tagRecordKey(bucket, unitId))).toEqual({ bucket: null, directory: `_${shelf}`, unitId });
    }
    expect(prefixesOf('photos', [shelf])).toEqual(['sg1/photos/', `sg1/_${shelf}/`]);
    // An unshelved id never has a dot, a shelf never starts a bucket name: no key reads two ways.
    for (const key of [`sg1/_/${id}/0`, `sg1/_${shelf}/a.b/0`, `sg1/photos/a.b/0`, `sg1/_a.b/${id}/0`]) expect(parseShardKey(key), key).toBeNull();
  });

  it("a bucket's shelves are keyed: the same under one key, different under another, and named back by the ring", async () => {
    const k1 = new Uint8Array(32).fill(1),
      k2 = new Uint8Array(32).fill(2);
    const ring = new KeyRing({ k1, k2 }, 'k1');
    const s1 = await ring.shelf('photos');
    expect(s1).toMatch(/^[0-9a-f]{24}$/);
    expect(await ring.shelf('photos')).toBe(s1);
    expect(await new KeyRing({ k1 }, 'k1').shelf('photos')).toBe(s1); // a function of the key and the name only
    expect(await ring.shelf('photos', 'k2')).not.toBe(s1);
    expect(await ring.shelf('photo')).not.toBe(s1);
    expect(await ring.shelvesOf('photos')).toEqual([s1, await ring.shelf('photos', 'k2')]);
    const names = await bucketsByDirectory(['photos', 'logs'], ring);
    expect(names.get(`_${s1}`)).toBe('photos');
    expect(names.get(`_${await ring.shelf('logs', 'k2')}`)).toBe('logs');
    expect(names.get('logs')).toBe('logs');
    expect(names.size).toBe(6);
  });
});
