/**
 * awscli (Debian's awscli 2.x; a pip 1.x on PATH also works) against the gateway: mb, cp up
 * (40 MiB goes multipart with the default 8 MiB threshold and chunk size), ls, cp down, a ranged
 * s3api get-object, s3 presign fetched with Node fetch, rm, rb. Path-style addressing through the
 * config file, credentials from the environment, nothing read from the real HOME.
 * Issue 22's real-client checks: `s3 cp --acl private` works and `--acl public-read` gets AWS's
 * refusal (the bucket is "bucket owner enforced"), object tagging and get-object-attributes round
 * trip, and every bucket configuration read answers as S3 does for an unconfigured bucket.
 * Issue 24's: SSE-C uploads (single and multipart) and downloads with `--sse-c-key`.
 * Issue 43's: Terraform's S3 bucket recipes replayed call by call (the provider cannot be installed here).
 * The first command runs `aws` as a process; the rest through one awscli interpreter for the file
 * (awscli-driver.ts says what that runs per command and what it does not).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AwscliDriver } from './awscli-driver.ts';
import { clientDirs, expectFileMatches, expectSameBytes, expectTamperedRefused, failureOf, fetchPresigned, FIXTURE_NAMES, type CliSuite } from './context.ts';
import { expectedEtag, MiB } from './fixtures.ts';
import { DEV_CREDENTIALS, DEV_REGION } from './gateway.ts';
import { needs } from '../support/prerequisites.ts';
import { cleanEnv, requireTool, runTool, type CliTool } from './tools.ts';

const BUCKET = 'cli-awscli';
/** awscli's defaults: multipart_threshold and multipart_chunksize are both 8 MiB. */
const AWSCLI_PART_SIZE = 8 * MiB;

