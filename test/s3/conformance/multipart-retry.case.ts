/**
 * Conformance: what clients that retry and race see from multipart uploads.
 * - CompleteMultipartUpload repeated after it succeeded (an SDK retrying after a timeout) is 200
 *   with the same ETag and checksum; ListParts on the completed upload stays NoSuchUpload.
 * - The same part number uploaded twice at once: the upload that completes last is the part; a
 *   Complete naming its ETag succeeds, also when the list names both uploads of the part (as
 *   ceph's s3-tests test_multipart_resend_first_finishes_last does); the other ETag alone is
 *   InvalidPart.
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListPartsCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, bytesOf, crc32B64, expectS3Error, md5Hex, type ChecksumMode, type Suite } from './context.ts';

export function multipartRetryCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'mp-retry');
  const client = () => suite().client;

  describe('multipart retries and races', () => {
    beforeAll(async () => {
      await client().send(new CreateBucketCommand({ Bucket: bucket }));
    });

    it('CompleteMultipartUpload repeated after success answers 200 with the same ETag', async () => {
      const body = new TextEncoder().encode('one part, completed twice');
      const { UploadId } = await client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'twice', ChecksumAlgorithm: 'CRC32' }));
      const p = await client().send(
        new UploadPartCommand({ Bucket: bucket, Key: 'twice', UploadId, PartNumber: 1, Body: body, ChecksumCRC32: crc32B64(body) }),
      );
      const complete = () =>
        client().send(
          new CompleteMultipartUploadCommand({
            Bucket: bucket,
            Key: 'twice',
            UploadId,
            MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p.ETag, ChecksumCRC32: p.ChecksumCRC32 }] },
          }),
        );
      const first = await complete();
      const again = await complete();
      expect(again.$metadata.httpStatusCode).toBe(200);
      expect({ etag: again.ETag, crc: again.ChecksumCRC32, key: again.Key, bucket: again.Bucket }).toEqual({
        etag: first.ETag,
        crc: first.ChecksumCRC32,
        key: 'twice',
        bucket,
      });
      await expectS3Error(client().send(new ListPartsCommand({ Bucket: bucket, Key: 'twice', UploadId })), 'NoSuchUpload', 404);
      // Another key, or an id that never existed, is still NoSuchUpload.
      const other = new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: 'not-twice',
        UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: p.ETag }] },
      });
      await expectS3Error(client().send(other), 'NoSuchUpload', 404);
      const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'twice' }));
      expect(Buffer.from(await bytesOf(got.Body)).toString()).toBe('one part, completed twice');
    });

    it('two uploads of one part at once: the one that completes last is the part', async () => {
      const a = Buffer.alloc(100_000, 'A');
      const b = Buffer.alloc(100_000, 'B');
      const { UploadId } = await client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'race' }));
      // Upload A starts first and is held half-way until upload B of the same part has finished.
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      async function* slowA() {
        yield a.subarray(0, 50_000);
        await held;
        yield a.subarray(50_000);
      }
      const partA = client().send(
        new UploadPartCommand({ Bucket: bucket, Key: 'race', UploadId, PartNumber: 1, Body: Readable.from(slowA()), ContentLength: a.length }),
      );
      const partB = await client().send(new UploadPartCommand({ Bucket: bucket, Key: 'race', UploadId, PartNumber: 1, Body: b }));
      release();
      const etagA = (await partA).ETag!;
      expect([etagA, partB.ETag]).toEqual([`"${md5Hex(a)}"`, `"${md5Hex(b)}"`]);
      const listed = await client().send(new ListPartsCommand({ Bucket: bucket, Key: 'race', UploadId }));
      expect(listed.Parts?.map((p) => [p.PartNumber, p.ETag])).toEqual([[1, etagA]]);
      const complete = (Parts: { PartNumber: number; ETag: string }[]) =>
        client().send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'race', UploadId, MultipartUpload: { Parts } }));
      await expectS3Error(complete([{ PartNumber: 1, ETag: partB.ETag! }]), 'InvalidPart', 400);
      const done = await complete([
        { PartNumber: 1, ETag: partB.ETag! },
        { PartNumber: 1, ETag: etagA },
      ]);
      expect(done.ETag).toMatch(/-1"$/);
      const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'race' }));
      expect(md5Hex(await bytesOf(got.Body))).toBe(md5Hex(a));
    });
  });
}
