/**
 * Conformance: ListObjectsV2 and ListObjects (v1): prefix, any-string delimiter, one max-keys
 * budget for keys and common prefixes, continuation tokens that never repeat a prefix,
 * start-after, encoding-type=url, fetch-owner, v1 Marker/NextMarker, UTF-8 byte order.
 */
import { CreateBucketCommand, ListObjectsCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, expectS3Error, type ChecksumMode, type Suite } from './context.ts';

const KEYS = ['a/1', 'a/2', 'a/b/3', 'a/b/4', 'a/c/5', 'b/6', 'c', 'd--x--1', 'd--x--2', 'd--y', 'e f', 'e+f', 'z'];

export function listingCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'listing');

  describe('listing', () => {
    beforeAll(async () => {
      const { client } = suite();
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      for (const key of KEYS) await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }));
    });

    const v2 = (extra: Partial<ConstructorParameters<typeof ListObjectsV2Command>[0]> = {}) =>
      suite().client.send(new ListObjectsV2Command({ Bucket: bucket, ...extra }));

    it('lists every key in order with sizes and ETags', async () => {
      const r = await v2();
      expect(r.Contents?.map((c) => c.Key)).toEqual([...KEYS].sort());
      expect(r.KeyCount).toBe(KEYS.length);
      expect(r.IsTruncated).toBe(false);
      expect(r.Contents?.[0]).toMatchObject({ Key: 'a/1', Size: 3, StorageClass: 'STANDARD' });
      expect(r.Contents?.[0].ETag).toMatch(/^"[0-9a-f]{32}"$/);
      expect(r.Contents?.[0].Owner).toBeUndefined();
    });

    it('prefix + delimiter split keys and common prefixes', async () => {
      const root = await v2({ Delimiter: '/' });
      expect(root.Contents?.map((c) => c.Key)).toEqual(['c', 'd--x--1', 'd--x--2', 'd--y', 'e f', 'e+f', 'z']);
      expect(root.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['a/', 'b/']);
      expect(root.KeyCount).toBe(9);
      const inA = await v2({ Prefix: 'a/', Delimiter: '/' });
      expect(inA.Contents?.map((c) => c.Key)).toEqual(['a/1', 'a/2']);
      expect(inA.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['a/b/', 'a/c/']);
      expect(inA.Prefix).toBe('a/');
      expect(inA.Delimiter).toBe('/');
    });

    it('the delimiter may be any string', async () => {
      const r = await v2({ Prefix: 'd--', Delimiter: '--' });
      expect(r.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['d--x--']);
      expect(r.Contents?.map((c) => c.Key)).toEqual(['d--y']);
    });

    it('max-keys pages share one budget and never repeat a prefix', async () => {
      for (const delimiter of [undefined, '/', '--']) {
        const full = await v2({ Delimiter: delimiter });
        const expected = [...(full.Contents ?? []).map((c) => c.Key!), ...(full.CommonPrefixes ?? []).map((p) => p.Prefix!)].sort();
        for (const maxKeys of [1, 2, 3]) {
          const seen: string[] = [];
          let token: string | undefined;
          let pages = 0;
          do {
            const page = await v2({ Delimiter: delimiter, MaxKeys: maxKeys, ContinuationToken: token });
            const entries = [...(page.Contents ?? []).map((c) => c.Key!), ...(page.CommonPrefixes ?? []).map((p) => p.Prefix!)];
            expect(entries.length).toBeLessThanOrEqual(maxKeys);
            expect(page.KeyCount).toBe(entries.length);
            expect(page.MaxKeys).toBe(maxKeys);
            seen.push(...entries);
            token = page.IsTruncated ? page.NextContinuationToken : undefined;
            if (page.IsTruncated) expect(token).toBeTruthy();
            expect(++pages).toBeLessThan(50);
          } while (token);
          expect(seen.sort()).toEqual(expected);
        }
      }
    });

    it('max-keys=0 returns an empty, untruncated page', async () => {
      const r = await v2({ MaxKeys: 0 });
      expect(r.KeyCount).toBe(0);
      expect(r.Contents ?? []).toEqual([]);
      expect(r.IsTruncated).toBe(false);
    });

    it('start-after, and a bad continuation token is InvalidArgument', async () => {
      const r = await v2({ StartAfter: 'd--y' });
      expect(r.Contents?.map((c) => c.Key)).toEqual(['e f', 'e+f', 'z']);
      expect(r.StartAfter).toBe('d--y');
      await expectS3Error(v2({ ContinuationToken: 'not-a-token' }), 'InvalidArgument', 400);
    });

    it('encoding-type=url encodes keys and prefixes', async () => {
      const r = await v2({ Prefix: 'e', EncodingType: 'url' });
      expect(r.EncodingType).toBe('url');
      expect(r.Contents?.map((c) => c.Key)).toEqual(['e%20f', 'e%2Bf']);
      expect(r.Contents?.map((c) => decodeURIComponent(c.Key!))).toEqual(['e f', 'e+f']);
    });

    it('fetch-owner adds the owner', async () => {
      const r = await v2({ Prefix: 'z', FetchOwner: true });
      expect(r.Contents?.[0].Owner?.ID).toBeTruthy();
    });

    it('v1: Marker, and NextMarker only with a delimiter', async () => {
      const { client } = suite();
      const noDelimiter = await client.send(new ListObjectsCommand({ Bucket: bucket, MaxKeys: 2 }));
      expect(noDelimiter.Contents?.map((c) => c.Key)).toEqual(['a/1', 'a/2']);
      expect(noDelimiter.IsTruncated).toBe(true);
      expect(noDelimiter.NextMarker).toBeUndefined();
      expect(noDelimiter.Contents?.[0].Owner?.ID).toBeTruthy();
      const next = await client.send(new ListObjectsCommand({ Bucket: bucket, MaxKeys: 2, Marker: 'a/2' }));
      expect(next.Contents?.map((c) => c.Key)).toEqual(['a/b/3', 'a/b/4']);
      expect(next.Marker).toBe('a/2');
      const seen: string[] = [];
      let marker: string | undefined;
      for (let i = 0; i < 20; i++) {
        const page = await client.send(new ListObjectsCommand({ Bucket: bucket, Delimiter: '/', MaxKeys: 2, Marker: marker }));
        seen.push(...(page.Contents ?? []).map((c) => c.Key!), ...(page.CommonPrefixes ?? []).map((p) => p.Prefix!));
        if (!page.IsTruncated) break;
        expect(page.NextMarker).toBeTruthy();
        marker = page.NextMarker;
      }
      expect(seen.sort()).toEqual(['a/', 'b/', 'c', 'd--x--1', 'd--x--2', 'd--y', 'e f', 'e+f', 'z']);
    });

    it('keys sort in UTF-8 byte order', async () => {
      const { client } = suite();
      const b = bucketName(mode, 'utf8-order');
      await client.send(new CreateBucketCommand({ Bucket: b }));
      const keys = ['\u{1F600}', '\uFF61', 'a', '\u00e9'];
      for (const key of keys) await client.send(new PutObjectCommand({ Bucket: b, Key: key, Body: 'x' }));
      const r = await client.send(new ListObjectsV2Command({ Bucket: b }));
      const sorted = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      expect(r.Contents?.map((c) => c.Key)).toEqual(sorted);
    });

    it('listing a missing bucket is NoSuchBucket', async () => {
      await expectS3Error(suite().client.send(new ListObjectsV2Command({ Bucket: 'absent-bucket' })), 'NoSuchBucket', 404);
    });
  });
}
