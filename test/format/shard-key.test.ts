/**
 * The shard key scheme (worker/format/shard-key.ts): keys and prefixes built in one place, and
 * the parser that reads them back (rebuild, rescue, the meter).
 */
import { describe, expect, it } from 'vitest';
import { newId } from '../../worker/format/ids.ts';
import { bucketOfShardKey, bucketPrefix, parseShardKey, parseTagRecordKey, shardKey, tagRecordKey, unitPrefix } from '../../worker/format/shard-key.ts';

describe('shard keys', () => {
  it('parses what it builds', () => {
    const unitId = newId();
    for (const [bucket, i] of [['photos', 0], ['my.bucket-1', 5], ['b', 19]] as const) {
      const key = shardKey(bucket, unitId, i);
      expect(parseShardKey(key)).toEqual({ bucket, unitId, shardIndex: i });
      expect(bucketOfShardKey(key)).toBe(bucket);
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
    expect(bucketOfShardKey('shardgate-probe')).toBeNull();
    expect(bucketOfShardKey('sg1/')).toBeNull();
    expect(bucketOfShardKey('sg1/b')).toBeNull();
  });

  it('a tag record sits under its unit\'s prefix, is no shard, and parses back to its unit', () => {
    const unitId = newId();
    const key = tagRecordKey('photos', unitId);
    expect(key).toBe(`sg1/photos/${unitId}/tags`);
    expect(key.startsWith(unitPrefix('photos', unitId))).toBe(true);
    expect(bucketOfShardKey(key)).toBe('photos');
    expect(parseShardKey(key)).toBeNull();
    expect(parseTagRecordKey(key)).toEqual({ bucket: 'photos', unitId });
    for (const other of [shardKey('photos', unitId, 0), 'sg1/photos/tags', `sg1/photos/${unitId}/tags/1`, `sg2/photos/${unitId}/tags`]) {
      expect(parseTagRecordKey(other), other).toBeNull();
    }
  });
});
