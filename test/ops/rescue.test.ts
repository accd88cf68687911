/**
 * `shardgate rescue` and `verify`: the proof that data never depends on the gateway. Objects are
 * stored through the real gateway (single PUTs of several sizes, a key with non-ASCII characters,
 * an overwritten key, a multipart upload); then the gateway is stopped, its catalog deleted and
 * m = 2 of its 6 backends deleted; the command, run as a person runs it, must write every object
 * back byte for byte from what is left. Twice: from a wrangler state directory (npm start's
 * local R2 buckets, read as files) and from S3-compatible endpoints (six s3rver processes, two of
 * them gone). `verify` reports what is missing and, once a third shard of an object is damaged,
 * that this object is lost, and rescue then refuses to write it.
 */
import { CompleteMultipartUploadCommand, CreateBucketCommand, CreateMultipartUploadCommand, PutObjectCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalGateway } from '../../dev/local-gateway.ts';
import { disposeServers, gatewayConfig, startGateway, startServers } from '../engine-s3rver/gateway-harness.ts';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { shardgate } from './helpers.ts';

const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

/** What the tests store: key -> bytes (the newest write of each key). */
async function storeObjects(s3: S3Client, bucket: string): Promise<Map<string, Uint8Array>> {
  const stored = new Map<string, Uint8Array>();
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const put = async (key: string, body: Uint8Array) => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    stored.set(key, body);
  };
  await put('small.bin', randomBytes(5000)); // just over the inline threshold: coded
  await put('photos/2024/\u00fc & \u4f60\u597d.jpg', randomBytes(2_500_000 + 17)); // several stripes, a short last one
  await put('over', randomBytes(300_000));
  await put('over', randomBytes(400_000)); // the old version is still on the backends: the newest must win
  const key = 'big/upload.bin';
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const parts = [randomBytes(5 * 1024 * 1024), randomBytes(1234)];
  const etags: string[] = [];
  for (const [i, p] of parts.entries()) etags.push((await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: p }))).ETag!);
  await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) } }));
  stored.set(key, Buffer.concat(parts));
  return stored;
}

function expectRescued(out: string, bucket: string, stored: Map<string, Uint8Array>, except: string[] = []) {
  for (const [key, bytes] of stored) {
    if (except.includes(key)) continue;
    const got = readFileSync(join(out, bucket, ...key.split('/')));
    expect(got.length, key).toBe(bytes.length);
    expect(md5(got), key).toBe(md5(bytes));
  }
}

describe('rescue from a wrangler state directory: no gateway, no catalog, 2 of 6 backends gone', { timeout: 300_000 }, () => {
  let dir: string;
  let state: string;
  let stored: Map<string, Uint8Array>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shardgate-rescue-'));
    state = join(dir, 'state');
    const g = await startLocalGateway({ port: 0, hosts: ['127.0.0.1'], stateDir: state, cronSeconds: 0 });
    try {
      const s3 = new S3Client({ endpoint: g.url.toString(), region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' }, maxAttempts: 1 });
      stored = await storeObjects(s3, 'vault');
    } finally {
      await g.close();
    }
    rmSync(join(state, 'v3', 'do'), { recursive: true, force: true }); // the catalog
    for (const gone of ['shardgate-local-1', 'shardgate-local-4']) rmSync(join(state, 'v3', 'r2', gone), { recursive: true, force: true });
  }, 240_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes every object back byte for byte', async () => {
    const out = join(dir, 'out');
    const run = await shardgate(['rescue', '--wrangler-state', state, '--out', out, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as { summary: { objects: number; rescued: number }; objects: { key: string; status: string; decodedAround: unknown[]; multipart?: unknown }[] };
    expect(report.summary).toMatchObject({ objects: stored.size, rescued: stored.size });
    expect(report.objects.every((o) => o.status === 'ok' && o.decodedAround.length > 0)).toBe(true); // every object lost shards
    expect(report.objects.find((o) => o.key === 'big/upload.bin')?.multipart).toMatchObject({ parts: 2 });
    expectRescued(out, 'vault', stored);
  });

  it('verify names the missing shards, then a third damaged shard of one object makes it lost', async () => {
    const before = await shardgate(['verify', '--wrangler-state', state, '--json']);
    expect(before.code).toBe(1); // damage, all recoverable
    const r1 = JSON.parse(before.stdout) as { summary: { degraded: number; lost: number }; problems: { backend: string; problem: string }[] };
    expect(r1.summary).toMatchObject({ degraded: stored.size, lost: 0 });
    expect(new Set(r1.problems.map((p) => p.backend))).toEqual(new Set(['local-1', 'local-4']));
    expect(r1.problems.every((p) => p.problem === 'missing')).toBe(true);

    // Flip one byte inside a block of the current 'over' shard on local-0 (not its header).
    const blobs = join(state, 'v3', 'r2', 'shardgate-local-0', 'blobs');
    const file = readdirSync(blobs).map((f) => join(blobs, f)).find((f) => {
      const head = readFileSync(f).subarray(0, 2048).toString('latin1');
      return head.includes('"key":"over"') && head.includes('"size":400000');
    })!;
    const bytes = readFileSync(file);
    bytes[bytes.length - 5000]! ^= 0x40;
    writeFileSync(file, bytes);

    const after = await shardgate(['verify', '--wrangler-state', state]);
    expect(after.code).toBe(3);
    expect(after.stdout).toMatch(/^LOST vault\/over: /m);
    expect(after.stdout).toMatch(/vault\/over unit \w+ shard \d+ on local-0: .*checksum/);
    const out = join(dir, 'out-2');
    const rescue = await shardgate(['rescue', '--wrangler-state', state, '--out', out]);
    expect(rescue.code).toBe(1);
    expect(rescue.stdout).toMatch(/^FAILED {2}vault\/over: /m);
    expect(() => readFileSync(join(out, 'vault', 'over'))).toThrow(); // never written with wrong bytes
    expectRescued(out, 'vault', stored, ['over']);
  });
});

describe('rescue from S3-compatible backends: 2 of 6 s3rver processes gone', { timeout: 300_000 }, () => {
  let servers: S3rverProcess[];
  let dir: string;
  let stored: Map<string, Uint8Array>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shardgate-rescue-s3-'));
    servers = await startServers(6);
    const g = await startGateway(gatewayConfig(servers, { blockSize: 65536 }));
    try {
      stored = await storeObjects(g.client(), 'vault');
    } finally {
      await g.dispose(); // the catalog goes with the gateway's state directory
    }
    await disposeServers([servers[0]!, servers[3]!]);
  }, 240_000);

  afterAll(async () => {
    if (servers) await disposeServers(servers);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes every object back byte for byte, reading the four endpoints left', async () => {
    const out = join(dir, 'out');
    const from = [1, 2, 4, 5].flatMap((i) => ['--from', `${servers[i]!.endpoint.replace('http://', 'http://S3RVER:S3RVER@')}/b`]);
    const run = await shardgate(['rescue', ...from, '--bucket', 'vault', '--out', out, '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).summary).toMatchObject({ objects: stored.size, rescued: stored.size });
    expectRescued(out, 'vault', stored);
    const only = await shardgate(['rescue', ...from, '--prefix', 'photos/', '--out', join(dir, 'only'), '--json']);
    expect(JSON.parse(only.stdout).objects.map((o: { key: string }) => o.key)).toEqual(['photos/2024/\u00fc & \u4f60\u597d.jpg']);
  });
});
