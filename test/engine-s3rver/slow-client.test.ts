/**
 * Issue 15's proof for slow clients: a client that stops sending its body gets S3's 400
 * RequestTimeout (never a 503 blaming healthy backends), no object appears, and once the
 * collector has run the backends hold nothing for it.
 * The gateway in workerd over eight healthy s3rver processes, clientIdleSeconds 3 and no
 * garbage grace, so a collection right after the failure removes whatever the write left. Bucket
 * `slow` is 4+2 (every shard streams until the body ends, so a stalled write leaves no finished
 * shard file); bucket `wide` is 5+3, whose column units finish data shard files one after
 * another while the body arrives (column-writer.ts): a write stalled there has left files on the
 * backends, and the collector must remove them. The
 * stalled requests go over a bare socket (signed by aws4fetch, UNSIGNED-PAYLOAD, as a browser or
 * curl would send them): the SDKs cannot be made to stop mid-body.
 */
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  ListPartsCommand,
  AbortMultipartUploadCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { AwsClient } from 'aws4fetch';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { S3rverProcess } from '../backends/s3rver-harness.ts';
import { errorFields, rawSocket } from '../s3/raw-http.ts';
import { watchUncaught, type UncaughtWatch } from '../support/uncaught-watch.ts';
import { bodyBytes } from './bytes.ts';
import { DEV_CREDENTIALS, disposeServers, gatewayConfig, shardKeys, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const MiB = 1 << 20;
const IDLE_SECONDS = 3;
const BUCKET = 'slow';
const WIDE = 'wide';

let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
let s3: S3Client;
let direct: URL;
let watch: UncaughtWatch;
const signer = new AwsClient({ ...DEV_CREDENTIALS, service: 's3', region: 'us-east-1', retries: 0 });

beforeAll(async () => {
  watch = watchUncaught();
  servers = await startServers(8);
  const policies = { 'ec-4-2': { k: 4, m: 2 }, 'ec-5-3': { k: 5, m: 3 } };
  const config = {
    ...gatewayConfig(servers, { timeoutMs: 2000, policies, buckets: { [WIDE]: 'ec-5-3' } }),
    clientIdleSeconds: IDLE_SECONDS,
    garbageGraceSeconds: 0,
  };
  gateway = await startGateway(config, { inspector: true });
  direct = await gateway.directUrl();
  s3 = gateway.client({ endpoint: direct.origin });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  await s3.send(new CreateBucketCommand({ Bucket: WIDE }));
}, 180_000);

afterAll(async () => {
  watch.stop();
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
}, 60_000);

interface Stalled {
  status: number;
  fields: Record<string, string>;
}

/** A signed PUT that declares `declared` bytes, sends `sent` of them and then nothing more
 *  (the socket stays open); resolves with the gateway's answer. */
async function stalledPut(path: string, declared: number, sent: number): Promise<Stalled> {
  const url = new URL(path, direct);
  const signed = await signer.sign(url.toString(), {
    method: 'PUT',
    headers: { 'content-length': String(declared), 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
  });
  let head = `PUT ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  signed.headers.forEach((value, name) => {
    if (name !== 'host') head += `${name}: ${value}\r\n`;
  });
  if (!signed.headers.has('content-length')) head += `content-length: ${declared}\r\n`;
  head += '\r\n';
  // rawSocket keeps the socket open after the bytes it was given: the client has gone silent.
  const { status, response } = await rawSocket(url, head, sent > 0 ? bodyBytes(path, sent) : undefined);
  return { status, fields: errorFields(response) };
}

async function collect(): Promise<void> {
  const res = await signer.fetch(new URL('/_shardgate/admin/collect', direct).toString(), {
    method: 'POST',
    headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

/** Shard files of both buckets on every backend (the s3 adapter writes each with one PUT). */
async function leftOnBackends(): Promise<number> {
  let files = 0;
  for (const server of servers) for (const bucket of [BUCKET, WIDE]) files += (await shardKeys(server, bucket)).length;
  return files;
}

function expectRequestTimeout(r: Stalled): void {
  expect(r.status, JSON.stringify(r.fields)).toBe(400);
  expect(r.fields.Code).toBe('RequestTimeout');
  // The client idle timer gave the answer (auth/body-stream.ts), not a backend timeout (a 503)
  // nor the write reservation running out (another RequestTimeout).
  expect(r.fields.Message).toBe(`The request body sent nothing for ${IDLE_SECONDS} s.`);
}

describe('a client too slow to send its body', { timeout: 120_000 }, () => {
  test('headers sent, no body at all: 400 RequestTimeout, no object', async () => {
    const r = await stalledPut(`/${BUCKET}/nothing-sent`, 1 * MiB, 0);
    expectRequestTimeout(r);
    await expect(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'nothing-sent' }))).rejects.toMatchObject({ name: 'NotFound' });
  });

  test('part of a small body, then silence: 400 RequestTimeout, no object', async () => {
    const r = await stalledPut(`/${BUCKET}/small-stalled`, 200_000, 100_000);
    expectRequestTimeout(r);
    await expect(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'small-stalled' }))).rejects.toMatchObject({ name: 'NotFound' });
  });

  test('several MiB of a large body already on the backends, then silence: 400 RequestTimeout, no object', async () => {
    const r = await stalledPut(`/${BUCKET}/large-stalled`, 24 * MiB, 6 * MiB);
    expectRequestTimeout(r);
    await expect(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'large-stalled' }))).rejects.toMatchObject({ name: 'NotFound' });
  });

  test('a wide code with finished shard files on the backends, then silence: 400 RequestTimeout, no object', async () => {
    const answer = stalledPut(`/${WIDE}/wide-stalled`, 24 * MiB, 14 * MiB);
    await new Promise((r) => setTimeout(r, (IDLE_SECONDS * 1000) / 2));
    const whileStalled = await leftOnBackends(); // data shards 0 and 1 of the unit, finished
    const r = await answer;
    expectRequestTimeout(r);
    expect(whileStalled).toBeGreaterThan(0);
    await expect(s3.send(new HeadObjectCommand({ Bucket: WIDE, Key: 'wide-stalled' }))).rejects.toMatchObject({ name: 'NotFound' });
  });

  test('an UploadPart that stalls: 400 RequestTimeout, the part is not listed', async () => {
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'mpu-stalled' }));
    const r = await stalledPut(`/${BUCKET}/mpu-stalled?partNumber=1&uploadId=${encodeURIComponent(UploadId!)}`, 8 * MiB, 3 * MiB);
    expectRequestTimeout(r);
    const parts = await s3.send(new ListPartsCommand({ Bucket: BUCKET, Key: 'mpu-stalled', UploadId }));
    expect(parts.Parts ?? []).toEqual([]);
    await s3.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: 'mpu-stalled', UploadId }));
  });

  test('after collection the backends hold nothing for any of them', async () => {
    // A failed write deletes what it wrote and releases its reservation, partly in the
    // background (waitUntil); the collector takes whatever that missed. Collect until nothing is
    // left, and fail if that never happens.
    const before = await leftOnBackends();
    let left = before;
    for (let i = 0; i < 20 && left > 0; i++) {
      await collect();
      left = await leftOnBackends();
      if (left > 0) await new Promise((r) => setTimeout(r, 500));
    }
    console.log(`slow clients: ${before} shard files on the backends before collection, ${left} after`);
    expect(left).toBe(0);
  });

  test('no uncaught exception or unhandled rejection was logged', () => {
    expect(watch.lines).toEqual([]);
  });
});
