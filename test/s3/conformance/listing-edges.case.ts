/**
 * Conformance: listing edges S3 clients and test suites reach.
 * - `continuation-token=` (empty) lists from the start and is echoed.
 * - With a delimiter, a common prefix that sorts at or before StartAfter is not returned, even
 *   when keys under it sort after StartAfter (StartAfter `a/b` with keys under `a/`); v1 Marker too.
 * - Keys with TAB, LF, CR and DEL are stored and listed exactly, with and without encoding-type=url.
 */
import { CreateBucketCommand, ListObjectsCommand, ListObjectsV2Command, PutObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, bytesOf, type ChecksumMode, type Suite } from './context.ts';

const KEYS = ['a/a', 'a/c', 'a/d/e', 'b', 'c/1'];
const CONTROL_KEYS = ['ctl/tab\there', 'ctl/line\nfeed', 'ctl/carriage\rreturn', 'ctl/del\x7f', 'ctl/crlf\r\nend'];

export function listingEdgeCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'list-edges');
  const client = () => suite().client;

  describe('listing edges', () => {
    beforeAll(async () => {
      await client().send(new CreateBucketCommand({ Bucket: bucket }));
      for (const key of [...KEYS, ...CONTROL_KEYS]) await client().send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }));
    });

    it('an empty continuation-token lists from the start and is echoed', async () => {
      const r = await client().send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: '', Prefix: 'a' }));
      expect(r.ContinuationToken).toBe('');
      expect(r.Contents?.map((c) => c.Key)).toEqual(['a/a', 'a/c', 'a/d/e']);
      expect(r.IsTruncated).toBe(false);
    });

    it('a common prefix at or before StartAfter / Marker is not returned again', async () => {
      const v2 = await client().send(new ListObjectsV2Command({ Bucket: bucket, Delimiter: '/', StartAfter: 'a/b' }));
      expect(v2.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['c/', 'ctl/']);
      expect(v2.Contents?.map((c) => c.Key)).toEqual(['b']);
      const v1 = await client().send(new ListObjectsCommand({ Bucket: bucket, Delimiter: '/', Marker: 'a/b' }));
      expect(v1.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['c/', 'ctl/']);
      expect(v1.Contents?.map((c) => c.Key)).toEqual(['b']);
      const inner = await client().send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'a/', Delimiter: '/', StartAfter: 'a/d/0' }));
      expect(inner.CommonPrefixes ?? []).toEqual([]);
      expect(inner.Contents ?? []).toEqual([]);
    });

    it('keys with TAB, LF, CR and DEL round-trip and list exactly, with and without encoding-type=url', async () => {
      for (const key of CONTROL_KEYS) {
        const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        expect(Buffer.from(await bytesOf(got.Body)).toString(), JSON.stringify(key)).toBe(key);
      }
      const sorted = [...CONTROL_KEYS].sort();
      const plain = await client().send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'ctl/' }));
      expect(plain.Contents?.map((c) => c.Key)).toEqual(sorted);
      const encoded = await client().send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'ctl/', EncodingType: 'url' }));
      expect(encoded.Contents?.map((c) => decodeURIComponent(c.Key!))).toEqual(sorted);
    });
  });
}
