/**
 * SSE-KMS with named keys (issue 43): objects written with `x-amz-server-side-encryption: aws:kms`
 * on every write path (PutObject, CopyObject between every pair of modes, multipart, a bucket's
 * default encryption), the headers S3 answers with, the errors AWS gives (unknown key, disabled
 * key on writes and reads, aws:kms with SSE-C, a key id without aws:kms, dsse), the key table
 * through the admin API, and rotation of a named key re-wrapping data keys with no backend write.
 * Through the real gate and front door (gate-app.ts) over the product's engine and catalog,
 * signed by @aws-sdk/client-s3; a second gateway over the same catalog and backends stands for
 * another isolate.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteBucketEncryptionCommand,
  GetBucketEncryptionCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketEncryptionCommand,
  PutBucketPolicyCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { AwsClient } from 'aws4fetch';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { gateApp } from '../support/gate-app.ts';
import { CountedBackend } from '../support/counted-backend.ts';
import { sdk } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { DEV_KEY_RING } from '../support/memory-store.ts';
import { localCatalog } from '../support/local-catalog.ts';
import { readBytes } from '../support/read-bytes.ts';
import { MemoryBackend } from '../../backends/memory.ts';
import { engineSettings, parseConfig } from '../../worker/config/config.ts';
import { EcStore } from '../../worker/engine/ec-store.ts';
import { KmsKeys } from '../../worker/engine/kms-keys.ts';
import { UnitStore } from '../../worker/engine/unit-store.ts';
import { KeyRing } from '../../worker/format/seal.ts';

const B = 'kms-vault';
const ARN = (id: string) => `arn:aws:kms:us-east-1:000000000000:key/${id}`;
const md5 = (b: string | Uint8Array) => createHash('md5').update(b).digest('hex');
const C_KEY = Buffer.alloc(32, 7);
const sseC = {
  SSECustomerAlgorithm: 'AES256',
  SSECustomerKey: C_KEY.toString('base64'),
  SSECustomerKeyMD5: createHash('md5').update(C_KEY).digest('base64'),
};
const copySourceC = {
  CopySourceSSECustomerAlgorithm: 'AES256',
  CopySourceSSECustomerKey: C_KEY.toString('base64'),
  CopySourceSSECustomerKeyMD5: createHash('md5').update(C_KEY).digest('base64'),
};
/** Small (inline) and coded bodies: both seal under the named key. */
const SMALL = 'a secret of a few bytes';
const LARGE = 'k'.repeat(300_000);

type Gateway = ReturnType<typeof gateApp>;

