/**
 * Issue 25's real-client proof for versions: a bucket with 1,000 versions of one key (written
 * through the AWS SDK, one after another), then awscli's `s3api list-object-versions` (paginating on
 * its own: key and version-id markers) and `get-object --version-id`, a version restored with
 * `copy-object` from `?versionId=`, and rclone's `--s3-versions` listing every version.
 * Proofs at two sizes (docs/TESTING.md): `npm test` writes 400 versions and lists them 150 a page
 * (two page boundaries inside the one key's versions), `npm run test:full` the issue's 1,000, 300
 * a page.
 */
import { CreateBucketCommand, PutBucketVersioningCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AwscliDriver } from './awscli-driver.ts';
import { clientDirs, type CliSuite } from './context.ts';
import { DEV_CREDENTIALS, DEV_REGION } from './gateway.ts';
import { needs } from '../support/prerequisites.ts';
import { cleanEnv, requireTool, runTool, type CliTool } from './tools.ts';

const BUCKET = 'cli-versions';
const KEY = 'ledger.txt';
const FULL = process.env.SHARDGATE_FULL_SIZE === '1';
const VERSIONS = FULL ? 1000 : 400;
/** Versions per page of awscli's listing: past the page size twice either way. */
const PAGE_SIZE = FULL ? 300 : 150;
/** The old version restored by copy-object (one in the middle). */
const RESTORED = VERSIONS / 2 - 1;
const body = (i: number) => `version ${i} of the ledger\n`;

interface ListedVersion {
  Key: string;
  VersionId: string;
  IsLatest: boolean;
  Size: number;
}

export function versionCases(suite: CliSuite): void {
  describe('versions through awscli and rclone', needs('awscli', 'rclone'), () => {
    let aws: CliTool;
    let rclone: CliTool;
    let env: NodeJS.ProcessEnv;
    let out: string;
    let rcloneConfig: string;
    /** Version ids in write order (the i-th holds body(i)). */
    const written: string[] = [];
    let driver: AwscliDriver | null = null;
    /** Through one awscli interpreter where awscli is a Python script (awscli-driver.ts). */
    const awscli = (...args: string[]) => {
      const argv = ['--endpoint-url', suite().url.origin, ...args];
      return driver ? driver.run(argv, env, out) : runTool(aws, argv, env, out);
    };

    beforeAll(async () => {
      const dirs = await clientDirs(suite(), 'versions');
      out = dirs.out;
      const configFile = join(dirs.home, 'aws-config');
      await writeFile(configFile, `[default]\nregion = ${DEV_REGION}\noutput = json\ns3 =\n  addressing_style = path\n`);
      rcloneConfig = join(dirs.home, 'rclone.conf');
      await writeFile(
        rcloneConfig,
        [
          '[gw]',
          'type = s3',
          'provider = Other',
          'env_auth = false',
          `access_key_id = ${DEV_CREDENTIALS.accessKeyId}`,
          `secret_access_key = ${DEV_CREDENTIALS.secretAccessKey}`,
          `region = ${DEV_REGION}`,
          `endpoint = ${suite().url.origin}`,
          'force_path_style = true',
          '',
        ].join('\n'),
      );
      env = cleanEnv(dirs.home, {
        AWS_ACCESS_KEY_ID: DEV_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: DEV_CREDENTIALS.secretAccessKey,
        AWS_DEFAULT_REGION: DEV_REGION,
        AWS_CONFIG_FILE: configFile,
        AWS_SHARED_CREDENTIALS_FILE: join(dirs.home, 'aws-credentials-unused'),
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_PAGER: '',
      });
      aws = await requireTool('awscli', ['--version'], env);
      driver = await AwscliDriver.start(aws, env, out);
      rclone = await requireTool('rclone', ['version'], env);
      const s3 = new S3Client({ endpoint: suite().url.origin, region: DEV_REGION, forcePathStyle: true, credentials: DEV_CREDENTIALS });
      try {
        await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
        await s3.send(new PutBucketVersioningCommand({ Bucket: BUCKET, VersioningConfiguration: { Status: 'Enabled' } }));
        // One after another, so that each version id is known with its body.
        for (let n = 0; n < VERSIONS; n++) written[n] = (await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: body(n) }))).VersionId!;
      } finally {
        s3.destroy();
      }
    }, 600_000);

    afterAll(async () => {
      await driver?.dispose();
    });

    it(`list-object-versions: all ${VERSIONS}, newest first, only the newest latest (awscli pages through them)`, async () => {
      const { stdout } = await awscli('s3api', 'list-object-versions', '--bucket', BUCKET, '--prefix', KEY, '--page-size', String(PAGE_SIZE));
      const versions = (JSON.parse(stdout) as { Versions: ListedVersion[] }).Versions;
      expect(versions.length).toBe(VERSIONS);
      expect(versions.map((v) => v.VersionId)).toEqual([...written].reverse());
      expect(versions.filter((v) => v.IsLatest).map((v) => v.VersionId)).toEqual([written[VERSIONS - 1]]);
    });

    it('get-object --version-id reads that version', async () => {
      for (const n of [0, RESTORED, VERSIONS - 1]) {
        const dest = join(out, `v${n}.txt`);
        const { stdout } = await awscli('s3api', 'get-object', '--bucket', BUCKET, '--key', KEY, '--version-id', written[n]!, dest);
        expect(JSON.parse(stdout)).toMatchObject({ VersionId: written[n] });
        expect(await readFile(dest, 'utf8')).toBe(body(n));
      }
    });

    it('copy-object from ?versionId= restores an old version as the newest', async () => {
      const { stdout } = await awscli(
        's3api',
        'copy-object',
        '--bucket',
        BUCKET,
        '--key',
        KEY,
        '--copy-source',
        `${BUCKET}/${KEY}?versionId=${written[RESTORED]}`,
      );
      const restored = (JSON.parse(stdout) as { VersionId: string }).VersionId;
      expect(restored).toBeTruthy();
      expect(written).not.toContain(restored);
      const dest = join(out, 'current.txt');
      await awscli('s3', 'cp', '--no-progress', `s3://${BUCKET}/${KEY}`, dest);
      expect(await readFile(dest, 'utf8')).toBe(body(RESTORED));
      written.push(restored);
    });

    it('rclone --s3-versions lists every version, the plain listing only the current one', async () => {
      const common = ['--config', rcloneConfig, '--retries', '1', '--low-level-retries', '2'];
      const all = JSON.parse((await runTool(rclone, [...common, 'lsjson', '--s3-versions', `gw:${BUCKET}`], env, out)).stdout) as {
        Name: string;
        Size: number;
      }[];
      expect(all.length).toBe(VERSIONS + 1);
      expect(all.filter((e) => e.Name === KEY).length).toBe(1); // the current one keeps its name; the others carry their time
      const current = JSON.parse((await runTool(rclone, [...common, 'lsjson', `gw:${BUCKET}`], env, out)).stdout) as { Name: string; Size: number }[];
      expect(current).toEqual([expect.objectContaining({ Name: KEY, Size: body(RESTORED).length })]);
    });
  });
}
