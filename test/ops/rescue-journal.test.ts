/**
 * Losing the catalog entirely (issue 27): objects of every size are written through the real
 * gateway (`npm start`'s local default: sealed, inline objects of 4 KiB or less), with versions,
 * overwrites, deletions, a multipart upload and bucket settings; the journal is stored
 * (`shardgate journal`, as the cron does every minute); then more writes, the gateway stopped,
 * its catalog storage deleted and 2 of 6 backends deleted. `shardgate rescue`, run as a person
 * runs it, must give back every object written before the journal's last segment byte for byte,
 * inline ones included, the later coded write from its shard headers, nothing deleted, and each
 * bucket's settings; and say what it did not write. One bucket is split on line into two
 * partitions before its deletes (each partition keeps its own journal).
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  PutBucketCorsCommand,
  PutBucketTaggingCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalGateway } from '../../dev/local-gateway.ts';
import { DEV_KEY_VALUE } from '../../worker/config/key-ring.ts';
import { gatewayArgs, shardgate } from './helpers.ts';
import { oneAttemptS3Client } from '../support/s3-connections.ts';

const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const DEV_KEY = ['--key', `dev=${DEV_KEY_VALUE}`];
const CREDENTIALS = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };

describe('the catalog lost entirely: rescue from the journal, 2 of 6 backends gone', { timeout: 300_000 }, () => {
  let dir: string;
  let state: string;
  /** bucket/key -> bytes of what must come back. */
  const expected = new Map<string, Uint8Array>();
  /** bucket/key of what must not. */
  const absent: string[] = [];
  let journalRun: { code: number; stdout: string };
  let splitRun: { code: number; stdout: string };
  /** history's versions by S3 version id: key and bytes. */
  const versions = new Map<string, { key: string; bytes: Uint8Array }>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shardgate-journal-'));
    state = join(dir, 'state');
    const g = await startLocalGateway({ port: 0, hosts: ['127.0.0.1'], stateDir: state, cronSeconds: 0 });
    try {
      const s3 = oneAttemptS3Client(g.url.toString(), CREDENTIALS);
      const put = async (bucket: string, key: string, body: Uint8Array) => {
        const { VersionId } = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
        expected.set(`${bucket}/${key}`, body);
        if (VersionId) versions.set(VersionId, { key, bytes: body });
      };
      const del = async (bucket: string, key: string) => {
        await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
        expected.delete(`${bucket}/${key}`);
        absent.push(`${bucket}/${key}`);
      };
      await s3.send(new CreateBucketCommand({ Bucket: 'vault' }));
      await put('vault', 'tiny.txt', randomBytes(100)); // inline: only the catalog holds it
      await put('vault', 'edge-4k', randomBytes(4096)); // inline, at the threshold
      await put('vault', 'docs/\u00fc & \u4f60\u597d.bin', randomBytes(5000)); // coded
      await put('vault', 'large.bin', randomBytes(2_500_000 + 17));
      await put('vault', 'over', randomBytes(300_000));
      await put('vault', 'over', randomBytes(200)); // a coded object overwritten by an inline one
      await put('vault', 'gone', randomBytes(70_000));
      await put('vault', 'gone-tiny', randomBytes(10));
      // The bucket split on line at 'gone' (issue 39): the keys from there on move to a second
      // partition, whose own journal is written below. Their deletes happen there after the
      // split, so the first partition's journal still holds them: the rescue must not bring
      // them back (journal-replay.ts takes a key from the partition the root's map names).
      splitRun = await shardgate(['partitions', 'vault', '--split', 'gone', '--at', 'gone', ...gatewayArgs(g.url, CREDENTIALS)]);
      await del('vault', 'gone');
      await del('vault', 'gone-tiny');
      const key = 'big/upload.bin';
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'vault', Key: key }));
      const parts = [randomBytes(5 * 1024 * 1024), randomBytes(1234)];
      const etags: string[] = [];
      for (const [i, p] of parts.entries())
        etags.push((await s3.send(new UploadPartCommand({ Bucket: 'vault', Key: key, UploadId, PartNumber: i + 1, Body: p }))).ETag!);
      // A part uploaded twice: only the one chosen at completion is the object's.
      await s3.send(new UploadPartCommand({ Bucket: 'vault', Key: key, UploadId, PartNumber: 3, Body: randomBytes(777) }));
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: 'vault',
          Key: key,
          UploadId,
          MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        }),
      );
      expected.set(`vault/${key}`, Buffer.concat(parts));
      await s3.send(
        new PutBucketCorsCommand({
          Bucket: 'vault',
          CORSConfiguration: { CORSRules: [{ AllowedOrigins: ['https://app.example'], AllowedMethods: ['GET', 'PUT'] }] },
        }),
      );
      await s3.send(new PutBucketTaggingCommand({ Bucket: 'vault', Tagging: { TagSet: [{ Key: 'team', Value: 'blue' }] } }));

      await s3.send(new CreateBucketCommand({ Bucket: 'history' }));
      await s3.send(new PutBucketVersioningCommand({ Bucket: 'history', VersioningConfiguration: { Status: 'Enabled' } }));
      for (let i = 0; i < 3; i++) await put('history', 'doc', randomBytes(1000 + 3000 * i)); // inline, then coded
      await put('history', 'removed', randomBytes(9000));
      await del('history', 'removed'); // a delete marker: the version stays, the key is gone

      // The journal reaches the backends, as the cron stores it every minute.
      journalRun = await shardgate(['journal', ...gatewayArgs(g.url, CREDENTIALS)]);

      // Written after the journal's last segment: the coded one is on the backends with its
      // header; the inline one was only in the lost catalog (inside the recovery point).
      await put('vault', 'after.bin', randomBytes(70_000));
      await s3.send(new PutObjectCommand({ Bucket: 'vault', Key: 'after-tiny', Body: randomBytes(10) }));
      absent.push('vault/after-tiny');
    } finally {
      await g.close();
    }
    rmSync(join(state, 'v3', 'do'), { recursive: true, force: true }); // the catalog, every instance
    for (const gone of ['shardgate-local-1', 'shardgate-local-4']) rmSync(join(state, 'v3', 'r2', gone), { recursive: true, force: true });
  }, 240_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the journal is stored for the bucket list, both buckets and the split partition', () => {
    expect(splitRun.code, splitRun.stdout).toBe(0);
    expect(splitRun.stdout).toMatch(/vault: 2 partitions/);
    expect(journalRun.stdout).toMatch(/for 4 catalog instance/);
    expect(journalRun.code).toBe(0);
  });

  it("restores every object byte for byte, inline ones included, nothing deleted, and each bucket's settings", async () => {
    const out = join(dir, 'out');
    const run = await shardgate(['rescue', ...DEV_KEY, '--wrangler-state', state, '--out', out, '--json']);
    expect(run.stderr).toBe('');
    const report = JSON.parse(run.stdout) as {
      summary: Record<string, unknown> & {
        objects: number;
        rescued: number;
        fromJournal: number;
        fromHeaders: number;
        inline: number;
        notWritten: Record<string, number>;
        journal: { unreadable: unknown[]; buckets: { bucket: string; doubts: string[] }[] };
      };
      objects: { bucket: string; key: string; status: string; from: string; inline?: boolean; error?: string }[];
    };
    expect(report.objects.filter((o) => o.status !== 'ok')).toEqual([]);
    expect(run.code).toBe(0);
    expect(report.objects.map((o) => `${o.bucket}/${o.key}`).sort()).toEqual([...expected.keys()].sort());
    for (const [name, bytes] of expected) {
      const [bucket, ...key] = name.split('/');
      const got = readFileSync(join(out, bucket!, ...key.join('/').split('/')));
      expect({ name, size: got.length, md5: md5(got) }).toEqual({ name, size: bytes.length, md5: md5(bytes) });
    }
    for (const name of absent) expect(existsSync(join(out, ...name.split('/'))), `${name} must not come back`).toBe(false);
    expect(report.objects.find((o) => o.key === 'after.bin')?.from).toBe('headers');
    expect(
      report.objects
        .filter((o) => o.inline)
        .map((o) => o.key)
        .sort(),
    ).toEqual(['doc', 'edge-4k', 'over', 'tiny.txt'].filter((k) => (expected.get(`vault/${k}`) ?? expected.get(`history/${k}`))!.length <= 4096).sort());
    expect(report.summary.journal.unreadable).toEqual([]);
    expect(report.summary.journal.buckets.map((b) => [b.bucket, b.doubts])).toEqual([
      ['history', []],
      ['vault', []],
    ]);
    // history/doc: 2 noncurrent versions; history/removed: its version under the marker.
    expect(report.summary.notWritten).toMatchObject({ noncurrentVersions: 3, deleteMarkers: 1, uploadsInProgress: 0 });

    const vault = JSON.parse(readFileSync(join(out, '_shardgate', 'buckets', 'vault.json'), 'utf8'));
    expect(vault.settings.cors).toMatchObject([{ allowedOrigins: ['https://app.example'], allowedMethods: ['GET', 'PUT'] }]);
    expect(vault.settings.tagging).toEqual([{ key: 'team', value: 'blue' }]);
    const history = JSON.parse(readFileSync(join(out, '_shardgate', 'buckets', 'history.json'), 'utf8'));
    expect(history.settings.versioning).toBe('Enabled');
    expect(history.versions).toEqual({ current: 1, noncurrent: 3, deleteMarkers: 1 });
  });

  it("--bucket still reads the journal: that bucket's inline objects come back, no other bucket's", async () => {
    const out = join(dir, 'one-bucket');
    const run = await shardgate(['rescue', ...DEV_KEY, '--wrangler-state', state, '--out', out, '--bucket', 'vault']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^journal: \d+ segment\(s\); 1 bucket\(s\) as of vault /m);
    expect(md5(readFileSync(join(out, 'vault', 'tiny.txt')))).toBe(md5(expected.get('vault/tiny.txt')!));
    expect(existsSync(join(out, 'history'))).toBe(false);
  });

  it('--versions writes every noncurrent version too, and the versions file lists them newest first', async () => {
    const out = join(dir, 'versions');
    const run = await shardgate(['rescue', ...DEV_KEY, '--wrangler-state', state, '--out', out, '--bucket', 'history', '--versions', '--json']);
    expect(run.code).toBe(0);
    const listed = JSON.parse(readFileSync(join(out, '_shardgate', 'buckets', 'history.versions.json'), 'utf8')) as {
      key: string;
      versionId: string;
      isLatest: boolean;
      deleteMarker: boolean;
      file?: string;
    }[];
    const ids = [...versions.keys()];
    // doc: three versions, newest first; removed: its marker (latest), then its version.
    expect(listed.filter((v) => v.key === 'doc').map((v) => v.versionId)).toEqual(ids.filter((id) => versions.get(id)!.key === 'doc').reverse());
    expect(listed.filter((v) => v.key === 'removed').map((v) => [v.deleteMarker, v.isLatest])).toEqual([
      [true, true],
      [false, false],
    ]);
    for (const v of listed.filter((x) => x.file)) {
      const want = versions.get(v.versionId)!;
      expect({ id: v.versionId, md5: md5(readFileSync(v.file!)) }).toEqual({ id: v.versionId, md5: md5(want.bytes) });
    }
    expect(listed.filter((x) => x.file).length).toBe(3);
    expect(JSON.parse(run.stdout).summary.notWritten.noncurrentVersions).toBe(0);
  });
});
