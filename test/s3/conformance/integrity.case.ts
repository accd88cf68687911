/**
 * Conformance: Range reads, conditional GET/HEAD, conditional PutObject, Content-MD5 and
 * flexible checksums (stored, returned with x-amz-checksum-mode: ENABLED, never for a range).
 */
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, type ChecksumAlgorithm } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, bytesOf, crc32B64, expectS3Error, md5B64, randomBytes, sha256B64, type ChecksumMode, type Suite } from './context.ts';

export function integrityCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'integrity');
  const data = randomBytes(1000, 5);
  let etag = '';

  describe('ranges and conditionals', () => {
    beforeAll(async () => {
      const { client } = suite();
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      etag = (await client.send(new PutObjectCommand({ Bucket: bucket, Key: 'thousand', Body: data }))).ETag!;
    });

    const get = (extra: Partial<ConstructorParameters<typeof GetObjectCommand>[0]>) =>
      suite().client.send(new GetObjectCommand({ Bucket: bucket, Key: 'thousand', ...extra }));

    it.each([
      ['bytes=10-19', 10, 19],
      ['bytes=990-', 990, 999],
      ['bytes=-5', 995, 999],
      ['bytes=-5000', 0, 999],
      ['bytes=500-100000', 500, 999],
      ['bytes=0-0', 0, 0],
    ])('Range %s is 206 with Content-Range', async (range, start, end) => {
      const r = await get({ Range: range });
      expect(r.$metadata.httpStatusCode).toBe(206);
      expect(r.ContentRange).toBe(`bytes ${start}-${end}/1000`);
      expect(r.ContentLength).toBe(end - start + 1);
      expect(Buffer.from(await bytesOf(r.Body)).equals(Buffer.from(data.subarray(start, end + 1)))).toBe(true);
    });

    it('an unsatisfiable Range is 416 InvalidRange', async () => {
      await expectS3Error(get({ Range: 'bytes=1000-' }), 'InvalidRange', 416);
      await expectS3Error(get({ Range: 'bytes=-0' }), 'InvalidRange', 416);
    });

    it('HeadObject with a Range reports the range', async () => {
      const r = await suite().client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'thousand', Range: 'bytes=100-199' }));
      expect(r.$metadata.httpStatusCode).toBe(206);
      expect(r.ContentLength).toBe(100);
      expect(r.ContentRange).toBe('bytes 100-199/1000');
    });

    it('If-Match / If-Unmodified-Since: pass or 412', async () => {
      expect((await get({ IfMatch: etag })).$metadata.httpStatusCode).toBe(200);
      expect((await get({ IfMatch: `"other", ${etag}` })).$metadata.httpStatusCode).toBe(200);
      await expectS3Error(get({ IfMatch: '"0123"' }), 'PreconditionFailed', 412);
      await expectS3Error(get({ IfUnmodifiedSince: new Date('2001-01-01T00:00:00Z') }), 'PreconditionFailed', 412);
      expect((await get({ IfUnmodifiedSince: new Date(Date.now() + 3_600_000) })).$metadata.httpStatusCode).toBe(200);
      // If-Match wins over a failing If-Unmodified-Since (RFC 9110, as S3 documents).
      expect((await get({ IfMatch: etag, IfUnmodifiedSince: new Date('2001-01-01T00:00:00Z') })).$metadata.httpStatusCode).toBe(200);
    });

    it('If-None-Match / If-Modified-Since: pass or 304', async () => {
      await expectS3Error(get({ IfNoneMatch: etag }), null, 304);
      await expectS3Error(get({ IfNoneMatch: '*' }), null, 304);
      expect((await get({ IfNoneMatch: '"0123"' })).$metadata.httpStatusCode).toBe(200);
      await expectS3Error(get({ IfModifiedSince: new Date(Date.now() + 3_600_000) }), null, 304);
      expect((await get({ IfModifiedSince: new Date('2001-01-01T00:00:00Z') })).$metadata.httpStatusCode).toBe(200);
      const head = suite().client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'thousand', IfNoneMatch: etag }));
      await expectS3Error(head, null, 304);
      const head412 = suite().client.send(new HeadObjectCommand({ Bucket: bucket, Key: 'thousand', IfMatch: '"0123"' }));
      await expectS3Error(head412, null, 412); // HEAD: no body, so no code for the SDK to read
    });

    it('conditional PutObject: If-None-Match * and If-Match', async () => {
      const { client } = suite();
      const put = (key: string, extra: object) => client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'v', ...extra }));
      await expectS3Error(put('thousand', { IfNoneMatch: '*' }), 'PreconditionFailed', 412);
      const created = await put('fresh-key', { IfNoneMatch: '*' });
      await expectS3Error(put('fresh-key', { IfNoneMatch: '*' }), 'PreconditionFailed', 412);
      await expectS3Error(put('fresh-key', { IfMatch: '"0123"' }), 'PreconditionFailed', 412);
      expect((await put('fresh-key', { IfMatch: created.ETag })).$metadata.httpStatusCode).toBe(200);
      await expectS3Error(put('never-existed', { IfMatch: created.ETag }), 'NoSuchKey', 404);
      const unchanged = await client.send(new GetObjectCommand({ Bucket: bucket, Key: 'thousand' }));
      expect(unchanged.ETag).toBe(etag);
    });
  });

  describe('checksums', () => {
    const client = () => suite().client;

    it('Content-MD5 is verified: BadDigest on mismatch, nothing stored', async () => {
      const ok = await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'md5-ok', Body: 'abc', ContentMD5: md5B64('abc') }));
      expect(ok.$metadata.httpStatusCode).toBe(200);
      await expectS3Error(client().send(new PutObjectCommand({ Bucket: bucket, Key: 'md5-bad', Body: 'abc', ContentMD5: md5B64('abd') })), 'BadDigest', 400);
      await expectS3Error(client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'md5-bad' })), 'NotFound', 404);
    });

    it(`the default checksum (${mode === 'defaults' ? 'CRC32 sent by the SDK' : 'none sent'}) is stored and returned in checksum mode`, async () => {
      const body = randomBytes(4096, 9);
      const put = await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'default-sum', Body: body }));
      const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'default-sum', ChecksumMode: 'ENABLED' }));
      await bytesOf(got.Body);
      if (mode === 'defaults') {
        expect(put.ChecksumCRC32).toBe(crc32B64(body));
        expect(got.ChecksumCRC32).toBe(crc32B64(body));
        expect(got.ChecksumType).toBe('FULL_OBJECT');
      } else {
        expect(put.ChecksumCRC32).toBeUndefined();
        expect(got.ChecksumCRC32).toBeUndefined();
      }
    });

    it.each(['CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'] as ChecksumAlgorithm[])('ChecksumAlgorithm %s is verified, stored and returned', async (alg) => {
      const body = randomBytes(70_000, alg.length);
      const key = `sum-${alg}`;
      const put = await client().send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ChecksumAlgorithm: alg }));
      const field = `Checksum${alg}` as const;
      expect(put[field]).toBeTruthy();
      const head = await client().send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
      expect(head[field]).toBe(put[field]);
      const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }));
      expect(got[field]).toBe(put[field]);
      expect(Buffer.from(await bytesOf(got.Body)).equals(Buffer.from(body))).toBe(true);
      if (alg === 'SHA256') expect(got.ChecksumSHA256).toBe(sha256B64(body));
      if (alg === 'CRC32') expect(got.ChecksumCRC32).toBe(crc32B64(body));
    });

    it('a wrong checksum value is BadDigest and stores nothing', async () => {
      const cmd = new PutObjectCommand({ Bucket: bucket, Key: 'bad-sum', Body: 'some bytes', ChecksumCRC32: 'AAAAAA==' });
      await expectS3Error(client().send(cmd), 'BadDigest', 400);
      const cmd2 = new PutObjectCommand({ Bucket: bucket, Key: 'bad-sum', Body: 'some bytes', ChecksumSHA256: sha256B64(new Uint8Array([1])) });
      await expectS3Error(client().send(cmd2), 'BadDigest', 400);
      await expectS3Error(client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'bad-sum' })), 'NotFound', 404);
    });

    it('no checksum is returned for a Range, nor without checksum mode', async () => {
      await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'ranged-sum', Body: data, ChecksumAlgorithm: 'SHA256' }));
      const ranged = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'ranged-sum', Range: 'bytes=0-9', ChecksumMode: 'ENABLED' }));
      expect(ranged.ChecksumSHA256).toBeUndefined();
      expect((await bytesOf(ranged.Body)).length).toBe(10);
      const plain = await client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'ranged-sum' }));
      expect(plain.ChecksumSHA256).toBeUndefined();
    });
  });
}
