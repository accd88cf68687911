/** Conformance: ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation. */
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  GetBucketLocationCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  PutObjectCommand,
  DeleteObjectCommand,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { bucketName, expectS3Error, type Suite } from './context.ts';

export function bucketCases(suite: Suite): void {
  describe('buckets', () => {
    const name = () => bucketName(suite().mode, 'life-cycle');

    it('CreateBucket, HeadBucket, ListBuckets, GetBucketLocation', async () => {
      const { client } = suite();
      const created = await client.send(new CreateBucketCommand({ Bucket: name() }));
      expect(created.$metadata.httpStatusCode).toBe(200);
      expect(created.Location).toBe(`/${name()}`);
      const head = await client.send(new HeadBucketCommand({ Bucket: name() }));
      expect(head.BucketRegion).toBe('us-east-1');
      const list = await client.send(new ListBucketsCommand({}));
      expect(list.Buckets?.map((b) => b.Name)).toContain(name());
      expect(list.Buckets?.find((b) => b.Name === name())?.CreationDate).toBeInstanceOf(Date);
      expect(list.Owner?.ID).toBeTruthy();
      const location = await client.send(new GetBucketLocationCommand({ Bucket: name() }));
      expect(location.LocationConstraint ?? '').toBe('');
    });

    it('ListBuckets filters by prefix and pages with max-buckets', async () => {
      const { client, mode } = suite();
      const prefix = `pages-${mode[0]}-`;
      for (const n of ['a', 'b', 'c']) await client.send(new CreateBucketCommand({ Bucket: prefix + n }));
      const first = await client.send(new ListBucketsCommand({ Prefix: prefix, MaxBuckets: 2 }));
      expect(first.Buckets?.map((b) => b.Name)).toEqual([prefix + 'a', prefix + 'b']);
      expect(first.ContinuationToken).toBeTruthy();
      const second = await client.send(new ListBucketsCommand({ Prefix: prefix, MaxBuckets: 2, ContinuationToken: first.ContinuationToken }));
      expect(second.Buckets?.map((b) => b.Name)).toEqual([prefix + 'c']);
      expect(second.ContinuationToken).toBeUndefined();
    });

    it('CreateBucket twice in us-east-1 is 200, as S3 answers there (409 BucketAlreadyOwnedByYou elsewhere: app.test.ts)', async () => {
      const again = await suite().client.send(new CreateBucketCommand({ Bucket: name() }));
      expect(again.$metadata.httpStatusCode).toBe(200);
    });

    it('CreateBucket with an invalid name is InvalidBucketName', async () => {
      await expectS3Error(suite().client.send(new CreateBucketCommand({ Bucket: 'ab' })), 'InvalidBucketName', 400);
      await expectS3Error(suite().client.send(new CreateBucketCommand({ Bucket: 'Upper-Case' })), 'InvalidBucketName', 400);
    });

    it('CreateBucket with another region as LocationConstraint is refused', async () => {
      const cmd = new CreateBucketCommand({ Bucket: bucketName(suite().mode, 'elsewhere'), CreateBucketConfiguration: { LocationConstraint: 'eu-west-1' } });
      await expectS3Error(suite().client.send(cmd), 'InvalidArgument', 400);
    });

    it('DeleteBucket refuses a non-empty bucket, then deletes it', async () => {
      const { client } = suite();
      await client.send(new PutObjectCommand({ Bucket: name(), Key: 'k', Body: 'x' }));
      await expectS3Error(client.send(new DeleteBucketCommand({ Bucket: name() })), 'BucketNotEmpty', 409);
      await client.send(new DeleteObjectCommand({ Bucket: name(), Key: 'k' }));
      const deleted = await client.send(new DeleteBucketCommand({ Bucket: name() }));
      expect(deleted.$metadata.httpStatusCode).toBe(204);
      await expectS3Error(client.send(new HeadBucketCommand({ Bucket: name() })), 'NotFound', 404);
      await expectS3Error(client.send(new DeleteBucketCommand({ Bucket: name() })), 'NoSuchBucket', 404);
    });
  });
}
