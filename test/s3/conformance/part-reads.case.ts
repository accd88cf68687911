/**
 * Conformance: GetObject / HeadObject with `partNumber` (parallel downloaders and awscli read a
 * multipart object part by part): 206 with that part's bytes, Content-Range and
 * x-amz-mp-parts-count; an object uploaded in one piece has one part; past the last part is 416
 * InvalidPartNumber. With checksum mode, a part read carries the part's own checksum and the
 * object's checksum type (s3-tests' multipart_checksum_3parts_helper); a Range read carries none.
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, bytesOf, crc32B64, expectS3Error, md5Hex, randomBytes, type ChecksumMode, type Suite } from './context.ts';

const MiB = 1024 * 1024;

export function partReadCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'part-reads');
  const client = () => suite().client;
  const parts = [randomBytes(5 * MiB, 31), randomBytes(5 * MiB + 17, 32), randomBytes(1000, 33)];
  const whole = Buffer.concat(parts);

  describe('reads by part number', () => {
    beforeAll(async () => {
      await client().send(new CreateBucketCommand({ Bucket: bucket }));
      const { UploadId } = await client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'three' }));
      const done = [];
      for (const [i, Body] of parts.entries()) {
        const r = await client().send(new UploadPartCommand({ Bucket: bucket, Key: 'three', UploadId, PartNumber: i + 1, Body }));
        done.push({ PartNumber: i + 1, ETag: r.ETag });
      }
      await client().send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'three', UploadId, MultipartUpload: { Parts: done } }));
      await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'single', Body: 'one piece' }));
    });

    it('GetObject PartNumber N: 206, the part bytes, Content-Range and PartsCount', async () => {
      let offset = 0;
      for (const [i, part] of parts.entries()) {
        const r = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'three', PartNumber: i + 1 }));
        expect(r.$metadata.httpStatusCode).toBe(206);
        expect(r.PartsCount).toBe(3);
        expect(r.ContentLength).toBe(part.length);
        expect(r.ContentRange).toBe(`bytes ${offset}-${offset + part.length - 1}/${whole.length}`);
        expect(r.ETag).toMatch(/-3"$/);
        expect(md5Hex(await bytesOf(r.Body))).toBe(md5Hex(part));
        offset += part.length;
      }
    });

    it('HeadObject PartNumber N reports the part without a body', async () => {
      const r = await client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'three', PartNumber: 2 }));
      expect(r.$metadata.httpStatusCode).toBe(206);
      expect({ length: r.ContentLength, parts: r.PartsCount, range: r.ContentRange }).toEqual({
        length: parts[1].length,
        parts: 3,
        range: `bytes ${5 * MiB}-${10 * MiB + 16}/${whole.length}`,
      });
    });

    it('an object uploaded in one piece has one part; past the last part is 416 InvalidPartNumber', async () => {
      const one = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'single', PartNumber: 1 }));
      expect(Buffer.from(await bytesOf(one.Body)).toString()).toBe('one piece');
      expect(one.PartsCount).toBeUndefined();
      await expectS3Error(client().send(new GetObjectCommand({ Bucket: bucket, Key: 'single', PartNumber: 2 })), 'InvalidPartNumber', 416);
      await expectS3Error(client().send(new GetObjectCommand({ Bucket: bucket, Key: 'three', PartNumber: 4 })), 'InvalidPartNumber', 416);
    });

    it("with checksum mode: the part's own checksum and the object's type (COMPOSITE, FULL_OBJECT, one piece); a Range none", async () => {
      const pieces = [randomBytes(5 * MiB, 41), randomBytes(1000, 42)];
      for (const type of ['COMPOSITE', 'FULL_OBJECT'] as const) {
        const Key = `crc32-${type}`;
        const { UploadId } = await client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key, ChecksumAlgorithm: 'CRC32', ChecksumType: type }));
        const done = [];
        for (const [i, Body] of pieces.entries()) {
          const r = await client().send(new UploadPartCommand({ Bucket: bucket, Key, UploadId, PartNumber: i + 1, Body, ChecksumCRC32: crc32B64(Body) }));
          done.push({ PartNumber: i + 1, ETag: r.ETag, ChecksumCRC32: r.ChecksumCRC32 });
        }
        await client().send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key, UploadId, MultipartUpload: { Parts: done } }));
        for (const [i, piece] of pieces.entries()) {
          const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key, PartNumber: i + 1, ChecksumMode: 'ENABLED' }));
          expect({ type: got.ChecksumType, crc32: got.ChecksumCRC32 }, `${type} part ${i + 1}`).toEqual({ type, crc32: crc32B64(piece) });
          expect(md5Hex(await bytesOf(got.Body))).toBe(md5Hex(piece));
          const head = await client().send(new HeadObjectCommand({ Bucket: bucket, Key, PartNumber: i + 1, ChecksumMode: 'ENABLED' }));
          expect({ type: head.ChecksumType, crc32: head.ChecksumCRC32 }).toEqual({ type, crc32: crc32B64(piece) });
        }
        const ranged = await client().send(new GetObjectCommand({ Bucket: bucket, Key, Range: 'bytes=0-9', ChecksumMode: 'ENABLED' }));
        expect(ranged.ChecksumCRC32).toBeUndefined();
        await bytesOf(ranged.Body);
      }
      const Body = randomBytes(3000, 43);
      await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'crc32-single', Body, ChecksumCRC32: crc32B64(Body) }));
      const one = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'crc32-single', PartNumber: 1, ChecksumMode: 'ENABLED' }));
      expect({ type: one.ChecksumType, crc32: one.ChecksumCRC32 }).toEqual({ type: 'FULL_OBJECT', crc32: crc32B64(Body) });
      await bytesOf(one.Body);
    });
  });
}