export function awscliCases(suite: CliSuite): void {
  describe('awscli', needs('awscli'), () => {
    let tool: CliTool;
    let env: NodeJS.ProcessEnv;
    let out: string;
    let driver: AwscliDriver | null = null;
    /** `aws` as a process of its own: the first command of the file runs so (awscli-driver.ts). */
    const awsProcess = (...args: string[]) => runTool(tool, ['--endpoint-url', suite().url.origin, ...args], env, out);
    /** The same command through the file's awscli interpreter when there is one. */
    const aws = (...args: string[]) => (driver ? driver.run(['--endpoint-url', suite().url.origin, ...args], env, out) : awsProcess(...args));

    beforeAll(async () => {
      const dirs = await clientDirs(suite(), 'awscli');
      out = dirs.out;
      const configFile = join(dirs.home, 'aws-config');
      await writeFile(configFile, `[default]\nregion = ${DEV_REGION}\noutput = json\ns3 =\n  addressing_style = path\n`);
      env = cleanEnv(dirs.home, {
        AWS_ACCESS_KEY_ID: DEV_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: DEV_CREDENTIALS.secretAccessKey,
        AWS_DEFAULT_REGION: DEV_REGION,
        AWS_CONFIG_FILE: configFile,
        AWS_SHARED_CREDENTIALS_FILE: join(dirs.home, 'aws-credentials-unused'),
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_PAGER: '',
      });
      tool = await requireTool('awscli', ['--version'], env);
      driver = await AwscliDriver.start(tool, env, out);
    });

    afterAll(async () => {
      await driver?.dispose();
    });

    it('s3 mb creates the bucket', async () => {
      await awsProcess('s3', 'mb', `s3://${BUCKET}`);
      expect(await suite().observer.headBucket(BUCKET)).toBe(200);
    });

    it('s3 cp uploads 1 KiB and 7 MiB in one PUT each, 40 MiB multipart in 8 MiB parts', async () => {
      const { files, observer } = suite();
      for (const name of FIXTURE_NAMES) {
        await aws('s3', 'cp', '--no-progress', files[name].path, `s3://${BUCKET}/${files[name].name}`);
      }
      expect((await observer.headObject(BUCKET, files.small.name)).etag).toBe(expectedEtag(files.small.bytes));
      expect((await observer.headObject(BUCKET, files.medium.name)).etag).toBe(expectedEtag(files.medium.bytes));
      expect((await observer.headObject(BUCKET, files.large.name)).etag).toBe(expectedEtag(files.large.bytes, AWSCLI_PART_SIZE));
    });

    it('s3 ls lists the three objects with their sizes', async () => {
      const { files } = suite();
      const { stdout } = await aws('s3', 'ls', `s3://${BUCKET}`);
      const listed = stdout
        .trim()
        .split('\n')
        .map((line) => line.trim().split(/\s+/)) // date time size key
        .map(([, , size, key]) => ({ key, size: Number(size) }));
      expect(listed).toEqual(FIXTURE_NAMES.map((n) => ({ key: files[n].name, size: files[n].bytes.length })).sort((a, b) => a.key.localeCompare(b.key)));
    });

    it('s3 cp downloads each object byte for byte', async () => {
      const { files } = suite();
      for (const name of FIXTURE_NAMES) {
        const dest = join(out, files[name].name);
        await aws('s3', 'cp', '--no-progress', `s3://${BUCKET}/${files[name].name}`, dest);
        await expectFileMatches(dest, files[name]);
      }
    });

    it('SSE-C: s3 cp --sse-c up (one PUT and multipart) and down with the key; without it or with another key the download is refused', async () => {
      const { files } = suite();
      const key = join(out, 'sse-c.key'),
        other = join(out, 'sse-c-other.key');
      await writeFile(key, Buffer.from(Array.from({ length: 32 }, (_, i) => 200 - i)));
      await writeFile(other, Buffer.from(Array.from({ length: 32 }, (_, i) => i)));
      for (const name of ['small', 'large'] as const) {
        const target = `s3://${BUCKET}/sse-c/${files[name].name}`;
        await aws('s3', 'cp', '--no-progress', '--sse-c', 'AES256', '--sse-c-key', `fileb://${key}`, files[name].path, target);
        const dest = join(out, `sse-c-${files[name].name}`);
        await aws('s3', 'cp', '--no-progress', '--sse-c', 'AES256', '--sse-c-key', `fileb://${key}`, target, dest);
        await expectFileMatches(dest, files[name]);
        expect(await failureOf(aws('s3', 'cp', '--no-progress', target, join(out, 'no-key')))).toMatch(/\(400\)|Bad Request|InvalidRequest/);
        expect(
          await failureOf(aws('s3', 'cp', '--no-progress', '--sse-c', 'AES256', '--sse-c-key', `fileb://${other}`, target, join(out, 'other-key'))),
        ).toMatch(/\(403\)|Forbidden|AccessDenied/);
      }
      await aws('s3', 'rm', '--recursive', `s3://${BUCKET}/sse-c/`);
    });

    it('s3api get-object --range returns exactly the requested bytes (a-b across a part boundary, and -n)', async () => {
      const { files } = suite();
      const large = files.large;
      const cases: [range: string, first: number, last: number][] = [
        ['bytes=1048573-9437187', 1_048_573, 9_437_187], // crosses the first 8 MiB part
        ['bytes=-1000', large.bytes.length - 1000, large.bytes.length - 1],
      ];
      for (const [range, first, last] of cases) {
        const dest = join(out, `range-${first}`);
        const { stdout } = await aws('s3api', 'get-object', '--bucket', BUCKET, '--key', large.name, '--range', range, dest);
        const meta = JSON.parse(stdout) as { ContentRange?: string; ContentLength?: number };
        expect(meta.ContentRange, range).toBe(`bytes ${first}-${last}/${large.bytes.length}`);
        expect(meta.ContentLength, range).toBe(last - first + 1);
        expectSameBytes(await readFile(dest), large.bytes.subarray(first, last + 1), `range ${range}`);
      }
    });

    it('s3 presign gives a URL that fetches the object; the same URL tampered is refused', async () => {
      const { files } = suite();
      const { stdout } = await aws('s3', 'presign', `s3://${BUCKET}/${files.medium.name}`, '--expires-in', '600');
      const url = stdout.trim();
      // awscli 2.x presigns with SigV4; a pip awscli 1.x would give SigV2 (also accepted).
      const signatureParam = url.includes('X-Amz-Signature=') ? 'X-Amz-Signature' : 'Signature';
      await fetchPresigned(url, files.medium);
      await expectTamperedRefused(url, signatureParam);
    });

    it('s3 cp --acl private uploads; --acl public-read is refused with AccessControlListNotSupported and stores nothing', async () => {
      const { files, observer } = suite();
      await aws('s3', 'cp', '--no-progress', '--acl', 'private', files.small.path, `s3://${BUCKET}/acl-private`);
      expect((await observer.headObject(BUCKET, 'acl-private')).etag).toBe(expectedEtag(files.small.bytes));
      expect(await failureOf(aws('s3', 'cp', '--no-progress', '--acl', 'public-read', files.small.path, `s3://${BUCKET}/acl-public`))).toMatch(
        /\(AccessControlListNotSupported\)/,
      );
      expect((await observer.headObject(BUCKET, 'acl-public')).status).toBe(404);
      const acl = JSON.parse((await aws('s3api', 'get-object-acl', '--bucket', BUCKET, '--key', 'acl-private')).stdout) as { Grants: { Permission: string }[] };
      expect(acl.Grants.map((g) => g.Permission)).toEqual(['FULL_CONTROL']);
      await aws('s3', 'rm', `s3://${BUCKET}/acl-private`);
    });

    it('s3api put-object-tagging, get-object-tagging and delete-object-tagging round-trip the tag set', async () => {
      const key = suite().files.large.name;
      const tagSet = [
        { Key: 'env', Value: 'test' },
        { Key: 'team', Value: 'a b+c' },
      ];
      await aws('s3api', 'put-object-tagging', '--bucket', BUCKET, '--key', key, '--tagging', JSON.stringify({ TagSet: tagSet }));
      expect(JSON.parse((await aws('s3api', 'get-object-tagging', '--bucket', BUCKET, '--key', key)).stdout).TagSet).toEqual(tagSet);
      await aws('s3api', 'delete-object-tagging', '--bucket', BUCKET, '--key', key);
      expect(JSON.parse((await aws('s3api', 'get-object-tagging', '--bucket', BUCKET, '--key', key)).stdout).TagSet).toEqual([]);
    });

    it('s3api get-object-attributes reports the multipart object: ETag, size, storage class, its 8 MiB parts', async () => {
      const { large } = suite().files;
      const { stdout } = await aws(
        's3api',
        'get-object-attributes',
        '--bucket',
        BUCKET,
        '--key',
        large.name,
        '--object-attributes',
        'ETag',
        'ObjectSize',
        'StorageClass',
        'ObjectParts',
      );
      const attrs = JSON.parse(stdout) as {
        ETag: string;
        ObjectSize: number;
        StorageClass: string;
        ObjectParts: { TotalPartsCount: number; Parts: { PartNumber: number; Size: number }[] };
      };
      const parts = Math.ceil(large.bytes.length / AWSCLI_PART_SIZE);
      expect(attrs.ETag).toBe(expectedEtag(large.bytes, AWSCLI_PART_SIZE).replace(/"/g, ''));
      expect(attrs.ObjectSize).toBe(large.bytes.length);
      expect(attrs.StorageClass).toBe('STANDARD');
      expect(attrs.ObjectParts.TotalPartsCount).toBe(parts);
      expect(attrs.ObjectParts.Parts.map((p) => p.Size)).toEqual(
        Array.from({ length: parts }, (_, i) => Math.min(AWSCLI_PART_SIZE, large.bytes.length - i * AWSCLI_PART_SIZE)),
      );
    });

    it('every s3api bucket configuration read answers as S3 does for an unconfigured bucket, never 501', async () => {
      const notConfigured: [command: string, code: string][] = [
        ['get-bucket-policy', 'NoSuchBucketPolicy'],
        ['get-bucket-policy-status', 'NoSuchBucketPolicy'],
        ['get-bucket-tagging', 'NoSuchTagSet'],
        ['get-object-lock-configuration', 'ObjectLockConfigurationNotFoundError'],
        ['get-bucket-website', 'NoSuchWebsiteConfiguration'],
        ['get-bucket-replication', 'ReplicationConfigurationNotFoundError'],
        ['get-public-access-block', 'NoSuchPublicAccessBlockConfiguration'],
        ['get-bucket-lifecycle-configuration', 'NoSuchLifecycleConfiguration'],
        ['get-bucket-cors', 'NoSuchCORSConfiguration'],
      ];
      for (const [command, code] of notConfigured) {
        expect(await failureOf(aws('s3api', command, '--bucket', BUCKET)), command).toMatch(new RegExp(`An error occurred \\(${code}\\) when calling`));
      }
      const read = async (command: string) => {
        const { stdout } = await aws('s3api', command, '--bucket', BUCKET);
        return stdout.trim() ? (JSON.parse(stdout) as Record<string, unknown>) : {};
      };
      // Sealed by its policy (the development key): the SSE-S3 default, as AWS buckets since 2023.
      expect(await read('get-bucket-encryption')).toMatchObject({
        ServerSideEncryptionConfiguration: { Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      });
      expect(await read('get-bucket-ownership-controls')).toEqual({ OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] } });
      expect(await read('get-bucket-request-payment')).toEqual({ Payer: 'BucketOwner' });
      for (const command of ['get-bucket-logging', 'get-bucket-notification-configuration', 'get-bucket-accelerate-configuration', 'get-bucket-versioning']) {
        expect(await read(command), command).toEqual({});
      }
      const acl = (await read('get-bucket-acl')) as { Grants: { Permission: string }[] };
      expect(acl.Grants.map((g) => g.Permission)).toEqual(['FULL_CONTROL']);
    });

    it("Terraform's bucket recipes, replayed with awscli (no provider binary here): versioning, public access block, KMS encryption, lifecycle, tags; then destroyed", async () => {
      // The AWS provider's aws_s3_bucket with its aws_s3_bucket_versioning, _public_access_block,
      // _server_side_encryption_configuration (a KMS key) and _lifecycle_configuration resources:
      // each resource's create call, then the read its refresh makes, which must give back what was
      // put (a difference would be a perpetual diff in every plan), then destroy in reverse order.
      // The unconfigured reads of its bucket refresh are the case above.
      const bucket = 'cli-terraform';
      const KEY_ARN = 'arn:aws:kms:us-east-1:000000000000:key/testkey-1';
      const read = async (...args: string[]) => {
        const { stdout } = await aws('s3api', ...args, '--bucket', bucket);
        return stdout.trim() ? (JSON.parse(stdout) as Record<string, unknown>) : {};
      };
      await aws('s3api', 'create-bucket', '--bucket', bucket);
      await aws('s3api', 'head-bucket', '--bucket', bucket);
      await aws('s3api', 'put-bucket-versioning', '--bucket', bucket, '--versioning-configuration', 'Status=Enabled');
      expect(await read('get-bucket-versioning')).toEqual({ Status: 'Enabled' });
      const block = { BlockPublicAcls: true, IgnorePublicAcls: true, BlockPublicPolicy: true, RestrictPublicBuckets: true };
      await aws('s3api', 'put-public-access-block', '--bucket', bucket, '--public-access-block-configuration', JSON.stringify(block));
      expect(await read('get-public-access-block')).toEqual({ PublicAccessBlockConfiguration: block });
      const encryption = { Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: KEY_ARN }, BucketKeyEnabled: true }] };
      await aws('s3api', 'put-bucket-encryption', '--bucket', bucket, '--server-side-encryption-configuration', JSON.stringify(encryption));
      expect(await read('get-bucket-encryption')).toEqual({ ServerSideEncryptionConfiguration: encryption });
      const lifecycle = {
        Rules: [
          {
            ID: 'logs',
            Status: 'Enabled',
            Filter: { Prefix: 'logs/' },
            Expiration: { Days: 90 },
            NoncurrentVersionExpiration: { NoncurrentDays: 30 },
            AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 },
          },
        ],
      };
      await aws('s3api', 'put-bucket-lifecycle-configuration', '--bucket', bucket, '--lifecycle-configuration', JSON.stringify(lifecycle));
      expect(await read('get-bucket-lifecycle-configuration')).toEqual(lifecycle);
      await aws('s3api', 'put-bucket-tagging', '--bucket', bucket, '--tagging', 'TagSet=[{Key=env,Value=test}]');
      expect(await read('get-bucket-tagging')).toEqual({ TagSet: [{ Key: 'env', Value: 'test' }] });
      // An object written without asking gets the bucket's KMS default.
      await aws('s3', 'cp', '--no-progress', suite().files.small.path, `s3://${bucket}/logs/app.log`);
      const head = await read('head-object', '--key', 'logs/app.log');
      expect(head).toMatchObject({ ServerSideEncryption: 'aws:kms', SSEKMSKeyId: KEY_ARN, BucketKeyEnabled: true });
      // terraform destroy: the resources in reverse, then the bucket (force_destroy deletes every version).
      await aws('s3api', 'delete-bucket-lifecycle', '--bucket', bucket);
      await aws('s3api', 'delete-bucket-encryption', '--bucket', bucket);
      await aws('s3api', 'delete-public-access-block', '--bucket', bucket);
      await aws('s3api', 'put-bucket-versioning', '--bucket', bucket, '--versioning-configuration', 'Status=Suspended');
      expect(await failureOf(aws('s3api', 'get-bucket-lifecycle-configuration', '--bucket', bucket))).toMatch(/NoSuchLifecycleConfiguration/);
      expect(await failureOf(aws('s3api', 'get-public-access-block', '--bucket', bucket))).toMatch(/NoSuchPublicAccessBlockConfiguration/);
      const versions = (await read('list-object-versions')) as { Versions?: { Key: string; VersionId: string }[] };
      for (const v of versions.Versions ?? []) await aws('s3api', 'delete-object', '--bucket', bucket, '--key', v.Key, '--version-id', v.VersionId);
      await aws('s3api', 'delete-bucket', '--bucket', bucket);
      expect(await suite().observer.headBucket(bucket)).toBe(404);
    });

    it('s3 rm deletes one object, then the rest recursively', async () => {
      const { files, observer } = suite();
      await aws('s3', 'rm', `s3://${BUCKET}/${files.small.name}`);
      expect((await observer.headObject(BUCKET, files.small.name)).status).toBe(404);
      await aws('s3', 'rm', '--recursive', `s3://${BUCKET}`);
      for (const name of FIXTURE_NAMES) expect((await observer.headObject(BUCKET, files[name].name)).status).toBe(404);
      expect((await aws('s3', 'ls', `s3://${BUCKET}`)).stdout.trim()).toBe('');
    });

    it('s3 rb removes the empty bucket', async () => {
      await aws('s3', 'rb', `s3://${BUCKET}`);
      expect(await suite().observer.headBucket(BUCKET)).toBe(404);
    });
  });
}
