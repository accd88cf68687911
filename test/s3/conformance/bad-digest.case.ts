/**
 * Conformance: a checksum the client sends that is not the body's, wrong or malformed (not even
 * base64 of the digest size, as ceph's s3-tests send `bad`), is BadDigest on PutObject,
 * UploadPart and CompleteMultipartUpload (whose full-object or composite value is checked against
 * the parts), and nothing is stored.
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { beforeAll, describe, it } from 'vitest';
import { bucketName, crc32B64, expectS3Error, sha256B64, type ChecksumMode, type Suite } from './context.ts';

const body = new TextEncoder().encode('the bytes that were sent');

export function badDigestCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'bad-digest');
  const client = () => suite().client;

  describe('BadDigest for wrong or malformed checksums', () => {
    beforeAll(async () => {
      await client().send(new CreateBucketCommand({ Bucket: bucket }));
    });

    it('PutObject: wrong and malformed x-amz-checksum-sha256 / -crc32 are BadDigest, nothing stored', async () => {
      for (const sums of [
        { ChecksumSHA256: 'bad' },
        { ChecksumSHA256: sha256B64(new Uint8Array([1])) },
        { ChecksumCRC32: 'AAAA' },
        { ChecksumCRC32: crc32B64(new Uint8Array([1])) },
      ]) {
        await expectS3Error(client().send(new PutObjectCommand({ Bucket: bucket, Key: 'put', Body: body, ...sums })), 'BadDigest', 400);
      }
      await expectS3Error(client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'put' })), 'NotFound', 404);
    });

    it('UploadPart: a malformed checksum is BadDigest and records no part', async () => {
      const { UploadId } = await client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'part', ChecksumAlgorithm: 'SHA256' }));
      const part = new UploadPartCommand({ Bucket: bucket, Key: 'part', UploadId, PartNumber: 1, Body: body, ChecksumSHA256: 'bad' });
      await expectS3Error(client().send(part), 'BadDigest', 400);
      const listed = await client().send(new ListPartsCommand({ Bucket: bucket, Key: 'part', UploadId }));
      if (listed.Parts?.length) throw new Error(`a part was recorded: ${JSON.stringify(listed.Parts)}`);
    });

    it('CompleteMultipartUpload: a malformed or wrong whole-object checksum is BadDigest; the upload stays open', async () => {
      const { UploadId } = await client().send(
        new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'complete', ChecksumAlgorithm: 'CRC32', ChecksumType: 'FULL_OBJECT' }),
      );
      const p = await client().send(
        new UploadPartCommand({ Bucket: bucket, Key: 'complete', UploadId, PartNumber: 1, Body: body, ChecksumCRC32: crc32B64(body) }),
      );
      const parts = [{ PartNumber: 1, ETag: p.ETag, ChecksumCRC32: p.ChecksumCRC32 }];
      for (const ChecksumCRC32 of ['bad', crc32B64(new Uint8Array([1]))]) {
        const complete = new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: 'complete',
          UploadId,
          MultipartUpload: { Parts: parts },
          ChecksumCRC32,
          ChecksumType: 'FULL_OBJECT',
        });
        await expectS3Error(client().send(complete), 'BadDigest', 400);
      }
      await expectS3Error(client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'complete' })), 'NotFound', 404);
      const done = await client().send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: 'complete',
          UploadId,
          MultipartUpload: { Parts: parts },
          ChecksumCRC32: crc32B64(body),
          ChecksumType: 'FULL_OBJECT',
        }),
      );
      if (done.ChecksumCRC32 !== crc32B64(body)) throw new Error(`completed with ${done.ChecksumCRC32}`);
    });
  });
}