function client(g: Gateway) {
  const send = async (command: unknown, headers: Record<string, string> = {}) => {
    // Extra headers go in before the SDK signs (as s3-tests' before-call hooks add them).
    (command as { middlewareStack: { add: (m: unknown, o: unknown) => void } }).middlewareStack.add(
      (next: (a: unknown) => unknown) => (args: { request: { headers: Record<string, string> } }) => {
        Object.assign(args.request.headers, headers);
        return next(args);
      },
      { step: 'build' },
    );
    const plain = toRequest(await sdk(command, {}))!;
    // Over TLS, as an SSE-C key must travel (sse-transport.ts): the scheme is not signed.
    const res = await g.send(new Request(plain.url.replace(/^http:/, 'https:'), plain));
    const text = res.status === 304 || command instanceof HeadObjectCommand ? '' : await res.text();
    return { status: res.status, headers: res.headers, etag: res.headers.get('etag'), code: /<Code>([^<]+)<\/Code>/.exec(text)?.[1], text };
  };
  const signer = new AwsClient({ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET, service: 's3', region: 'us-east-1', retries: 0 });
  const admin = async (path: string) => {
    const res = await g.app.fetch(await signer.sign(`http://gw.test/_shardgate/admin/${path}`, { method: 'POST' }));
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return { send, admin };
}

async function setup() {
  const g = gateApp();
  await g.store.createBucket(B, { region: 'us-east-1' });
  return { g, ...client(g) };
}

const kms = (id?: string) => ({ ServerSideEncryption: 'aws:kms' as const, ...(id === undefined ? {} : { SSEKMSKeyId: id }) });
const kmsHeaders = (r: { headers: Headers }) => [r.headers.get('x-amz-server-side-encryption'), r.headers.get('x-amz-server-side-encryption-aws-kms-key-id')];

describe('SSE-KMS writes and reads', () => {
  it('PutObject under a named key (bare id or ARN, or none: the gateway default) answers aws:kms and the ARN on PUT, HEAD and GET, with an ETag that is not the MD5', async () => {
    const { send } = await setup();
    for (const [key, body] of [
      ['small', SMALL],
      ['large', LARGE],
    ] as const) {
      const put = await send(new PutObjectCommand({ Bucket: B, Key: key, Body: body, ...kms('testkey-1') }));
      expect(put.status, put.text).toBe(200);
      expect(kmsHeaders(put)).toEqual(['aws:kms', ARN('testkey-1')]);
      expect(put.etag).toMatch(/^"[0-9a-f]{32}"$/);
      expect(put.etag).not.toBe(`"${md5(body)}"`);
      const head = await send(new HeadObjectCommand({ Bucket: B, Key: key }));
      expect([head.status, head.etag, ...kmsHeaders(head)]).toEqual([200, put.etag, 'aws:kms', ARN('testkey-1')]);
      const got = await send(new GetObjectCommand({ Bucket: B, Key: key }));
      expect([got.status, got.text === body, ...kmsHeaders(got)]).toEqual([200, true, 'aws:kms', ARN('testkey-1')]);
      const ranged = await send(new GetObjectCommand({ Bucket: B, Key: key, Range: 'bytes=3-9' }));
      expect(ranged.text).toBe(body.slice(3, 10));
    }
    const byArn = await send(new PutObjectCommand({ Bucket: B, Key: 'arn', Body: SMALL, ...kms(ARN('testkey-2')) }));
    expect(kmsHeaders(byArn)).toEqual(['aws:kms', ARN('testkey-2')]);
    const byDefault = await send(new PutObjectCommand({ Bucket: B, Key: 'default', Body: SMALL, ...kms() }));
    expect(kmsHeaders(byDefault)).toEqual(['aws:kms', ARN('aws-s3')]);
    expect((await send(new GetObjectCommand({ Bucket: B, Key: 'default' }))).text).toBe(SMALL);
    // The bucket key flag and an encryption context are recorded and echoed.
    const context = Buffer.from(JSON.stringify({ project: 'x' })).toString('base64');
    const withContext = await send(
      new PutObjectCommand({ Bucket: B, Key: 'ctx', Body: SMALL, ...kms('testkey-1'), BucketKeyEnabled: true, SSEKMSEncryptionContext: context }),
    );
    expect(withContext.status, withContext.text).toBe(200);
    const head = await send(new HeadObjectCommand({ Bucket: B, Key: 'ctx' }));
    expect(head.headers.get('x-amz-server-side-encryption-bucket-key-enabled')).toBe('true');
    expect(head.headers.get('x-amz-server-side-encryption-context')).toBe(context);
  });

  it('refuses, as AWS does: an unknown key, a key id without aws:kms, aws:kms with SSE-C, dsse, a context that is not base64 JSON', async () => {
    const { send } = await setup();
    const put = (extra: Record<string, unknown>, headers: Record<string, string> = {}) =>
      send(new PutObjectCommand({ Bucket: B, Key: 'x', Body: SMALL, ...extra }), headers);
    expect(await put(kms('no-such-key'))).toMatchObject({ status: 400, code: 'KMS.NotFoundException' });
    expect(await put(kms(ARN('no-such-key')))).toMatchObject({ status: 400, code: 'KMS.NotFoundException' });
    expect(await put({}, { 'x-amz-server-side-encryption-aws-kms-key-id': 'testkey-1' })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await put({ ServerSideEncryption: 'AES256', SSEKMSKeyId: 'testkey-1' })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await put({ ...kms('testkey-1'), ...sseC })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    expect(await put({ ServerSideEncryption: 'aws:kms:dsse' })).toMatchObject({ status: 501, code: 'NotImplemented' });
    expect(await put(kms('testkey-1'), { 'x-amz-server-side-encryption-context': 'not json' })).toMatchObject({ status: 400, code: 'InvalidArgument' });
    // A read naming aws:kms is refused (S3 takes no such header on GET).
    await put(kms('testkey-1'));
    expect((await send(new GetObjectCommand({ Bucket: B, Key: 'x' }), { 'x-amz-server-side-encryption': 'aws:kms' })).status).toBe(400);
  });

  it('a disabled key refuses writes and reads (KMS.DisabledException) until enabled again; the admin API lists the keys by ARN', async () => {
    const { g, send, admin } = await setup();
    expect(await admin('kms-keys/create?id=ops-key')).toMatchObject({
      status: 200,
      body: { id: 'ops-key', arn: ARN('ops-key'), state: 'Enabled', version: 1 },
    });
    expect((await admin('kms-keys/create?id=ops-key')).status).toBe(400);
    expect((await send(new PutObjectCommand({ Bucket: B, Key: 'o', Body: LARGE, ...kms('ops-key') }))).status).toBe(200);
    // Another isolate of the same gateway read the object (and so holds the key's material) before the disable.
    const other = client(gateApp(undefined, undefined, { catalog: g.catalog as never, backends: g.backends }));
    expect((await other.send(new GetObjectCommand({ Bucket: B, Key: 'o' }))).text).toBe(LARGE);
    expect(await admin('kms-keys/disable?id=ops-key')).toMatchObject({ status: 200, body: { state: 'Disabled' } });
    expect(await other.send(new GetObjectCommand({ Bucket: B, Key: 'o' }))).toMatchObject({ status: 400, code: 'KMS.DisabledException' });
    expect(await send(new PutObjectCommand({ Bucket: B, Key: 'p', Body: SMALL, ...kms('ops-key') }))).toMatchObject({
      status: 400,
      code: 'KMS.DisabledException',
    });
    expect(await send(new GetObjectCommand({ Bucket: B, Key: 'o' }))).toMatchObject({ status: 400, code: 'KMS.DisabledException' });
    expect(await send(new CopyObjectCommand({ Bucket: B, Key: 'c', CopySource: `${B}/o` }))).toMatchObject({ status: 400, code: 'KMS.DisabledException' });
    expect((await send(new HeadObjectCommand({ Bucket: B, Key: 'o' }))).status).toBe(400);
    await admin('kms-keys/enable?id=ops-key');
    expect((await send(new GetObjectCommand({ Bucket: B, Key: 'o' }))).text).toBe(LARGE);
    const { body } = await admin('kms-keys');
    const keys = body.keys as { id: string; arn: string; versions: unknown[] }[];
    expect(keys.map((k) => k.id)).toContain('ops-key');
    expect(JSON.stringify(keys)).not.toMatch(/wrapped"/); // never the material
  });

  it('copies between every pair of none, SSE-S3, SSE-C and SSE-KMS', async () => {
    const { send } = await setup();
    const modes = {
      none: { put: {}, get: {}, source: {}, expect: [null, null] },
      s3: { put: { ServerSideEncryption: 'AES256' as const }, get: {}, source: {}, expect: ['AES256', null] },
      c: { put: sseC, get: sseC, source: copySourceC, expect: [null, null] },
      kms: { put: kms('testkey-2'), get: {}, source: {}, expect: ['aws:kms', ARN('testkey-2')] },
    };
    for (const [from, src] of Object.entries(modes)) {
      const key = `src-${from}`;
      expect((await send(new PutObjectCommand({ Bucket: B, Key: key, Body: LARGE, ...(from === 'kms' ? kms('testkey-1') : src.put) }))).status).toBe(200);
      for (const [to, dst] of Object.entries(modes)) {
        const copy = await send(new CopyObjectCommand({ Bucket: B, Key: `${from}-${to}`, CopySource: `${B}/${key}`, ...src.source, ...dst.put }));
        expect(copy.status, `${from} -> ${to}: ${copy.text}`).toBe(200);
        if (to !== 'none') expect(kmsHeaders(copy), `${from} -> ${to}`).toEqual(dst.expect);
        const got = await send(new GetObjectCommand({ Bucket: B, Key: `${from}-${to}`, ...dst.get }));
        expect([got.status, got.text === LARGE], `${from} -> ${to}`).toEqual([200, true]);
        if (to === 'kms') expect(kmsHeaders(got)).toEqual(['aws:kms', ARN('testkey-2')]);
        if (to === 'c') expect(got.headers.get('x-amz-server-side-encryption-customer-algorithm')).toBe('AES256');
      }
    }
  });

  it('a multipart upload under a named key: its parts inherit it (their own KMS headers are not taken), Complete and reads answer aws:kms', async () => {
    const { send } = await setup();
    const created = await send(new CreateMultipartUploadCommand({ Bucket: B, Key: 'mpu', ...kms('testkey-1') }));
    expect(kmsHeaders(created)).toEqual(['aws:kms', ARN('testkey-1')]);
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.text)![1]!;
    const part = await send(new UploadPartCommand({ Bucket: B, Key: 'mpu', UploadId: uploadId, PartNumber: 1, Body: LARGE }), {
      'x-amz-server-side-encryption': 'aws:kms',
      'x-amz-server-side-encryption-aws-kms-key-id': 'testkey-not-present',
    });
    expect(part.status, part.text).toBe(200);
    expect(kmsHeaders(part)).toEqual(['aws:kms', ARN('testkey-1')]);
    expect(part.etag).not.toBe(`"${md5(LARGE)}"`);
    const done = await send(
      new CompleteMultipartUploadCommand({ Bucket: B, Key: 'mpu', UploadId: uploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.etag! }] } }),
    );
    expect(done.status, done.text).toBe(200);
    expect(kmsHeaders(done)).toEqual(['aws:kms', ARN('testkey-1')]);
    const got = await send(new GetObjectCommand({ Bucket: B, Key: 'mpu' }));
    expect([got.text === LARGE, ...kmsHeaders(got)]).toEqual([true, 'aws:kms', ARN('testkey-1')]);
    expect(await send(new CreateMultipartUploadCommand({ Bucket: B, Key: 'bad', ...kms('nope') }))).toMatchObject({
      status: 400,
      code: 'KMS.NotFoundException',
    });
  });

  it('a write in an isolate that has not seen a changed default encryption is refused (503 SlowDown) before anything is stored; its retry takes the new default', async () => {
    const { g, send } = await setup();
    const other = client(gateApp(undefined, undefined, { catalog: g.catalog as never, backends: g.backends }));
    // The other isolate sees the bucket without a default (SSE-S3), as a PUT there stores it.
    expect(kmsHeaders(await other.send(new PutObjectCommand({ Bucket: B, Key: 'before', Body: SMALL })))).toEqual(['AES256', null]);
    const rule = new PutBucketEncryptionCommand({
      Bucket: B,
      ServerSideEncryptionConfiguration: { Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: ARN('testkey-2') } }] },
    });
    expect((await send(rule)).status).toBe(200);
    for (const [key, body] of [
      ['small', SMALL],
      ['large', LARGE],
    ] as const) {
      const first = await other.send(new PutObjectCommand({ Bucket: B, Key: key, Body: body }));
      expect([first.status, first.code], key).toEqual([503, 'SlowDown']);
      expect((await send(new HeadObjectCommand({ Bucket: B, Key: key }))).status, key).toBe(404);
      const retry = await other.send(new PutObjectCommand({ Bucket: B, Key: key, Body: body }));
      expect(kmsHeaders(retry), key).toEqual(['aws:kms', ARN('testkey-2')]);
      await other.send(new DeleteBucketEncryptionCommand({ Bucket: B })); // back to no default, seen by the other isolate
      expect((await send(rule)).status).toBe(200);
    }
    // The other isolate's view has no default again while the bucket has one: a write naming its
    // own encryption is not refused.
    const named = await other.send(new PutObjectCommand({ Bucket: B, Key: 'named', Body: SMALL, ServerSideEncryption: 'AES256' }));
    expect(kmsHeaders(named)).toEqual(['AES256', null]);
  });

  it("a bucket's default encryption with a KMS key applies to writes that name none, with its bucket key flag; an unknown key is refused; a delete goes back to SSE-S3", async () => {
    const { send } = await setup();
    const rule = (algorithm: 'aws:kms' | 'AES256', keyId?: string) =>
      new PutBucketEncryptionCommand({
        Bucket: B,
        ServerSideEncryptionConfiguration: {
          Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: algorithm, ...(keyId ? { KMSMasterKeyID: keyId } : {}) }, BucketKeyEnabled: true }],
        },
      });
    expect(await send(rule('aws:kms', 'nope'))).toMatchObject({ status: 400, code: 'KMS.NotFoundException' });
    expect((await send(rule('aws:kms', ARN('testkey-2')))).status).toBe(200);
    const got = await send(new GetBucketEncryptionCommand({ Bucket: B }));
    expect(got.text).toContain('<SSEAlgorithm>aws:kms</SSEAlgorithm>');
    expect(got.text).toContain(`<KMSMasterKeyID>${ARN('testkey-2')}</KMSMasterKeyID>`);
    expect(got.text).toContain('<BucketKeyEnabled>true</BucketKeyEnabled>');
    const put = await send(new PutObjectCommand({ Bucket: B, Key: 'd', Body: LARGE }));
    expect([...kmsHeaders(put), put.headers.get('x-amz-server-side-encryption-bucket-key-enabled')]).toEqual(['aws:kms', ARN('testkey-2'), 'true']);
    expect((await send(new GetObjectCommand({ Bucket: B, Key: 'd' }))).text).toBe(LARGE);
    // A write naming its own encryption keeps it.
    expect(kmsHeaders(await send(new PutObjectCommand({ Bucket: B, Key: 'e', Body: SMALL, ServerSideEncryption: 'AES256' })))).toEqual(['AES256', null]);
    expect((await send(new DeleteBucketEncryptionCommand({ Bucket: B }))).status).toBe(204);
    expect(kmsHeaders(await send(new PutObjectCommand({ Bucket: B, Key: 'f', Body: SMALL })))).toEqual(['AES256', null]);
    expect((await send(new GetBucketEncryptionCommand({ Bucket: B }))).text).toContain('<SSEAlgorithm>AES256</SSEAlgorithm>');
  });

  it('a bucket policy sees the key id a request names as its ARN (s3:x-amz-server-side-encryption-aws-kms-key-id)', async () => {
    const { send } = await setup();
    const policy = {
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Deny',
          Principal: '*',
          Action: 's3:PutObject',
          Resource: `arn:aws:s3:::${B}/*`,
          Condition: { StringNotEquals: { 's3:x-amz-server-side-encryption-aws-kms-key-id': ARN('testkey-1') } },
        },
      ],
    };
    expect((await send(new PutBucketPolicyCommand({ Bucket: B, Policy: JSON.stringify(policy) }))).status).toBe(204);
    expect((await send(new PutObjectCommand({ Bucket: B, Key: 'ok', Body: SMALL, ...kms('testkey-1') }))).status).toBe(200);
    expect((await send(new PutObjectCommand({ Bucket: B, Key: 'ok2', Body: SMALL, ...kms(ARN('testkey-1')) }))).status).toBe(200);
    expect((await send(new PutObjectCommand({ Bucket: B, Key: 'no', Body: SMALL, ...kms('testkey-2') }))).status).toBe(403);
  });
});

