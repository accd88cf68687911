/**
 * Conformance: bucket names and bucket configuration.
 * - Names with ".-" or "-." (a dot-separated label starting or ending with "-") are InvalidBucketName.
 * - GetBucketVersioning answers the configuration of a bucket whose versioning was never enabled.
 * - PutBucketCors / GetBucketCors / DeleteBucketCors store, return and remove the rules;
 *   GetBucketCors without rules is NoSuchCORSConfiguration. (Browsers: cors-browser.test.ts.)
 */
import { CreateBucketCommand, DeleteBucketCorsCommand, GetBucketCorsCommand, GetBucketVersioningCommand, PutBucketCorsCommand } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { bucketName, expectS3Error, type ChecksumMode, type Suite } from './context.ts';

export function bucketConfigCases(suite: Suite, mode: ChecksumMode): void {
  const bucket = bucketName(mode, 'bucket-config');
  const client = () => suite().client;

  describe('bucket names and configuration', () => {
    beforeAll(async () => {
      await client().send(new CreateBucketCommand({ Bucket: bucket }));
    });

    it('names with ".-" or "-." are InvalidBucketName', async () => {
      for (const name of [`a.-b-${mode[0]}`, `a-.b-${mode[0]}`, `ab-.cd-${mode[0]}`]) {
        await expectS3Error(client().send(new CreateBucketCommand({ Bucket: name })), 'InvalidBucketName', 400);
      }
      await client().send(new CreateBucketCommand({ Bucket: `a.b-c.d-${mode[0]}` }));
    });

    it('GetBucketVersioning: never enabled (no Status); NoSuchBucket for a missing bucket', async () => {
      const r = await client().send(new GetBucketVersioningCommand({ Bucket: bucket }));
      expect(r.$metadata.httpStatusCode).toBe(200);
      expect(r.Status).toBeUndefined();
      expect(r.MFADelete).toBeUndefined();
      await expectS3Error(client().send(new GetBucketVersioningCommand({ Bucket: `missing-${bucket}` })), 'NoSuchBucket', 404);
    });

    it('PutBucketCors, GetBucketCors, DeleteBucketCors', async () => {
      await expectS3Error(client().send(new GetBucketCorsCommand({ Bucket: bucket })), 'NoSuchCORSConfiguration', 404);
      const CORSRules = [
        {
          ID: 'app',
          AllowedOrigins: ['https://app.example', 'https://*.example.org'],
          AllowedMethods: ['GET', 'PUT'],
          AllowedHeaders: ['*'],
          ExposeHeaders: ['ETag'],
          MaxAgeSeconds: 600,
        },
        { AllowedOrigins: ['*'], AllowedMethods: ['HEAD'] },
      ];
      await client().send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules } }));
      const got = await client().send(new GetBucketCorsCommand({ Bucket: bucket }));
      expect(got.CORSRules).toEqual([CORSRules[0], { AllowedOrigins: ['*'], AllowedMethods: ['HEAD'] }]);
      await expectS3Error(
        client().send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['PATCH'] }] } })),
        'InvalidRequest',
        400,
      );
      await expectS3Error(
        client().send(new PutBucketCorsCommand({ Bucket: bucket, CORSConfiguration: { CORSRules: [{ AllowedOrigins: ['*://*'], AllowedMethods: ['GET'] }] } })),
        'InvalidRequest',
        400,
      );
      expect((await client().send(new GetBucketCorsCommand({ Bucket: bucket }))).CORSRules).toHaveLength(2);
      const deleted = await client().send(new DeleteBucketCorsCommand({ Bucket: bucket }));
      expect(deleted.$metadata.httpStatusCode).toBe(204);
      await expectS3Error(client().send(new GetBucketCorsCommand({ Bucket: bucket })), 'NoSuchCORSConfiguration', 404);
    });
  });
}
