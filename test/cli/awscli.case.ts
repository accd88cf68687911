/**
 * awscli (Debian's awscli 2.x; a pip 1.x on PATH also works) against the gateway: mb, cp up
 * (40 MiB goes multipart with the default 8 MiB threshold and chunk size), ls, cp down, a ranged
 * s3api get-object, s3 presign fetched with Node fetch, rm, rb. Path-style addressing through the
 * config file, credentials from the environment, nothing read from the real HOME.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientDirs, expectFileMatches, expectSameBytes, expectTamperedRefused, fetchPresigned, FIXTURE_NAMES, type CliSuite } from './context.ts';
import { expectedEtag, MiB } from './fixtures.ts';
import { DEV_CREDENTIALS, DEV_REGION } from './gateway.ts';
import { cleanEnv, requireTool, runTool, type CliTool } from './tools.ts';

const BUCKET = 'cli-awscli';
/** awscli's defaults: multipart_threshold and multipart_chunksize are both 8 MiB. */
const AWSCLI_PART_SIZE = 8 * MiB;

export function awscliCases(suite: CliSuite): void {
  describe('awscli', () => {
    let tool: CliTool;
    let env: NodeJS.ProcessEnv;
    let out: string;
    const aws = (...args: string[]) => runTool(tool, ['--endpoint-url', suite().url.origin, ...args], env, out);

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
      tool = await requireTool('aws', 'awscli', ['--version'], env);
    });

    it('s3 mb creates the bucket', async () => {
      await aws('s3', 'mb', `s3://${BUCKET}`);
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
