/**
 * rclone (Debian's 1.60) against the gateway: mkdir, copyto up, lsjson with MD5s, copyto down,
 * a ranged read (`cat --offset --count` sends a Range header), a part upload refused once and
 * retried (through a proxy: refusing-proxy.ts), deletefile/delete, rmdir.
 *
 * rclone's default upload cutoff is 200 MiB, so the 40 MiB file is sent multipart only with
 * explicit `--s3-upload-cutoff 16Mi --s3-chunk-size 8Mi` (five 8 MiB parts), so the multipart path is exercised too.
 * `--retries 1 --low-level-retries 2` only make a failure fail fast: rclone's defaults retry a
 * refused request for minutes.
 *
 * Note: rclone (aws-sdk-go v1) sends and SIGNS `Accept-Encoding: gzip` on object GETs. The
 * Workers runtime (and miniflare, emulating it) hands the worker `Accept-Encoding: br, gzip`
 * instead (the client's value is in request.cf.clientAcceptEncoding), and compresses responses
 * of compressible types (XML errors, text/*) for such a client. Both must be handled by the
 * gateway, or rclone downloads fail; the two tests named for them pin each cause.
 *
 * Issue 22: rclone's `acl` / `bucket_acl` options send `x-amz-acl` on CreateBucket, PutObject,
 * multipart uploads and server-side copies; `private` works and `public-read` gets AWS's refusal
 * for a "bucket owner enforced" bucket. (rclone 1.60 has no tagging or object-attributes command.)
 */
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientDirs, expectFileMatches, expectSameBytes, failureOf, FIXTURE_NAMES, type CliSuite } from './context.ts';
import { expectedEtag, md5Hex, MiB } from './fixtures.ts';
import { DEV_CREDENTIALS, DEV_REGION } from './gateway.ts';
import { startRefusingProxy } from './refusing-proxy.ts';
import { needs } from '../support/prerequisites.ts';
import { cleanEnv, requireTool, runTool, runToolForBytes, type CliTool } from './tools.ts';

const BUCKET = 'cli-rclone';
const REMOTE = 'gw';
const RCLONE_PART_SIZE = 8 * MiB;
const MULTIPART_FLAGS = ['--s3-upload-cutoff', '16Mi', '--s3-chunk-size', '8Mi'];

interface LsjsonEntry {
  Name: string;
  Size: number;
  IsDir: boolean;
  Hashes?: { md5?: string };
}

/** An rclone.conf section for the gateway (or a proxy in front of it) at `endpoint`. */
function remoteSection(name: string, endpoint: URL): string {
  return [
    `[${name}]`,
    'type = s3',
    'provider = Other',
    'env_auth = false',
    `access_key_id = ${DEV_CREDENTIALS.accessKeyId}`,
    `secret_access_key = ${DEV_CREDENTIALS.secretAccessKey}`,
    `region = ${DEV_REGION}`,
    `endpoint = ${endpoint.origin}`,
    'force_path_style = true',
    '',
  ].join('\n');
}

