/**
 * Conformance: GetObjectAttributes (ETag without quotes, Checksum with its type, ObjectParts with
 * per-part sizes and checksums, paged, StorageClass, ObjectSize), and CompleteMultipartUpload
 * verifying a composite checksum in the form S3 returns it (`<base64>-<N>`).
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectAttributesCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, crc32B64, expectS3Error, md5Hex, randomBytes, type ChecksumMode, type Suite } from './context.ts';

const MiB = 1024 * 1024;
const ALL = ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'] as const;

export function objectAttributeCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'attributes');
  const client = () => suite().client;
  const attributes = (Key: string, extra: object = {}) =>
    client().send(new GetObjectAttributesCommand({ Bucket: bucket, Key, ObjectAttributes: [...ALL], ...extra }));

  describe('GetObjectAttributes and composite checksums', () => {
    const parts = [randomBytes(5 * MiB, 31), randomBytes(5 * MiB, 32), randomBytes(1000, 33)];
    let done: CompletedPart[] = [];
    let composite = '';

    beforeAll(async () => {
      await client().send(new CreateBucketCommand({ Bucket: bucket }));
    });

    it('a single PUT: ETag, Checksum, StorageClass, ObjectSize, no ObjectParts', async () => {
      const body = randomBytes(3000, 30);
      await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'one', Body: body, ChecksumAlgorithm: 'SHA256' }));
      const r = await attributes('one');
      expect(r.ETag).toBe(md5Hex(body));
      expect(r.Checksum).toEqual({ ChecksumSHA256: createHash('sha256').update(body).digest('base64'), ChecksumType: 'FULL_OBJECT' });
      expect(r.StorageClass).toBe('STANDARD');
      expect(r.ObjectSize).toBe(3000);
      expect(r.ObjectParts).toBeUndefined();
      expect(r.LastModified).toBeInstanceOf(Date);
      const only = await client().send(new GetObjectAttributesCommand({ Bucket: bucket, Key: 'one', ObjectAttributes: ['ObjectSize'] }));
      expect([only.ObjectSize, only.ETag, only.StorageClass]).toEqual([3000, undefined, undefined]);
      await expectS3Error(attributes('nope'), 'NoSuchKey', 404);
    });

    it('Complete accepts the composite checksum S3 returns (<base64>-N) and refuses a wrong one or a wrong part count', async () => {
      const { UploadId } = await client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'multi', ChecksumAlgorithm: 'CRC32' }));
      done = [];
      for (const [i, body] of parts.entries()) {
        const r = await client().send(
          new UploadPartCommand({ Bucket: bucket, Key: 'multi', UploadId, PartNumber: i + 1, Body: body, ChecksumAlgorithm: 'CRC32' }),
        );
        expect(r.ChecksumCRC32).toBe(crc32B64(body));
        done.push({ PartNumber: i + 1, ETag: r.ETag, ChecksumCRC32: r.ChecksumCRC32 });
      }
      const raw = Buffer.concat(parts.map((p) => Buffer.from(crc32B64(p), 'base64')));
      composite = `${crc32B64(raw)}-3`;
      const complete = (ChecksumCRC32: string) =>
        client().send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: 'multi', UploadId, ChecksumCRC32, MultipartUpload: { Parts: done } }));
      await expectS3Error(complete(`${crc32B64(raw)}-2`), 'BadDigest', 400);
      await expectS3Error(complete(`${crc32B64(new Uint8Array(1))}-3`), 'BadDigest', 400);
      const r = await complete(composite);
      expect([r.ChecksumCRC32, r.ChecksumType]).toEqual([composite, 'COMPOSITE']);
    });

    it('a multipart object: ObjectParts with each part size and checksum, paged by MaxParts and PartNumberMarker', async () => {
      const r = await attributes('multi');
      expect(r.ETag).toMatch(/^[0-9a-f]{32}-3$/);
      expect(r.Checksum).toEqual({ ChecksumCRC32: composite, ChecksumType: 'COMPOSITE' });
      expect(r.ObjectSize).toBe(10 * MiB + 1000);
      expect(r.ObjectParts).toMatchObject({ TotalPartsCount: 3, IsTruncated: false, MaxParts: 1000 });
      expect(r.ObjectParts!.Parts).toEqual(parts.map((p, i) => ({ PartNumber: i + 1, Size: p.length, ChecksumCRC32: crc32B64(p) })));
      const page = await attributes('multi', { MaxParts: 1, PartNumberMarker: 1 });
      expect(page.ObjectParts).toMatchObject({ TotalPartsCount: 3, IsTruncated: true, MaxParts: 1 });
      // The JS SDK's model types the markers as strings (botocore: integers); the XML holds numbers.
      expect([Number(page.ObjectParts!.PartNumberMarker), Number(page.ObjectParts!.NextPartNumberMarker)]).toEqual([1, 2]);
      expect(page.ObjectParts!.Parts!.map((p) => p.PartNumber)).toEqual([2]);
    });
  });
}
