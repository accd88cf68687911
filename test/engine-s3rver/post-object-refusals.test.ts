/**
 * Refused browser form uploads (POST Object) leave nothing behind, against the gateway in workerd
 * over six s3rver processes (shard files counted on their disks): 100 refused posts, of three
 * kinds,
 * - 40 over the policy's content-length-range (@aws-sdk/s3-presigned-post forms, SigV4), half of
 *   them small (read whole) and half 2 MiB files that would stream: refused before any byte is
 *   stored;
 * - 30 with an expired policy (SigV2 forms, as ceph/s3-tests make them);
 * - 30 whose 2 MiB file streams into the store and is then found not to end with the closing
 *   boundary: the write is aborted after its shards were sent, and they are deleted;
 * then no object, no shard file on any backend. A valid post of the same size afterwards does
 * store shards (the count can fail), and a 12 MiB file posted through the stream reads back
 * byte for byte.
 */
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { createPresignedPost } from '@aws-sdk/s3-presigned-post';
import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { bodyBytes } from './bytes.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, shardKeys, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const MiB = 1024 * 1024;
const BUCKET = 'forms';
let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
let s3: S3Client;
let endpoint: string;

beforeAll(async () => {
  servers = await startServers(6);
  gateway = await startGateway({ ...gatewayConfig(servers, { timeoutMs: 30_000 }), maxObjectSize: 64 * MiB });
  endpoint = (await gateway.directUrl()).origin;
  s3 = gateway.client({ endpoint });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
}, 180_000);

afterAll(async () => {
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
}, 120_000);

/** A multipart/form-data body of `fields` then the file; `tail` replaces the closing `--boundary--\r\n`. */
async function formBody(fields: Record<string, string>, file: Uint8Array, tail?: string) {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append('file', new Blob([file]), 'upload.bin');
  const r = new Response(fd);
  const contentType = r.headers.get('content-type')!;
  let body = new Uint8Array(await r.arrayBuffer());
  if (tail !== undefined) {
    const boundary = contentType.split('boundary=')[1]!;
    const cut = body.length - `--${boundary}--\r\n`.length;
    body = Buffer.concat([body.subarray(0, cut), Buffer.from(tail.replace('BOUNDARY', boundary))]);
  }
  return { body, contentType };
}

async function post(fields: Record<string, string>, file: Uint8Array, tail?: string) {
  const { body, contentType } = await formBody(fields, file, tail);
  const res = await fetch(`${endpoint}/${BUCKET}`, { method: 'POST', body, headers: { 'content-type': contentType } });
  const text = await res.text();
  return { status: res.status, code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? String(res.status) };
}

function v2Form(key: string, expiration: string): Record<string, string> {
  const policy = Buffer.from(JSON.stringify({ expiration, conditions: [{ bucket: BUCKET }, ['starts-with', '$key', '']] })).toString('base64');
  return {
    key,
    AWSAccessKeyId: DEV_CREDENTIALS.accessKeyId,
    policy,
    signature: createHmac('sha1', DEV_CREDENTIALS.secretAccessKey).update(policy).digest('base64'),
  };
}

/** Shard files of every bucket on the six backends. */
async function allShards(): Promise<number> {
  return (await Promise.all(servers.map((s) => shardKeys(s)))).reduce((n, keys) => n + keys.length, 0);
}

test('100 oversized, expired or broken posts store no object and leave no shard file', async () => {
  const tally = new Map<string, number>();
  const count = (what: string) => tally.set(what, (tally.get(what) ?? 0) + 1);
  const limited = await createPresignedPost(s3 as never, {
    Bucket: BUCKET,
    Key: 'big/${filename}',
    Conditions: [['content-length-range', 0, 64 * 1024]],
    Expires: 600,
  });
  const open = await createPresignedPost(s3 as never, {
    Bucket: BUCKET,
    Key: 'broken/${filename}',
    Conditions: [['content-length-range', 0, 8 * MiB]],
    Expires: 600,
  });
  for (let i = 0; i < 100; i++) {
    if (i < 40) {
      const r = await post(limited.fields, bodyBytes(`over-${i}`, i % 2 ? 2 * MiB : 100 * 1024));
      expect(r, `post ${i}`).toEqual({ status: 400, code: 'EntityTooLarge' });
      count('EntityTooLarge');
    } else if (i < 70) {
      const r = await post(v2Form(`expired-${i}`, '2024-01-01T00:00:00Z'), bodyBytes(`expired-${i}`, 1024));
      expect(r, `post ${i}`).toEqual({ status: 403, code: 'AccessDenied' });
      count('AccessDenied (expired)');
    } else {
      const r = await post(open.fields, bodyBytes(`broken-${i}`, 2 * MiB), '--BOUNDARY--');
      expect(r, `post ${i}`).toEqual({ status: 400, code: 'MalformedPOSTRequest' });
      count('MalformedPOSTRequest (aborted mid-write)');
    }
  }
  expect(Object.fromEntries(tally)).toEqual({ EntityTooLarge: 40, 'AccessDenied (expired)': 30, 'MalformedPOSTRequest (aborted mid-write)': 30 });
  expect((await s3.send(new ListObjectsV2Command({ Bucket: BUCKET }))).KeyCount).toBe(0);
  expect(await allShards(), 'shard files on the six backends after 100 refused posts').toBe(0);

  // The same 2 MiB, posted well: shards appear (the count above could have failed).
  const ok = await post(open.fields, bodyBytes('fine', 2 * MiB));
  expect(ok.status).toBe(204);
  expect(await allShards()).toBeGreaterThan(0);
});

test('a 12 MiB file posted through the stream reads back byte for byte', async () => {
  const form = await createPresignedPost(s3 as never, {
    Bucket: BUCKET,
    Key: 'large/${filename}',
    Conditions: [['content-length-range', 0, 16 * MiB]],
    Expires: 600,
  });
  const data = bodyBytes('large form', 12 * MiB);
  expect((await post(form.fields, data)).status).toBe(204);
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'large/upload.bin' }));
  const bytes = await got.Body!.transformToByteArray();
  expect(bytes.length).toBe(data.length);
  expect(createHash('sha256').update(bytes).digest('hex')).toBe(createHash('sha256').update(data).digest('hex'));
});