export function rcloneCases(suite: CliSuite): void {
  describe('rclone', needs('rclone'), () => {
    let tool: CliTool;
    let env: NodeJS.ProcessEnv;
    let out: string;
    let configFile: string;
    const common = () => ['--config', configFile, '--retries', '1', '--low-level-retries', '2'];
    const rclone = (...args: string[]) => runTool(tool, [...common(), ...args], env, out);
    const remote = (key = '') => `${REMOTE}:${BUCKET}${key ? `/${key}` : ''}`;

    beforeAll(async () => {
      const dirs = await clientDirs(suite(), 'rclone');
      out = dirs.out;
      configFile = join(dirs.home, 'rclone.conf');
      await writeFile(configFile, remoteSection(REMOTE, suite().url));
      env = cleanEnv(dirs.home);
      tool = await requireTool('rclone', ['version'], env);
    });

    it('mkdir creates the bucket', async () => {
      await rclone('mkdir', remote());
      expect(await suite().observer.headBucket(BUCKET)).toBe(200);
    });

    it('copyto uploads 1 KiB and 7 MiB in one PUT each, 40 MiB multipart in 8 MiB parts', async () => {
      const { files, observer } = suite();
      for (const name of FIXTURE_NAMES) await rclone('copyto', ...MULTIPART_FLAGS, files[name].path, remote(files[name].name));
      expect((await observer.headObject(BUCKET, files.small.name)).etag).toBe(expectedEtag(files.small.bytes));
      expect((await observer.headObject(BUCKET, files.medium.name)).etag).toBe(expectedEtag(files.medium.bytes));
      expect((await observer.headObject(BUCKET, files.large.name)).etag).toBe(expectedEtag(files.large.bytes, RCLONE_PART_SIZE));
    });

    it('lsjson --hash lists the three objects with sizes and MD5s (multipart: from rclone metadata)', async () => {
      const { files } = suite();
      const { stdout } = await rclone('lsjson', '--hash', '--hash-type', 'md5', remote());
      const listed = (JSON.parse(stdout) as LsjsonEntry[]).map((e) => ({ name: e.Name, size: e.Size, md5: e.Hashes?.md5 }));
      expect(listed).toEqual(
        FIXTURE_NAMES.map((n) => ({ name: files[n].name, size: files[n].bytes.length, md5: md5Hex(files[n].bytes) })).sort((a, b) =>
          a.name.localeCompare(b.name),
        ),
      );
    });

    it('a GET that signs Accept-Encoding: gzip, as rclone does, is accepted', async () => {
      // What every rclone download sends (aws-sdk-go v1 signs the header). The runtime hands the
      // worker `Accept-Encoding: br, gzip` instead of the signed `gzip`.
      const { files, observer } = suite();
      const res = await observer.getObject(BUCKET, files.small.name, { 'accept-encoding': 'gzip' });
      expect(res.status, res.body.toString('utf8')).toBe(200);
      expectSameBytes(res.body, files.small.bytes, 'GET signed with accept-encoding');
    });

    it('copyto downloads each object byte for byte', async () => {
      const { files } = suite();
      for (const name of FIXTURE_NAMES) {
        const dest = join(out, files[name].name);
        await rclone('copyto', remote(files[name].name), dest);
        await expectFileMatches(dest, files[name]);
      }
    });

    it('cat --offset --count (a Range GET) returns exactly the requested bytes', async () => {
      const { files } = suite();
      const [offset, count] = [8 * MiB - 3, 1_000_003]; // across the first part boundary
      const bytes = await runToolForBytes(tool, [...common(), 'cat', '--offset', String(offset), '--count', String(count), remote(files.large.name)], env, out);
      expectSameBytes(bytes, files.large.bytes.subarray(offset, offset + count), 'rclone cat range');
    });

    it('copyto round-trips a text file (rclone sets Content-Type text/plain) unchanged', async () => {
      // A compressible Content-Type: the runtime gzips such responses for a client that accepts
      // gzip unless the gateway prevents it, and rclone, having asked for gzip itself, would keep
      // the compressed bytes.
      const text = Buffer.from(Array.from({ length: 8000 }, (_, i) => `line ${i}\n`).join(''));
      const src = join(out, 'notes-src.txt');
      const dest = join(out, 'notes.txt');
      await writeFile(src, text);
      await rclone('copyto', src, remote('notes.txt'));
      try {
        await rclone('copyto', remote('notes.txt'), dest);
        expectSameBytes(await readFile(dest), text, 'notes.txt');
      } finally {
        await rclone('deletefile', remote('notes.txt'));
      }
    });

    it('a part refused once with 503 SlowDown is sent again and the upload completes', async () => {
      // aws-sdk-go v1 signs, on the retry, the `Expect: 100-Continue` it added to the first
      // attempt; the platform (the edge, the local front) consumes Expect, so the gateway must
      // take the signed header as 100-continue or refuse every such retry.
      const { files, observer } = suite();
      const proxy = await startRefusingProxy(suite().url, (method, target) => method === 'PUT' && target.includes('partNumber=2&'));
      try {
        await appendFile(configFile, remoteSection('refusing', proxy.url));
        await rclone('copyto', ...MULTIPART_FLAGS, files.large.path, `refusing:${BUCKET}/retried.bin`);
        expect(proxy.refused).toEqual([expect.stringMatching(/^PUT \/cli-rclone\/retried\.bin\?partNumber=2&/)]);
        expect((await observer.headObject(BUCKET, 'retried.bin')).etag).toBe(expectedEtag(files.large.bytes, RCLONE_PART_SIZE));
      } finally {
        await proxy.close(); // the object goes with the others in the next test
      }
    });

    it('--s3-acl private: mkdir, a PUT, a multipart upload and a server-side copy work; --s3-acl public-read is refused', async () => {
      const { files, observer } = suite();
      const bucket = `${BUCKET}-acl`;
      const acl = (value: string) => ['--s3-acl', value, '--s3-bucket-acl', value];
      await rclone('mkdir', ...acl('private'), `${REMOTE}:${bucket}`);
      await rclone('copyto', ...acl('private'), files.small.path, `${REMOTE}:${bucket}/a`);
      await rclone('copyto', ...acl('private'), ...MULTIPART_FLAGS, files.large.path, `${REMOTE}:${bucket}/large`);
      await rclone('copyto', ...acl('private'), `${REMOTE}:${bucket}/a`, `${REMOTE}:${bucket}/a-copy`);
      expect((await observer.headObject(bucket, 'a-copy')).etag).toBe(expectedEtag(files.small.bytes));
      expect((await observer.headObject(bucket, 'large')).etag).toBe(expectedEtag(files.large.bytes, RCLONE_PART_SIZE));
      // rclone asks CreateBucket with the bucket ACL first: a public one on a new BucketOwnerEnforced bucket is AWS's InvalidBucketAclWithObjectOwnership.
      expect(await failureOf(rclone('copyto', ...acl('public-read'), files.small.path, `${REMOTE}:${bucket}/public`))).toMatch(
        /InvalidBucketAclWithObjectOwnership/,
      );
      expect((await observer.headObject(bucket, 'public')).status).toBe(404);
      expect(await failureOf(rclone('mkdir', ...acl('public-read'), `${REMOTE}:${bucket}-public`))).toMatch(/InvalidBucketAclWithObjectOwnership/);
      expect(await observer.headBucket(`${bucket}-public`)).toBe(404);
      await rclone('purge', `${REMOTE}:${bucket}`);
      expect(await observer.headBucket(bucket)).toBe(404);
    });

    it('deletefile removes one object, delete the rest', async () => {
      const { files, observer } = suite();
      await rclone('deletefile', remote(files.small.name));
      expect((await observer.headObject(BUCKET, files.small.name)).status).toBe(404);
      await rclone('delete', remote());
      for (const name of FIXTURE_NAMES) expect((await observer.headObject(BUCKET, files[name].name)).status).toBe(404);
      expect(JSON.parse((await rclone('lsjson', remote())).stdout)).toEqual([]);
    });

    it('rmdir removes the empty bucket', async () => {
      await rclone('rmdir', remote());
      expect(await suite().observer.headBucket(BUCKET)).toBe(404);
    });
  });
}
