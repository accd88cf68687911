/**
 * s3cmd (Debian's 2.3.0) against the gateway: mb, put (40 MiB goes multipart with the default
 * 15 MiB chunk: three parts), ls, get, a resumed get (`--continue` sends `Range: bytes=N-`),
 * signurl (a SigV2 presigned URL) fetched with Node fetch, del, rm --recursive (DeleteObjects),
 * rb. The config file sets path-style (host_bucket without %(bucket)s), plain HTTP and SigV4.
 * Issue 22's checks: `put --acl-public` and `setacl --acl-public` get AWS's refusal
 * (AccessControlListNotSupported), `--acl-private` works; with `signature_v2 = True` (SigV2
 * header authentication, as old configurations have it) put (one PUT and multipart), ls, info
 * (which reads the bucket's policy, CORS and ACL) and get work.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientDirs, expectFileMatches, expectSameBytes, expectTamperedRefused, failureOf, fetchPresigned, FIXTURE_NAMES, type CliSuite } from './context.ts';
import { expectedEtag, MiB } from './fixtures.ts';
import { DEV_CREDENTIALS, DEV_REGION } from './gateway.ts';
import { needs } from '../support/prerequisites.ts';
import { cleanEnv, requireTool, runTool, type CliTool } from './tools.ts';

const BUCKET = 'cli-s3cmd';
/** s3cmd's default multipart_chunk_size_mb. */
const S3CMD_PART_SIZE = 15 * MiB;