describe('rotation of a named key', () => {
  it('re-wraps every data key under the new version with no backend write; another isolate reads before and after', async () => {
    const first = await setup();
    // A second isolate of the same gateway: its own catalog client and key caches, the same catalog and backends (counted).
    const counted = first.g.backends.map((b) => new CountedBackend(b));
    const second = gateApp(undefined, undefined, { catalog: first.g.catalog as never, backends: counted });
    const other = client(second);
    await first.admin('kms-keys/create?id=rot');
    const bodies = new Map<string, string>();
    for (let i = 0; i < 6; i++) {
      const body = i % 2 ? `${SMALL}-${i}` : LARGE.slice(i);
      bodies.set(`o${i}`, body);
      expect((await first.send(new PutObjectCommand({ Bucket: B, Key: `o${i}`, Body: body, ...kms('rot') }))).status).toBe(200);
    }
    // An upload in progress: its part's data key is re-wrapped too.
    const created = await first.send(new CreateMultipartUploadCommand({ Bucket: B, Key: 'open', ...kms('rot') }));
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.text)![1]!;
    const part = await first.send(new UploadPartCommand({ Bucket: B, Key: 'open', UploadId: uploadId, PartNumber: 1, Body: LARGE }));
    for (const [key, body] of bodies) expect((await other.send(new GetObjectCommand({ Bucket: B, Key: key }))).text).toBe(body);

    const kids = async () => {
      const records = await first.g.catalog.listSealRecords(B, null, 1000);
      return records.flatMap((r) => [...r.json.matchAll(/"kid":"([^"]+)"/g)].map((m) => m[1]));
    };
    expect(new Set(await kids())).toEqual(new Set(['~kms/rot/1']));
    const puts = () => counted.reduce((n, b) => n + b.puts, 0);
    const before = puts();
    expect(await other.admin('kms-keys/rotate?id=rot')).toMatchObject({ status: 200, body: { version: 2 } });
    let report: Record<string, unknown>;
    do report = (await other.admin('kms-keys/rewrap?id=rot')).body;
    while (!report.done);
    expect(puts() - before).toBe(0);
    expect(new Set(await kids())).toEqual(new Set(['~kms/rot/2']));
    // Both isolates, and a fresh one, read every object; new writes and the open upload use version 2.
    const third = client(gateApp(undefined, undefined, { catalog: first.g.catalog as never, backends: first.g.backends }));
    for (const reader of [first, other, third]) {
      for (const [key, body] of bodies) expect((await reader.send(new GetObjectCommand({ Bucket: B, Key: key }))).text, key).toBe(body);
    }
    const part2 = await other.send(new UploadPartCommand({ Bucket: B, Key: 'open', UploadId: uploadId, PartNumber: 2, Body: SMALL }));
    expect(part2.status).toBe(200);
    expect(new Set(await kids())).toEqual(new Set(['~kms/rot/2']));
    // Part 1 alone (a part before the last is at least 5 MiB): written before the rotation, read after it.
    const done = await first.send(
      new CompleteMultipartUploadCommand({ Bucket: B, Key: 'open', UploadId: uploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.etag! }] } }),
    );
    expect(done.status, done.text).toBe(200);
    expect((await third.send(new GetObjectCommand({ Bucket: B, Key: 'open' }))).text).toBe(LARGE);
    // The gateway's own rotation leaves SSE-KMS data keys alone (their key is the named one's).
    const own = await first.admin('rotate-keys?to=dev');
    expect(own.status).toBe(200);
    expect(new Set(await kids())).toEqual(new Set(['~kms/rot/2']));
    expect(DEV_KEY_RING.active).toBe('dev');
  });

  it("the gateway's own key rotation re-wraps every named key version's material under the new active key; the old key can then go", async () => {
    const A = Buffer.alloc(32, 1).toString('base64');
    const Bk = Buffer.alloc(32, 2).toString('base64');
    const catalog = localCatalog();
    const backends = Array.from({ length: 6 }, (_, i) => new MemoryBackend({ id: `g${i}`, domain: `zone-${i}` }));
    const config = parseConfig({
      backends: backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain })),
      policies: { ec: { k: 4, m: 2, blockSize: 4096 } },
      defaultPolicy: 'ec',
    });
    const gateway = (ring: KeyRing) => {
      const kms = new KmsKeys({ catalog, ring, region: 'us-east-1' });
      return { kms, store: new EcStore({ catalog, units: new UnitStore(backends, () => {}, { keyRing: kms.ring }), settings: engineSettings(config), kms }) };
    };
    const before = gateway(KeyRing.fromBase64({ a: A }, 'a'));
    await before.kms.create('kept');
    await before.store.createBucket('g', { region: 'us-east-1' });
    await before.store.putObject('g', 'o', new Response(LARGE).body!, {
      contentLength: LARGE.length,
      metadata: { user: {} },
      checksum: null,
      conditions: {},
      sse: { kind: 'kms', keyId: 'kept' },
    });
    const both = gateway(KeyRing.fromBase64({ a: A, b: Bk }, 'b'));
    expect((await both.kms.get('kept'))!.versions.map((v) => v.kid)).toEqual(['a']);
    expect(await both.kms.rewrapMaterials()).toBe(1);
    expect((await both.kms.get('kept'))!.versions.map((v) => v.kid)).toEqual(['b']);
    expect(await both.kms.rewrapMaterials()).toBe(0);
    // A gateway holding only the new key reads the SSE-KMS object: its data keys are still under the named key, whose material now opens with b.
    const after = gateway(KeyRing.fromBase64({ b: Bk }, 'b'));
    const got = await after.store.getObject('g', 'o', { conditions: {} });
    expect(Buffer.from(await readBytes(got.body)).toString()).toBe(LARGE);
  });
});
