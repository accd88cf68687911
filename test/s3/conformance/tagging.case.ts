/**
 * Conformance: object and bucket tagging (Put/Get/DeleteObjectTagging, x-amz-tagging on PutObject,
 * CopyObject with its directive and CreateMultipartUpload, x-amz-tagging-count on GET/HEAD,
 * Put/Get/DeleteBucketTagging) and S3's limits, each violation InvalidTag.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketTaggingCommand,
  DeleteObjectTaggingCommand,
  GetBucketTaggingCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  PutBucketTaggingCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, expectS3Error, type ChecksumMode, type Suite } from './context.ts';

const tagSet = (n: number, key = (i: number) => `k${i}`, value = (i: number) => `v${i}`) =>
  Array.from({ length: n }, (_, i) => ({ Key: key(i), Value: value(i) }));

export function taggingCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'tagging');
  const client = () => suite().client;
  const tagsOf = async (Key: string) => (await client().send(new GetObjectTaggingCommand({ Bucket: bucket, Key }))).TagSet;

  describe('tagging', () => {
    beforeAll(async () => {
      await client().send(new CreateBucketCommand({ Bucket: bucket }));
    });

    it('PutObject with x-amz-tagging; GET/HEAD report the count; Put replaces, Delete empties', async () => {
      await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'a', Body: 'data', Tagging: 'z=1&b=two%20words&empty' }));
      expect(await tagsOf('a')).toEqual([
        { Key: 'b', Value: 'two words' },
        { Key: 'empty', Value: '' },
        { Key: 'z', Value: '1' },
      ]);
      expect((await client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'a' }))).TagCount).toBe(3);
      const got = await client().send(new GetObjectCommand({ Bucket: bucket, Key: 'a' }));
      expect(got.TagCount).toBe(3);
      expect(await got.Body!.transformToString()).toBe('data');

      await client().send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'a', Tagging: { TagSet: [{ Key: 'only', Value: 'one' }] } }));
      expect(await tagsOf('a')).toEqual([{ Key: 'only', Value: 'one' }]);
      const etag = (await client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'a' }))).ETag;
      expect(etag).toBe('"8d777f385d3dfec8815d20f7496026dc"'); // data untouched
      const deleted = await client().send(new DeleteObjectTaggingCommand({ Bucket: bucket, Key: 'a' }));
      expect(deleted.$metadata.httpStatusCode).toBe(204);
      expect(await tagsOf('a')).toEqual([]);
      expect((await client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'a' }))).TagCount).toBeUndefined();
      await expectS3Error(client().send(new GetObjectTaggingCommand({ Bucket: bucket, Key: 'nope' })), 'NoSuchKey', 404);
      await expectS3Error(client().send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'nope', Tagging: { TagSet: [] } })), 'NoSuchKey', 404);
    });

    it('limits: 10 tags, key 128 and value 256 characters, unique keys, no aws: prefix; each InvalidTag, nothing changed', async () => {
      await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'lim', Body: 'x', Tagging: 'keep=1' }));
      await client().send(
        new PutObjectTaggingCommand({
          Bucket: bucket,
          Key: 'lim',
          Tagging: {
            TagSet: tagSet(
              10,
              (i) => `${i}`.padStart(128, 'k'),
              () => 'v'.repeat(256),
            ),
          },
        }),
      );
      expect(await tagsOf('lim')).toHaveLength(10);
      for (const TagSet of [
        tagSet(11),
        tagSet(1, () => 'k'.repeat(129)),
        tagSet(1, undefined, () => 'v'.repeat(257)),
        [
          { Key: 'd', Value: '1' },
          { Key: 'd', Value: '2' },
        ],
        [{ Key: 'aws:x', Value: '1' }],
        [{ Key: 'bad<', Value: '1' }],
      ]) {
        await expectS3Error(client().send(new PutObjectTaggingCommand({ Bucket: bucket, Key: 'lim', Tagging: { TagSet } })), 'InvalidTag', 400);
      }
      expect(await tagsOf('lim')).toHaveLength(10);
      await expectS3Error(
        client().send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: 'lim2',
            Body: 'x',
            Tagging: tagSet(11)
              .map((t) => `${t.Key}=${t.Value}`)
              .join('&'),
          }),
        ),
        'InvalidTag',
        400,
      );
      await expectS3Error(client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'lim2' })), 'NotFound', 404);
    });

    it('CopyObject: the source tags by default (COPY), the request tags with REPLACE', async () => {
      await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'src', Body: 'copy me', Tagging: 'from=source' }));
      await client().send(new CopyObjectCommand({ Bucket: bucket, Key: 'c1', CopySource: `${bucket}/src` }));
      expect(await tagsOf('c1')).toEqual([{ Key: 'from', Value: 'source' }]);
      await client().send(new CopyObjectCommand({ Bucket: bucket, Key: 'c2', CopySource: `${bucket}/src`, TaggingDirective: 'REPLACE', Tagging: 'new=tag' }));
      expect(await tagsOf('c2')).toEqual([{ Key: 'new', Value: 'tag' }]);
      await client().send(
        new CopyObjectCommand({
          Bucket: bucket,
          Key: 'c3',
          CopySource: `${bucket}/src`,
          TaggingDirective: 'REPLACE',
          MetadataDirective: 'REPLACE',
          ContentType: 'text/x',
        }),
      );
      expect(await tagsOf('c3')).toEqual([]);
      await client().send(
        new CopyObjectCommand({ Bucket: bucket, Key: 'c4', CopySource: `${bucket}/src`, MetadataDirective: 'REPLACE', ContentType: 'text/x' }),
      );
      expect(await tagsOf('c4')).toEqual([{ Key: 'from', Value: 'source' }]);
    });

    it('CreateMultipartUpload with x-amz-tagging: the completed object has the tags', async () => {
      const { UploadId } = await client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'mpu', Tagging: 'Hello=World&foo=bar' }));
      const part = await client().send(new UploadPartCommand({ Bucket: bucket, Key: 'mpu', UploadId, PartNumber: 1, Body: 'part' }));
      await client().send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: 'mpu',
          UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag, ChecksumCRC32: part.ChecksumCRC32 }] },
        }),
      );
      expect(await tagsOf('mpu')).toEqual([
        { Key: 'Hello', Value: 'World' },
        { Key: 'foo', Value: 'bar' },
      ]);
    });

    it('bucket tags: NoSuchTagSet until set, 50 at most, Delete 204', async () => {
      await expectS3Error(client().send(new GetBucketTaggingCommand({ Bucket: bucket })), 'NoSuchTagSet', 404);
      await client().send(new PutBucketTaggingCommand({ Bucket: bucket, Tagging: { TagSet: tagSet(50) } }));
      expect((await client().send(new GetBucketTaggingCommand({ Bucket: bucket }))).TagSet).toHaveLength(50);
      await expectS3Error(client().send(new PutBucketTaggingCommand({ Bucket: bucket, Tagging: { TagSet: tagSet(51) } })), 'InvalidTag', 400);
      await client().send(new PutBucketTaggingCommand({ Bucket: bucket, Tagging: { TagSet: [{ Key: 'Hello', Value: 'World' }] } }));
      expect((await client().send(new GetBucketTaggingCommand({ Bucket: bucket }))).TagSet).toEqual([{ Key: 'Hello', Value: 'World' }]);
      const deleted = await client().send(new DeleteBucketTaggingCommand({ Bucket: bucket }));
      expect(deleted.$metadata.httpStatusCode).toBe(204);
      await expectS3Error(client().send(new GetBucketTaggingCommand({ Bucket: bucket })), 'NoSuchTagSet', 404);
      await expectS3Error(client().send(new GetBucketTaggingCommand({ Bucket: `missing-${bucket}` })), 'NoSuchBucket', 404);
    });
  });
}
