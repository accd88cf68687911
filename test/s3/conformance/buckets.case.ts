/** Conformance: ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation. */
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  GetBucketLocationCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  PutBucketVersioningCommand,
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

    it("HeadBucket with RGW's read-stats=true answers the bucket's object count and bytes (X-RGW-*), over every version", async () => {
      const { client, mode } = suite();
      const bucket = bucketName(mode, 'read-stats');
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      const stats = async (readStats: string | null) => {
        const command = new HeadBucketCommand({ Bucket: bucket });
        let headers: Record<string, string> = {};
        if (readStats !== null) {
          command.middlewareStack.add(
            (next) => async (args) => {
              (args.request as { query: Record<string, string> }).query['read-stats'] = readStats;
              return next(args);
            },
            { step: 'build' },
          );
        }
        command.middlewareStack.add(
          (next) => async (args) => {
            const out = await next(args);
            headers = (out.response as { headers: Record<string, string> }).headers;
            return out;
          },
          { step: 'deserialize' },
        );
        await client.send(command);
        return headers;
      };
      expect(await stats('true')).toMatchObject({ 'x-rgw-object-count': '0', 'x-rgw-bytes-used': '0', 'x-rgw-quota-bucket-size': '-1' });
      for (const [key, body] of [
        ['foo', 'foo'],
        ['bar', 'barbar'],
        ['foo', 'fo'],
      ])
        await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
      // Unversioned: the second 'foo' replaced the first.
      expect(await stats('true')).toMatchObject({ 'x-rgw-object-count': '2', 'x-rgw-bytes-used': '8' });
      await client.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: 'bar', Body: 'b' }));
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'foo' })); // a delete marker: holds nothing
      expect(await stats('true')).toMatchObject({ 'x-rgw-object-count': '3', 'x-rgw-bytes-used': '9' });
      // Without the parameter (or with another value) HeadBucket answers as AWS does: no X-RGW-* header.
      for (const plain of [await stats(null), await stats('false')]) expect(Object.keys(plain).filter((h) => h.startsWith('x-rgw-'))).toEqual([]);
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

    it("CreateBucket with another region as LocationConstraint is IllegalLocationConstraintException, with a name that is no region InvalidLocationConstraint (AWS's codes)", async () => {
      const create = (constraint: string) =>
        suite().client.send(
          new CreateBucketCommand({
            Bucket: bucketName(suite().mode, 'elsewhere'),
            CreateBucketConfiguration: { LocationConstraint: constraint as 'eu-west-1' },
          }),
        );
      await expectS3Error(create('eu-west-1'), 'IllegalLocationConstraintException', 400);
      await expectS3Error(create('EU'), 'IllegalLocationConstraintException', 400);
      await expectS3Error(create('default'), 'InvalidLocationConstraint', 400);
      await expectS3Error(suite().client.send(new HeadBucketCommand({ Bucket: bucketName(suite().mode, 'elsewhere') })), 'NotFound', 404);
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
