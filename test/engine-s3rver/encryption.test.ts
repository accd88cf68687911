/**
 * Encryption through the real gateway in workerd over six s3rver processes, with the real AWS SDK
 * (issue 24): objects of many sizes, multipart and copies, user metadata and keys with
 * distinctive strings, SSE-S3 and SSE-C; then every stored byte of every backend is scanned: no
 * 32-byte window of any plaintext, no key, no metadata string, no bucket name in any file's
 * contents, and no object key or bucket name in any file's name. SSE-C as S3 answers it: the key on every read,
 * 400 without it, 403 with another (a part with another key than its upload's: 400), 400 for
 * bad keys, MD5s and algorithms, 501 for aws:kms:dsse, 400 for an unknown KMS key; none
 * of the refusals stores a shard file or returns a byte.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3rverBackend, type S3rverProcess } from '../backends/s3rver-harness.ts';
import { prng, randomBytes } from '../support/random.ts';
import { needs, toolPath } from '../support/prerequisites.ts';
import { readBytes } from '../support/read-bytes.ts';
import { disposeServers, gatewayConfig, shardKeys, startGateway, startServers, type Gateway } from './gateway-harness.ts';

const MiB = 1024 * 1024;
const BUCKET = 'confidential-bucket-xyz';
const KEY_A = Buffer.from(Array.from({ length: 32 }, (_, i) => i + 11));
const KEY_B = Buffer.from(Array.from({ length: 32 }, (_, i) => 99 - i));
const md5 = (b: Buffer) => createHash('md5').update(b).digest('base64');
let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
let s3: S3Client;

beforeAll(async () => {
  servers = await startServers(6);
  gateway = await startGateway({
    ...gatewayConfig(servers, { timeoutMs: 30_000, policies: { 'ec-4-2': { k: 4, m: 2, blockSize: 65536 } } }),
    maxObjectSize: 64 * MiB,
  });
  s3 = gateway.client({ endpoint: (await gateway.directUrl()).origin });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
}, 180_000);

afterAll(async () => {
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
}, 120_000);

const sseC = (key: Buffer) => ({ SSECustomerAlgorithm: 'AES256', SSECustomerKey: key.toString('base64'), SSECustomerKeyMD5: md5(key) });
async function body(r: { Body?: unknown }): Promise<Buffer> {
  return Buffer.from(await (r.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}
async function status(p: Promise<unknown>): Promise<{ status: number; code?: string }> {
  try {
    await p;
    return { status: 200 };
  } catch (err) {
    const e = err as { $metadata?: { httpStatusCode?: number }; name?: string; Code?: string };
    return { status: e.$metadata?.httpStatusCode ?? 0, code: e.Code ?? e.name };
  }
}
async function shardFileCount(): Promise<number> {
  let n = 0;
  for (const s of servers) n += (await shardKeys(s, BUCKET)).length;
  return n;
}

describe('encryption through the gateway', () => {
  const rand = prng(2424);
  const written: { key: string; data: Buffer; marker: string }[] = [];

  it('objects of every size, SSE-S3, SSE-C, multipart and copies read back; every read of an SSE-C object needs its key', async () => {
    for (const [i, size] of [0, 1, 13, 4096, 4097, 100_000, 1_000_000, 9 * MiB].entries()) {
      const data = Buffer.from(randomBytes(rand, size));
      const key = `secret-object-name-${i}`,
        marker = `distinctive-metadata-value-${i}`;
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: data, Metadata: { marker } }));
      written.push({ key, data, marker });
    }
    // SSE-S3: accepted and echoed on PUT and GET.
    const s3data = Buffer.from(randomBytes(rand, 70_000));
    const put = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'secret-sse-s3', Body: s3data, ServerSideEncryption: 'AES256' }));
    expect(put.ServerSideEncryption).toBe('AES256');
    // Every sealed object says so (SSE-S3: encrypted at rest by the server), asked for or not.
    expect((await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: written[0]!.key }))).ServerSideEncryption).toBe('AES256');
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'secret-sse-s3' }));
    expect(got.ServerSideEncryption).toBe('AES256');
    expect((await body(got)).equals(s3data)).toBe(true);
    written.push({ key: 'secret-sse-s3', data: s3data, marker: 'secret-sse-s3' });

    // SSE-C: single PUT, small (inline) and coded.
    for (const size of [100, 300_000]) {
      const data = Buffer.from(randomBytes(rand, size));
      const key = `secret-sse-c-${size}`;
      const p = await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: data, ...sseC(KEY_A) }));
      expect(p.SSECustomerKeyMD5).toBe(md5(KEY_A));
      const r = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, ...sseC(KEY_A) }));
      expect(r.SSECustomerKeyMD5).toBe(md5(KEY_A));
      expect((await body(r)).equals(data)).toBe(true);
      const ranged = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: 'bytes=7-77', ...sseC(KEY_A) }));
      expect((await body(ranged)).equals(data.subarray(7, 78))).toBe(true);
      expect((await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key, ...sseC(KEY_A) }))).ContentLength).toBe(size);
      expect(await status(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key })))).toMatchObject({ status: 400 });
      expect(await status(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })))).toMatchObject({ status: 400 });
      expect(await status(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, ...sseC(KEY_B) })))).toMatchObject({ status: 403 });
      written.push({ key, data, marker: key });
    }

    // SSE-C multipart: every part with the key; a part without it, or with another, is refused.
    const mpKey = 'secret-multipart-sse-c';
    const up = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: mpKey, Metadata: { marker: 'distinctive-multipart' }, ...sseC(KEY_A) }));
    const parts = [Buffer.from(randomBytes(rand, 5 * MiB)), Buffer.from(randomBytes(rand, 123_457))];
    const etags: string[] = [];
    for (const [i, p] of parts.entries())
      etags.push(
        (await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: mpKey, UploadId: up.UploadId, PartNumber: i + 1, Body: p, ...sseC(KEY_A) }))).ETag!,
      );
    expect(await status(s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: mpKey, UploadId: up.UploadId, PartNumber: 3, Body: parts[1] })))).toMatchObject({
      status: 400,
    });
    // Another key than the upload's is bad input for a part (400, as AWS and RGW answer).
    expect(
      await status(s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: mpKey, UploadId: up.UploadId, PartNumber: 3, Body: parts[1], ...sseC(KEY_B) }))),
    ).toMatchObject({ status: 400, code: 'InvalidArgument' });
    // Complete: the key is optional, as on AWS; another key than the upload's is refused (400).
    const completeParts = { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) };
    expect(
      await status(
        s3.send(new CompleteMultipartUploadCommand({ Bucket: BUCKET, Key: mpKey, UploadId: up.UploadId, MultipartUpload: completeParts, ...sseC(KEY_B) })),
      ),
    ).toMatchObject({ status: 400, code: 'InvalidArgument' });
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: BUCKET, Key: mpKey, UploadId: up.UploadId, MultipartUpload: completeParts }));
    const whole = Buffer.concat(parts);
    expect((await body(await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: mpKey, ...sseC(KEY_A) })))).equals(whole)).toBe(true);
    expect(await status(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: mpKey })))).toMatchObject({ status: 400 });
    written.push({ key: mpKey, data: whole, marker: 'distinctive-multipart' });

    // Copy: an SSE-C source needs its key (x-amz-copy-source-…); the target is encrypted as asked.
    expect(await status(s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key: 'secret-copy', CopySource: `${BUCKET}/${mpKey}` })))).toMatchObject({
      status: 400,
    });
    await s3.send(
      new CopyObjectCommand({
        Bucket: BUCKET,
        Key: 'secret-copy',
        CopySource: `${BUCKET}/${mpKey}`,
        CopySourceSSECustomerAlgorithm: 'AES256',
        CopySourceSSECustomerKey: KEY_A.toString('base64'),
        CopySourceSSECustomerKeyMD5: md5(KEY_A),
        ...sseC(KEY_B),
      }),
    );
    expect((await body(await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'secret-copy', ...sseC(KEY_B) })))).equals(whole)).toBe(true);
    expect(await status(s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'secret-copy', ...sseC(KEY_A) })))).toMatchObject({ status: 403 });
  }, 600_000);

  it("boto3 (Debian's python3-boto3): an SSE-C round trip, single PUT and multipart (upload_fileobj), and the refusals", {
    ...needs('boto3'),
    timeout: 180_000,
  }, async () => {
    const script = `
import boto3, botocore, io, os, sys
from boto3.s3.transfer import TransferConfig
s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3], region_name='us-east-1',
                  config=botocore.config.Config(s3={'addressing_style': 'path'}))
key, other = bytes(range(32)), bytes(range(100, 132))
sse = lambda k: {'SSECustomerAlgorithm': 'AES256', 'SSECustomerKey': k}
small, big = os.urandom(70000), os.urandom(12 * 1024 * 1024)
s3.put_object(Bucket=sys.argv[4], Key='boto3-sse-c', Body=small, **sse(key))
assert s3.get_object(Bucket=sys.argv[4], Key='boto3-sse-c', **sse(key))['Body'].read() == small
s3.upload_fileobj(io.BytesIO(big), sys.argv[4], 'boto3-sse-c-mp', ExtraArgs=sse(key), Config=TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024))
got = io.BytesIO()
s3.download_fileobj(sys.argv[4], 'boto3-sse-c-mp', got, ExtraArgs=sse(key))
assert got.getvalue() == big
for extra, status in (({}, 400), (sse(other), 403)):
    try:
        s3.get_object(Bucket=sys.argv[4], Key='boto3-sse-c', **extra)
        raise SystemExit('read without the right key succeeded')
    except botocore.exceptions.ClientError as e:
        assert e.response['ResponseMetadata']['HTTPStatusCode'] == status, e.response
print('ok')
`;
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const origin = (await gateway!.directUrl()).origin;
    const { stdout } = await promisify(execFile)(toolPath('boto3'), ['-c', script, origin, 'shardgate-dev', 'shardgate-dev-secret', BUCKET], {
      timeout: 120_000,
    });
    expect(stdout.trim()).toBe('ok');
  });

  it("bad SSE input is refused with S3's errors and stores nothing", async () => {
    const before = await shardFileCount();
    const data = Buffer.from(randomBytes(rand, 200_000));
    async function fetchPut(headers: Record<string, string>) {
      // The SDK refuses some of these itself: sent through it with the headers overridden.
      const c = gateway!.client({ endpoint: (await gateway!.directUrl()).origin });
      c.middlewareStack.add(
        (next) => async (args) => {
          const req = args.request as { headers: Record<string, string> };
          for (const [k, v] of Object.entries(headers)) {
            if (v === '') delete req.headers[k];
            else req.headers[k] = v;
          }
          return next(args);
        },
        { step: 'build', priority: 'low' },
      );
      return status(c.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'refused', Body: data })));
    }
    const ALG = 'x-amz-server-side-encryption-customer-algorithm',
      KEY = 'x-amz-server-side-encryption-customer-key',
      KMD5 = 'x-amz-server-side-encryption-customer-key-md5';
    const short = Buffer.alloc(16, 7);
    expect(await fetchPut({ [ALG]: 'AES256', [KEY]: short.toString('base64'), [KMD5]: md5(short) })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await fetchPut({ [ALG]: 'AES256', [KEY]: KEY_A.toString('base64'), [KMD5]: md5(KEY_B) })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await fetchPut({ [ALG]: 'AES256', [KEY]: KEY_A.toString('base64') })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await fetchPut({ [ALG]: 'AES256' })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await fetchPut({ [KEY]: KEY_A.toString('base64'), [KMD5]: md5(KEY_A) })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await fetchPut({ [ALG]: 'DES', [KEY]: KEY_A.toString('base64'), [KMD5]: md5(KEY_A) })).toMatchObject({
      status: 400,
      code: 'InvalidEncryptionAlgorithmError',
    });
    expect(await fetchPut({ 'x-amz-server-side-encryption': 'aws:kms:dsse' })).toMatchObject({ status: 501, code: 'NotImplemented' });
    // SSE-KMS (issue 43): a key the gateway does not have, or a key id without aws:kms, is refused before anything is stored.
    expect(await fetchPut({ 'x-amz-server-side-encryption': 'aws:kms', 'x-amz-server-side-encryption-aws-kms-key-id': 'no-such-key' })).toMatchObject({
      status: 400,
      code: 'KMS.NotFoundException',
    });
    expect(await fetchPut({ 'x-amz-server-side-encryption-aws-kms-key-id': 'testkey-1' })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await fetchPut({ 'x-amz-server-side-encryption': 'AES128' })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await shardFileCount(), 'shard files after refused PUTs').toBe(before);
    expect(await status(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'refused' })))).toMatchObject({ status: 404 });
  }, 120_000);

  it('no backend holds a readable byte: plaintext, keys, metadata, bucket name', async () => {
    const enc = (t: string) => Buffer.from(t);
    const needles = [enc(BUCKET), ...written.flatMap((w) => [enc(w.key), enc(w.marker)])];
    let files = 0;
    for (const server of servers) {
      const backend = s3rverBackend(server);
      for (const name of await shardKeys(server)) {
        files++;
        expect(name.includes('secret-')).toBe(false);
        // Names too: shelved units are named by an opaque shelf, not by their bucket (format/shelf.ts).
        for (const n of needles) expect(name.includes(n.toString()), `the name ${name} holds "${n}"`).toBe(false);
        const bytes = Buffer.from(await readBytes((await backend.get(name)).body));
        for (const n of needles) expect(bytes.includes(n), `${name} holds "${n}"`).toBe(false);
        for (const w of written) {
          for (let at = 0; at + 32 <= w.data.length; at += Math.max(32, Math.floor(w.data.length / 128))) {
            expect(bytes.includes(w.data.subarray(at, at + 32)), `${name} holds plaintext of ${w.key} at ${at}`).toBe(false);
          }
        }
      }
    }
    expect(files).toBeGreaterThan(40);
  }, 300_000);
});
