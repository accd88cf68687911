/**
 * The catalog lost, and rebuilt inside the gateway, in workerd (issues 37 and 47). Through
 * `npm start`'s local gateway (six local R2 buckets, sealed, inline objects of 4 KiB or less):
 * objects of every kind are written (inline, coded, multipart, overwritten, deleted, versions,
 * delete markers, tags, user metadata, bucket settings), the journal is stored as the cron stores
 * it, the gateway is stopped, its catalog storage deleted and 2 of 6 backends wiped (m of a 4+2
 * pool). A new gateway on that state, then `shardgate rebuild` of each bucket (the operator's
 * command, run inside the gateway): every version comes back in its order with its bytes, tags
 * and metadata, every delete marker, every setting, nothing deleted, and the journal reads
 * without an unreadable segment. Before, workerd failed every segment with "detached
 * ArrayBuffer" (journal-restore.ts kept the sealed records' plaintext past the next read, which
 * sealed-read.ts releases) and the rebuild fell back to shard headers: deleted objects came back,
 * inline, multipart and noncurrent versions and settings were lost.
 * The bucket 'vault' is split on line and merged back on line before the loss (issue 39): the
 * journals of both partitions, the retired one's included, are read, and no key deleted after
 * the split or after the merge comes back.
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
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalGateway, type LocalGateway } from '../../dev/local-gateway.ts';
import { bucketPicture, type BucketPicture } from './bucket-picture.ts';
import { gatewayArgs, shardgate } from './helpers.ts';
import { oneAttemptS3Client } from '../support/s3-connections.ts';

const CREDENTIALS = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };
const BUCKETS = ['vault', 'history'];

describe('the catalog lost entirely, rebuilt inside the gateway from its journal, 2 of 6 backends wiped', { timeout: 300_000 }, () => {
  let dir: string;
  let state: string;
  let gateway: LocalGateway | undefined;
  let s3: S3Client;
  const before = new Map<string, BucketPicture>();
  const deleted: string[] = [];

  const client = (g: LocalGateway) => oneAttemptS3Client(g.url.toString(), CREDENTIALS);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shardgate-rebuild-'));
    state = join(dir, 'state');
    const g = await startLocalGateway({ port: 0, hosts: ['127.0.0.1'], stateDir: state, cronSeconds: 0 });
    try {
      s3 = client(g);
      const put = (bucket: string, key: string, body: Uint8Array, extra: { Metadata?: Record<string, string>; Tagging?: string; ContentType?: string } = {}) =>
        s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ...extra }));
      await s3.send(new CreateBucketCommand({ Bucket: 'vault' }));
      await put('vault', 'tiny.txt', randomBytes(100), { Metadata: { owner: 'ana' }, Tagging: 'class=small', ContentType: 'text/plain' }); // inline
      await put('vault', 'docs/\u00fc & \u4f60\u597d.bin', randomBytes(5000), { Metadata: { project: 'x' } }); // coded
      await put('vault', 'large.bin', randomBytes(1_500_000 + 17), { Tagging: 'class=large&keep=yes' }); // several records, stripes
      await put('vault', 'over', randomBytes(300_000));
      await put('vault', 'over', randomBytes(200)); // a coded object overwritten by an inline one
      await put('vault', 'gone', randomBytes(70_000));
      await put('vault', 'gone-tiny', randomBytes(10));
      // Split on line at 'gone' (issue 39): the deletes below happen in the second partition, and
      // the first one's journal still holds the keys; the rebuild must not bring them back.
      const split = await shardgate(['partitions', 'vault', '--split', 'gone', '--at', 'gone', ...gatewayArgs(g.url, CREDENTIALS)]);
      expect(split.stdout, split.stderr).toMatch(/vault: 2 partitions/);
      for (const key of ['gone', 'gone-tiny']) {
        await s3.send(new DeleteObjectCommand({ Bucket: 'vault', Key: key }));
        deleted.push(`vault/${key}`);
      }
      // Merged back on line: the second partition's journal stops (it still holds 'merged-away'),
      // the first one's goes on with its range; the delete after the merge is in the first one's
      // journal only, and the rebuild must not bring the key back from the retired one's.
      await put('vault', 'merged-away', randomBytes(3000));
      const merge = await shardgate(['partitions', 'vault', '--merge', 'gone', ...gatewayArgs(g.url, CREDENTIALS)]);
      expect(merge.stdout, merge.stderr).toMatch(/vault: 1 partition\b/);
      await s3.send(new DeleteObjectCommand({ Bucket: 'vault', Key: 'merged-away' }));
      deleted.push('vault/merged-away');
      await put('vault', 'after-merge', randomBytes(6000)); // in the range merged, written after
      const key = 'big/upload.bin';
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: 'vault', Key: key, Metadata: { parts: 'two' } }));
      const parts = [randomBytes(5 * 1024 * 1024), randomBytes(1234)];
      const etags: string[] = [];
      for (const [i, p] of parts.entries())
        etags.push((await s3.send(new UploadPartCommand({ Bucket: 'vault', Key: key, UploadId, PartNumber: i + 1, Body: p }))).ETag!);
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: 'vault',
          Key: key,
          UploadId,
          MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        }),
      );
      await s3.send(
        new PutBucketCorsCommand({
          Bucket: 'vault',
          CORSConfiguration: { CORSRules: [{ AllowedOrigins: ['https://app.example'], AllowedMethods: ['GET', 'PUT'] }] },
        }),
      );
      await s3.send(new PutBucketTaggingCommand({ Bucket: 'vault', Tagging: { TagSet: [{ Key: 'team', Value: 'blue' }] } }));

      await s3.send(new CreateBucketCommand({ Bucket: 'history' }));
      await s3.send(new PutBucketVersioningCommand({ Bucket: 'history', VersioningConfiguration: { Status: 'Enabled' } }));
      for (let i = 0; i < 3; i++) await put('history', 'doc', randomBytes(1000 + 3000 * i), { Metadata: { rev: String(i) } }); // inline, then coded
      await put('history', 'removed', randomBytes(9000), { Tagging: 'state=old' });
      await s3.send(new DeleteObjectCommand({ Bucket: 'history', Key: 'removed' })); // a delete marker over its version

      for (const b of BUCKETS) before.set(b, await bucketPicture(s3, b));
      const stored = await shardgate(['journal', ...gatewayArgs(g.url, CREDENTIALS)]);
      expect(stored.code, stored.stderr).toBe(0);
    } finally {
      await g.close();
    }
    rmSync(join(state, 'v3', 'do'), { recursive: true, force: true }); // the catalog, every instance
    for (const wiped of ['shardgate-local-1', 'shardgate-local-4']) rmSync(join(state, 'v3', 'r2', wiped), { recursive: true, force: true });
    gateway = await startLocalGateway({ port: 0, hosts: ['127.0.0.1'], stateDir: state, cronSeconds: 0 });
    s3 = client(gateway);
  }, 240_000);

  afterAll(async () => {
    await gateway?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('shardgate rebuild restores each bucket from the journal: every version, marker, tag, metadata and setting; nothing deleted comes back', async () => {
    for (const bucket of BUCKETS) {
      const run = await shardgate([
        'rebuild',
        '--bucket',
        bucket,
        '--json',
        '--endpoint',
        gateway!.url.toString(),
        '--access-key-id',
        CREDENTIALS.accessKeyId,
        '--secret-access-key',
        CREDENTIALS.secretAccessKey,
      ]);
      expect(run.stderr, bucket).toBe('');
      const r = JSON.parse(run.stdout) as { restored: string[]; journal: { unreadable: unknown[]; doubts: string[]; asOf: string | null; skipped?: string } };
      expect(r.journal.unreadable, `${bucket}: journal segments that could not be read`).toEqual([]);
      expect(r.journal.doubts, bucket).toEqual([]);
      expect(r.journal.asOf, bucket).not.toBeNull();
      expect(r.journal.skipped, bucket).toBeUndefined();
      expect(r.restored, `${bucket}: nothing was written after the journal, so the headers add nothing`).toEqual([]);
      expect(run.code, bucket).toBe(0);
    }
    for (const bucket of BUCKETS) expect(await bucketPicture(s3, bucket), bucket).toEqual(before.get(bucket));
    const vault = before.get('vault')!;
    expect(vault.versions.map((v) => v.key).sort()).toEqual([
      'after-merge',
      'big/upload.bin',
      'docs/\u00fc & \u4f60\u597d.bin',
      'large.bin',
      'over',
      'tiny.txt',
    ]);
    for (const name of deleted)
      expect(
        vault.versions.some((v) => `vault/${v.key}` === name),
        name,
      ).toBe(false);
    expect(before.get('history')!.versions).toHaveLength(4);
    expect(before.get('history')!.markers).toHaveLength(1);
  });
});
