/**
 * Conformance: reads of configurations the gateway never holds answer as S3 does for a bucket
 * where nothing was configured (never 501), NoSuchBucket first; ACLs as on a bucket with
 * Object Ownership "bucket owner enforced" (ACLs disabled).
 */
import {
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetBucketAccelerateConfigurationCommand,
  GetBucketAclCommand,
  GetBucketEncryptionCommand,
  GetBucketLifecycleConfigurationCommand,
  GetBucketLoggingCommand,
  GetBucketNotificationConfigurationCommand,
  GetBucketOwnershipControlsCommand,
  GetBucketPolicyCommand,
  GetBucketPolicyStatusCommand,
  GetBucketReplicationCommand,
  GetBucketRequestPaymentCommand,
  GetBucketWebsiteCommand,
  GetObjectAclCommand,
  GetObjectLockConfigurationCommand,
  GetPublicAccessBlockCommand,
  HeadObjectCommand,
  PutBucketAclCommand,
  PutBucketOwnershipControlsCommand,
  DeleteBucketOwnershipControlsCommand,
  PutBucketWebsiteCommand,
  PutObjectAclCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, expectS3Error, type ChecksumMode, type Suite } from './context.ts';

export function configReadCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'config-reads');
  const missing = `missing-${bucket}`;
  const client = () => suite().client;

  describe('configuration reads and ACLs', () => {
    beforeAll(async () => {
      await client().send(new CreateBucketCommand({ Bucket: bucket }));
      await client().send(new PutObjectCommand({ Bucket: bucket, Key: 'obj', Body: 'data' }));
    });

    it('encryption: the SSE-S3 default (AES256) of a bucket sealed by its policy; NoSuchBucket for a missing one', async () => {
      const r = await client().send(new GetBucketEncryptionCommand({ Bucket: bucket }));
      expect(r.ServerSideEncryptionConfiguration?.Rules?.[0]?.ApplyServerSideEncryptionByDefault?.SSEAlgorithm).toBe('AES256');
      await expectS3Error(client().send(new GetBucketEncryptionCommand({ Bucket: missing })), 'NoSuchBucket', 404);
    });

    it('unconfigured: each read answers S3 404 code, NoSuchBucket for a missing bucket', async () => {
      const errors: [string, (b: string) => Promise<unknown>][] = [
        ['NoSuchBucketPolicy', (b) => client().send(new GetBucketPolicyCommand({ Bucket: b }))],
        ['NoSuchBucketPolicy', (b) => client().send(new GetBucketPolicyStatusCommand({ Bucket: b }))],
        ['ObjectLockConfigurationNotFoundError', (b) => client().send(new GetObjectLockConfigurationCommand({ Bucket: b }))],
        ['NoSuchWebsiteConfiguration', (b) => client().send(new GetBucketWebsiteCommand({ Bucket: b }))],
        ['ReplicationConfigurationNotFoundError', (b) => client().send(new GetBucketReplicationCommand({ Bucket: b }))],
        ['NoSuchPublicAccessBlockConfiguration', (b) => client().send(new GetPublicAccessBlockCommand({ Bucket: b }))],
        ['NoSuchLifecycleConfiguration', (b) => client().send(new GetBucketLifecycleConfigurationCommand({ Bucket: b }))],
      ];
      for (const [code, read] of errors) {
        await expectS3Error(read(bucket), code, 404);
        await expectS3Error(read(missing), 'NoSuchBucket', 404);
      }
    });

    it('unconfigured: empty documents for logging, notification, accelerate; request payment by the owner; BucketOwnerEnforced', async () => {
      const logging = await client().send(new GetBucketLoggingCommand({ Bucket: bucket }));
      expect(logging.$metadata.httpStatusCode).toBe(200);
      expect(logging.LoggingEnabled).toBeUndefined();
      const notification = await client().send(new GetBucketNotificationConfigurationCommand({ Bucket: bucket }));
      expect(notification.TopicConfigurations ?? []).toEqual([]);
      expect(notification.QueueConfigurations ?? []).toEqual([]);
      const accelerate = await client().send(new GetBucketAccelerateConfigurationCommand({ Bucket: bucket }));
      expect(accelerate.Status).toBeUndefined();
      expect((await client().send(new GetBucketRequestPaymentCommand({ Bucket: bucket }))).Payer).toBe('BucketOwner');
      const ownership = await client().send(new GetBucketOwnershipControlsCommand({ Bucket: bucket }));
      expect(ownership.OwnershipControls?.Rules).toEqual([{ ObjectOwnership: 'BucketOwnerEnforced' }]);
      await expectS3Error(client().send(new GetBucketLoggingCommand({ Bucket: missing })), 'NoSuchBucket', 404);
    });

    it('the Put side of what is not supported stays NotImplemented', async () => {
      await expectS3Error(
        client().send(new PutBucketWebsiteCommand({ Bucket: bucket, WebsiteConfiguration: { IndexDocument: { Suffix: 'index.html' } } })),
        'NotImplemented',
        501,
      );
    });

    it('Object Ownership: each setting put and read back; back to BucketOwnerEnforced only with a private bucket ACL; deleted controls are a 404', async () => {
      const put = (b: string, ObjectOwnership: 'BucketOwnerEnforced' | 'BucketOwnerPreferred' | 'ObjectWriter') =>
        client().send(new PutBucketOwnershipControlsCommand({ Bucket: b, OwnershipControls: { Rules: [{ ObjectOwnership }] } }));
      const read = async () => (await client().send(new GetBucketOwnershipControlsCommand({ Bucket: bucket }))).OwnershipControls?.Rules;
      expect((await put(bucket, 'BucketOwnerEnforced')).$metadata.httpStatusCode).toBe(200);
      expect(await read()).toEqual([{ ObjectOwnership: 'BucketOwnerEnforced' }]);
      for (const setting of ['BucketOwnerPreferred', 'ObjectWriter'] as const) {
        await put(bucket, setting);
        expect(await read()).toEqual([{ ObjectOwnership: setting }]);
      }
      await client().send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'public-read' }));
      await expectS3Error(put(bucket, 'BucketOwnerEnforced'), 'InvalidBucketAclWithObjectOwnership', 400);
      expect(await read()).toEqual([{ ObjectOwnership: 'ObjectWriter' }]);
      await client().send(new DeleteBucketOwnershipControlsCommand({ Bucket: bucket }));
      await expectS3Error(client().send(new GetBucketOwnershipControlsCommand({ Bucket: bucket })), 'OwnershipControlsNotFoundError', 404);
      await client().send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'private' }));
      await put(bucket, 'BucketOwnerEnforced');
      await expectS3Error(put(missing, 'BucketOwnerEnforced'), 'NoSuchBucket', 404);
      expect(await read()).toEqual([{ ObjectOwnership: 'BucketOwnerEnforced' }]);
    });

    it('GetBucketAcl / GetObjectAcl: the owner with FULL_CONTROL, nothing else', async () => {
      for (const acl of [
        await client().send(new GetBucketAclCommand({ Bucket: bucket })),
        await client().send(new GetObjectAclCommand({ Bucket: bucket, Key: 'obj' })),
      ]) {
        expect(acl.Owner?.ID).toBeTruthy();
        expect(acl.Grants).toEqual([
          { Grantee: { Type: 'CanonicalUser', ID: acl.Owner!.ID, DisplayName: acl.Owner!.DisplayName }, Permission: 'FULL_CONTROL' },
        ]);
      }
      await expectS3Error(client().send(new GetObjectAclCommand({ Bucket: bucket, Key: 'nope' })), 'NoSuchKey', 404);
    });

    it('private and bucket-owner-full-control succeed everywhere; any other canned ACL or grant is AccessControlListNotSupported', async () => {
      for (const ACL of ['private', 'bucket-owner-full-control'] as const) {
        await client().send(new PutObjectCommand({ Bucket: bucket, Key: `acl-${ACL}`, Body: 'x', ACL }));
        await client().send(new PutObjectAclCommand({ Bucket: bucket, Key: 'obj', ACL }));
        await client().send(new CopyObjectCommand({ Bucket: bucket, Key: `copy-${ACL}`, CopySource: `${bucket}/obj`, ACL }));
        await client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: `mpu-${ACL}`, ACL }));
      }
      await client().send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'private' }));
      const owner = (await client().send(new GetBucketAclCommand({ Bucket: bucket }))).Owner!;
      await client().send(
        new PutBucketAclCommand({
          Bucket: bucket,
          AccessControlPolicy: { Owner: owner, Grants: [{ Grantee: { Type: 'CanonicalUser', ID: owner.ID }, Permission: 'FULL_CONTROL' }] },
        }),
      );

      const refused = 'AccessControlListNotSupported';
      await expectS3Error(client().send(new PutObjectCommand({ Bucket: bucket, Key: 'public', Body: 'x', ACL: 'public-read' })), refused, 400);
      await expectS3Error(client().send(new HeadObjectCommand({ Bucket: bucket, Key: 'public' })), 'NotFound', 404);
      await expectS3Error(
        client().send(new CopyObjectCommand({ Bucket: bucket, Key: 'public', CopySource: `${bucket}/obj`, ACL: 'authenticated-read' })),
        refused,
        400,
      );
      await expectS3Error(client().send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'public', ACL: 'public-read-write' })), refused, 400);
      // A public ACL on a new BucketOwnerEnforced bucket: AWS's own code for it.
      await expectS3Error(
        client().send(new CreateBucketCommand({ Bucket: `${bucket}-public`, ACL: 'public-read' })),
        'InvalidBucketAclWithObjectOwnership',
        400,
      );
      await expectS3Error(
        client().send(new PutObjectCommand({ Bucket: bucket, Key: 'public', Body: 'x', GrantRead: 'uri="http://acs.amazonaws.com/groups/global/AllUsers"' })),
        refused,
        400,
      );
      await expectS3Error(client().send(new PutBucketAclCommand({ Bucket: bucket, ACL: 'public-read' })), refused, 400);
      await expectS3Error(client().send(new PutObjectAclCommand({ Bucket: bucket, Key: 'obj', ACL: 'public-read' })), refused, 400);
      const everyone = { Grantee: { Type: 'Group' as const, URI: 'http://acs.amazonaws.com/groups/global/AllUsers' }, Permission: 'READ' as const };
      await expectS3Error(client().send(new PutBucketAclCommand({ Bucket: bucket, AccessControlPolicy: { Owner: owner, Grants: [everyone] } })), refused, 400);
      await expectS3Error(client().send(new PutBucketAclCommand({ Bucket: bucket, AccessControlPolicy: { Owner: owner, Grants: [] } })), refused, 400);
    });
  });
}
