/**
 * forEachBucket (worker/upkeep/each-bucket.ts): the walk every upkeep sweep takes. A bucket
 * deleted between the listing and its turn is skipped; a named bucket that does not exist is an
 * error; the walk stops when told; the first bucket rotates by the minute.
 */
import { describe, expect, it } from 'vitest';
import { forEachBucket } from '../../worker/upkeep/each-bucket.ts';
import { restripeProgress } from '../../worker/upkeep/restripe-progress.ts';
import { S3Error } from '../../worker/model/errors.ts';

const lister = (names: string[]) => ({ listBucketRecords: async () => names.map((name) => ({ name })) });
const gone = (bucket: string) => new S3Error('NoSuchBucket', undefined, { BucketName: bucket });

describe('forEachBucket', () => {
  it('visits every bucket in order and skips one deleted since the listing', async () => {
    const seen: string[] = [];
    const done = await forEachBucket(lister(['a', 'b', 'c']), async (b) => {
      if (b === 'b') throw gone(b);
      seen.push(b);
    });
    expect(done).toBe(true);
    expect(seen).toEqual(['a', 'c']);
  });

  it('stops when the visit answers false, and says so', async () => {
    const seen: string[] = [];
    expect(await forEachBucket(lister(['a', 'b', 'c']), async (b) => (seen.push(b), b !== 'b'))).toBe(false);
    expect(seen).toEqual(['a', 'b']);
  });

  it('ends the walk with any other error', async () => {
    await expect(
      forEachBucket(lister(['a', 'b']), async () => {
        throw new Error('catalog down');
      }),
    ).rejects.toThrow('catalog down');
  });

  it('walks a named bucket without listing, and tells when it does not exist', async () => {
    const never = {
      listBucketRecords: async () => {
        throw new Error('listed');
      },
    };
    const seen: string[] = [];
    expect(await forEachBucket(never, async (b) => void seen.push(b), { only: 'x' })).toBe(true);
    expect(seen).toEqual(['x']);
    await expect(
      forEachBucket(
        never,
        async (b) => {
          throw gone(b);
        },
        { only: 'nope' },
      ),
    ).rejects.toMatchObject({ code: 'NoSuchBucket' });
  });

  it('starts at the bucket the minute names and wraps', async () => {
    const order = async (at: number) => {
      const seen: string[] = [];
      await forEachBucket(lister(['a', 'b', 'c']), async (b) => void seen.push(b), { rotateAt: at });
      return seen.join('');
    };
    expect(await order(0)).toBe('abc');
    expect(await order(60_000)).toBe('bca');
    expect(await order(5 * 60_000 + 59_999)).toBe('cab');
    expect(await forEachBucket(lister([]), async () => false, { rotateAt: 123 })).toBe(true);
  });

  it('a progress report survives a bucket deleted while it is read (it failed whole before)', async () => {
    const catalog = {
      ...lister(['kept', 'deleted']),
      bucketHealth: async (bucket: string) => {
        if (bucket === 'deleted') throw gone(bucket);
        return {
          redundancy: { byPolicy: { '4+2': { k: 4, m: 2, byShardsLeft: [{ shardsLeft: 6, units: 3, bytes: 300 }], belowK: { units: 0, bytes: 0 } } } },
          restripe: null,
        };
      },
    };
    const settings = {
      policies: { wide: { name: 'wide', codec: 'rs', k: 8, m: 3, small: { mode: 'inline', threshold: 0, replicas: 3 } } },
      buckets: {},
      defaultPolicy: 'wide',
    };
    const out = await restripeProgress(catalog as never, settings as never);
    expect(out.map((p) => [p.bucket, p.left.units])).toEqual([['kept', 3]]);
  });
});