export function s3cmdCases(suite: CliSuite): void {
  describe('s3cmd', needs('s3cmd'), () => {
    let tool: CliTool;
    let env: NodeJS.ProcessEnv;
    let out: string;
    let configFile: string;
    const s3cmd = (...args: string[]) => runTool(tool, ['-c', configFile, '--no-progress', ...args], env, out);
    /** The same, with a config that signs with SigV2 headers (`Authorization: AWS key:signature`). */
    const s3cmdV2 = (...args: string[]) => runTool(tool, ['-c', `${configFile}-v2`, '--no-progress', ...args], env, out);

    beforeAll(async () => {
      const dirs = await clientDirs(suite(), 's3cmd');
      out = dirs.out;
      configFile = join(dirs.home, 's3cfg');
      const host = suite().url.host;
      await writeFile(
        configFile,
        [
          '[default]',
          `access_key = ${DEV_CREDENTIALS.accessKeyId}`,
          `secret_key = ${DEV_CREDENTIALS.secretAccessKey}`,
          `host_base = ${host}`,
          `host_bucket = ${host}`,
          `bucket_location = ${DEV_REGION}`,
          'use_https = False',
          'signature_v2 = False',
          '',
        ].join('\n'),
      );
      await writeFile(`${configFile}-v2`, (await readFile(configFile, 'utf8')).replace('signature_v2 = False', 'signature_v2 = True'));
      env = cleanEnv(dirs.home);
      tool = await requireTool('s3cmd', ['--version'], env);
    });

    it('mb creates the bucket', async () => {
      await s3cmd('mb', `s3://${BUCKET}`);
      expect(await suite().observer.headBucket(BUCKET)).toBe(200);
    });

    it('put uploads 1 KiB and 7 MiB in one PUT each, 40 MiB multipart in 15 MiB parts', async () => {
      const { files, observer } = suite();
      for (const name of FIXTURE_NAMES) await s3cmd('put', files[name].path, `s3://${BUCKET}/${files[name].name}`);
      expect((await observer.headObject(BUCKET, files.small.name)).etag).toBe(expectedEtag(files.small.bytes));
      expect((await observer.headObject(BUCKET, files.medium.name)).etag).toBe(expectedEtag(files.medium.bytes));
      expect((await observer.headObject(BUCKET, files.large.name)).etag).toBe(expectedEtag(files.large.bytes, S3CMD_PART_SIZE));
    });

    it('ls lists the three objects with their sizes', async () => {
      const { files } = suite();
      const { stdout } = await s3cmd('ls', `s3://${BUCKET}`);
      const listed = stdout
        .trim()
        .split('\n')
        .map((line) => line.trim().split(/\s+/)) // date time size s3://bucket/key
        .map(([, , size, url]) => ({ url, size: Number(size) }));
      expect(listed).toEqual(
        FIXTURE_NAMES.map((n) => ({ url: `s3://${BUCKET}/${files[n].name}`, size: files[n].bytes.length })).sort((a, b) => a.url.localeCompare(b.url)),
      );
    });

    it('get downloads each object byte for byte', async () => {
      const { files } = suite();
      for (const name of FIXTURE_NAMES) {
        const dest = join(out, files[name].name);
        await s3cmd('get', '--force', `s3://${BUCKET}/${files[name].name}`, dest);
        await expectFileMatches(dest, files[name]);
      }
    });

    it('get --continue fetches only the missing tail with a Range GET', async () => {
      // The partial file holds zeros, not the object's first bytes: the result is zeros followed by
      // exactly the object's tail only if s3cmd asked for `bytes=N-` and the gateway honoured it
      // (a whole-object answer would be appended after the zeros and change the length). s3cmd
      // then warns that the MD5 differs, which is expected here.
      const { files } = suite();
      const large = files.large;
      const have = 17 * MiB + 5; // inside the second 15 MiB part
      const dest = join(out, 'resumed.bin');
      await writeFile(dest, Buffer.alloc(have));
      await s3cmd('get', '--continue', `s3://${BUCKET}/${large.name}`, dest);
      const got = await readFile(dest);
      expect(got.length).toBe(large.bytes.length);
      expect(got.subarray(0, have).every((b) => b === 0)).toBe(true);
      expectSameBytes(got.subarray(have), large.bytes.subarray(have), 'resumed tail');
    });

    it('signurl gives a SigV2 presigned URL that fetches the object; the same URL tampered is refused', async () => {
      const { files } = suite();
      const { stdout } = await s3cmd('signurl', `s3://${BUCKET}/${files.medium.name}`, '+600');
      const url = stdout.trim();
      expect(url).toMatch(/[?&]AWSAccessKeyId=[^&]+&Expires=\d+&Signature=/);
      await fetchPresigned(url, files.medium);
      await expectTamperedRefused(url, 'Signature');
    });

    it('put --acl-public and setacl --acl-public are refused with AccessControlListNotSupported; --acl-private works', async () => {
      const { files, observer } = suite();
      expect(await failureOf(s3cmd('put', '--acl-public', files.small.path, `s3://${BUCKET}/acl-public`))).toMatch(/400 \(AccessControlListNotSupported\)/);
      expect((await observer.headObject(BUCKET, 'acl-public')).status).toBe(404);
      await s3cmd('put', '--acl-private', files.small.path, `s3://${BUCKET}/acl-private`);
      expect((await observer.headObject(BUCKET, 'acl-private')).etag).toBe(expectedEtag(files.small.bytes));
      expect(await failureOf(s3cmd('setacl', '--acl-public', `s3://${BUCKET}/acl-private`))).toMatch(/400 \(AccessControlListNotSupported\)/);
      await s3cmd('setacl', '--acl-private', `s3://${BUCKET}/acl-private`);
      await s3cmd('del', `s3://${BUCKET}/acl-private`);
    });

    it('modify replaces the metadata in place (CopyObject onto itself, REPLACE); the bytes stay', async () => {
      // s3cmd signs the headers it copied from its HEAD: a Keep-Alive the local front used to send
      // among them made every modify SignatureDoesNotMatch (issue 37).
      const { files, observer } = suite();
      await s3cmd('put', files.small.path, `s3://${BUCKET}/modified`);
      await s3cmd('modify', '--add-header=x-amz-meta-colour:blue', '--mime-type=text/x-shardgate', `s3://${BUCKET}/modified`);
      const got = await observer.getObject(BUCKET, 'modified', {});
      expect(got.status).toBe(200);
      expect(got.headers.get('x-amz-meta-colour')).toBe('blue');
      expect(got.headers.get('content-type')).toBe('text/x-shardgate');
      expectSameBytes(got.body, files.small.bytes, 'modified object');
      await s3cmd('del', `s3://${BUCKET}/modified`);
    });

    it('with signature_v2 = True (SigV2 headers): put in one PUT and multipart, ls, info and get work', async () => {
      const { files, observer } = suite();
      for (const name of ['small', 'large'] as const) await s3cmdV2('put', files[name].path, `s3://${BUCKET}/v2-${files[name].name}`);
      expect((await observer.headObject(BUCKET, `v2-${files.large.name}`)).etag).toBe(expectedEtag(files.large.bytes, S3CMD_PART_SIZE));
      expect((await s3cmdV2('ls', `s3://${BUCKET}/v2-`)).stdout.trim().split('\n')).toHaveLength(2);
      const info = (await s3cmdV2('info', `s3://${BUCKET}/v2-${files.small.name}`)).stdout;
      expect(info).toMatch(/ACL:\s+\S+: FULL_CONTROL/);
      const dest = join(out, `v2-${files.large.name}`);
      await s3cmdV2('get', `s3://${BUCKET}/v2-${files.large.name}`, dest);
      await expectFileMatches(dest, files.large);
      for (const name of ['small', 'large'] as const) await s3cmdV2('del', `s3://${BUCKET}/v2-${files[name].name}`);
    });

    it('del deletes one object, rm --recursive the rest (DeleteObjects)', async () => {
      const { files, observer } = suite();
      await s3cmd('del', `s3://${BUCKET}/${files.small.name}`);
      expect((await observer.headObject(BUCKET, files.small.name)).status).toBe(404);
      await s3cmd('rm', '--recursive', '--force', `s3://${BUCKET}`);
      for (const name of FIXTURE_NAMES) expect((await observer.headObject(BUCKET, files[name].name)).status).toBe(404);
      expect((await s3cmd('ls', `s3://${BUCKET}`)).stdout.trim()).toBe('');
    });

    it('rb removes the empty bucket', async () => {
      await s3cmd('rb', `s3://${BUCKET}`);
      expect(await suite().observer.headBucket(BUCKET)).toBe(404);
    });
  });
}
