/**
 * Bucket policies through the real front door in Node (test/support/gate-app.ts: the real gate and
 * scopes, EcStore over memory parts): Put/Get/Delete/GetBucketPolicyStatus and their errors; the
 * gate refusing what an explicit Deny matches before the handler runs (nothing stored, nothing
 * deleted), for object writes with SSE conditions, reads by prefix, listings by s3:prefix,
 * existing and requested object tags, copy sources and each entry of DeleteObjects; the policy
 * operations never locked out; an Allow never widening a key's scope; who may manage a policy.
 */
import {
  CopyObjectCommand,
  DeleteBucketPolicyCommand,
  DeleteObjectsCommand,
  GetBucketPolicyCommand,
  GetBucketPolicyStatusCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutBucketPolicyCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
} from '@aws-sdk/client-s3';
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { sdk, type SignAs } from '../auth/mutation/bases.ts';
import { SCOPES } from '../auth/mutation/scoped-gateway.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { gateApp, GATE_HOST } from '../support/gate-app.ts';

const BUCKET = 'fz';
const READ_ONLY = SCOPES[0]!;
const ONE_BUCKET = SCOPES[1]!;

/** The all-powerful test key and two scoped ones; bucket fz with objects obj and dir/obj.txt. */
async function scopedGateway() {
  const g = gateApp(undefined, [{ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET }, ...[READ_ONLY, ONE_BUCKET].map((s) => ({ accessKeyId: s.accessKeyId, secretAccessKey: s.secret, scope: s.grant }))]);
  await g.store.createBucket(BUCKET, { region: 'us-east-1' });
  for (const [key, text] of [['obj', 'object body'], ['dir/obj.txt', 'nested object']] as const) {
    await g.store.putObject(BUCKET, key, new Response(text).body!, { contentLength: text.length, contentMD5: null, metadata: { user: {} }, checksum: null, conditions: {} });
  }
  return g;
}

type Gateway = Awaited<ReturnType<typeof scopedGateway>>;

async function send(g: Gateway, command: unknown, as: SignAs = {}): Promise<Response> {
  return g.send(toRequest(await sdk(command, as))!);
}

const codeOf = (text: string) => /<Code>([^<]+)<\/Code>/.exec(text)?.[1];

function policy(...statements: Record<string, unknown>[]): string {
  return JSON.stringify({ Version: '2012-10-17', Statement: statements });
}

const denyPut = (condition: Record<string, unknown>) => ({ Effect: 'Deny', Principal: { AWS: '*' }, Action: 's3:PutObject', Resource: `arn:aws:s3:::${BUCKET}/*`, Condition: condition });

async function putPolicy(g: Gateway, text: string): Promise<void> {
  const res = await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: text }));
  expect(res.status, await res.clone().text()).toBe(204);
}

async function exists(g: Gateway, key: string): Promise<boolean> {
  return g.store.headObject(BUCKET, key, { conditions: {} }).then(() => true, () => false);
}

describe('PutBucketPolicy, GetBucketPolicy, DeleteBucketPolicy, GetBucketPolicyStatus', () => {
  it('a bucket without a policy: NoSuchBucketPolicy for both reads; a missing bucket NoSuchBucket', async () => {
    const g = await scopedGateway();
    for (const command of [new GetBucketPolicyCommand({ Bucket: BUCKET }), new GetBucketPolicyStatusCommand({ Bucket: BUCKET })]) {
      const res = await send(g, command);
      expect(res.status).toBe(404);
      expect(codeOf(await res.text())).toBe('NoSuchBucketPolicy');
    }
    const res = await send(g, new PutBucketPolicyCommand({ Bucket: 'missing', Policy: policy(denyPut({})).replaceAll(BUCKET, 'missing') }));
    expect(codeOf(await res.text())).toBe('NoSuchBucket');
  });

  it('put, get (the document as put, JSON), status, delete (204, twice), then NoSuchBucketPolicy again', async () => {
    const g = await scopedGateway();
    const text = policy({ Sid: 'public', Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/*` });
    await putPolicy(g, text);
    const got = await send(g, new GetBucketPolicyCommand({ Bucket: BUCKET }));
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('application/json');
    expect(await got.text()).toBe(text);
    const status = await send(g, new GetBucketPolicyStatusCommand({ Bucket: BUCKET }));
    expect(await status.text()).toMatch(/<PolicyStatus[^>]*><IsPublic>true<\/IsPublic><\/PolicyStatus>/);
    for (let i = 0; i < 2; i++) expect((await send(g, new DeleteBucketPolicyCommand({ Bucket: BUCKET }))).status).toBe(204);
    expect(codeOf(await (await send(g, new GetBucketPolicyCommand({ Bucket: BUCKET }))).text())).toBe('NoSuchBucketPolicy');
  });

  it('a bad document is 400 MalformedPolicy and leaves the stored policy as it was', async () => {
    const g = await scopedGateway();
    const good = policy(denyPut({ Null: { 's3:x-amz-server-side-encryption': 'true' } }));
    await putPolicy(g, good);
    for (const bad of ['not json', policy({ ...denyPut({}), Resource: 'arn:aws:s3:::another-bucket/*' }), policy({ ...denyPut({}), Action: 's3:Teleport' })]) {
      const res = await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: bad }));
      expect(res.status).toBe(400);
      expect(codeOf(await res.text())).toBe('MalformedPolicy');
    }
    expect(await (await send(g, new GetBucketPolicyCommand({ Bucket: BUCKET }))).text()).toBe(good);
  });

  it('managing a policy needs write on the whole bucket; reading it, list', async () => {
    const g = await scopedGateway();
    const res = await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: policy(denyPut({})) }), { accessKeyId: READ_ONLY.accessKeyId, secret: READ_ONLY.secret });
    expect(res.status).toBe(403);
    expect(await send(g, new GetBucketPolicyCommand({ Bucket: BUCKET })).then((r) => r.status)).toBe(404);
    expect((await send(g, new GetBucketPolicyCommand({ Bucket: BUCKET }), { accessKeyId: READ_ONLY.accessKeyId, secret: READ_ONLY.secret })).status).toBe(404);
    expect((await send(g, new DeleteBucketPolicyCommand({ Bucket: BUCKET }), { accessKeyId: READ_ONLY.accessKeyId, secret: READ_ONLY.secret })).status).toBe(403);
  });
});

describe('the gate enforces an explicit Deny', () => {
  it('Null on s3:x-amz-server-side-encryption: a PUT without the header is refused and stores nothing; with AES256 it is stored', async () => {
    const g = await scopedGateway();
    await putPolicy(g, policy(denyPut({ Null: { 's3:x-amz-server-side-encryption': 'true' } })));
    const refused = await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'plain', Body: 'data' }));
    expect(refused.status).toBe(403);
    expect(codeOf(await refused.text())).toBe('AccessDenied');
    expect(await exists(g, 'plain')).toBe(false);
    const ok = await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'sealed', Body: 'data', ServerSideEncryption: 'AES256' }));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-amz-server-side-encryption')).toBe('AES256');
  });

  it('StringNotEquals on the SSE-C algorithm: a PUT naming another algorithm is refused before its SSE headers are judged', async () => {
    const g = await scopedGateway();
    await putPolicy(g, policy(denyPut({ StringNotEquals: { 's3:x-amz-server-side-encryption-customer-algorithm': 'AES256' } })));
    const wire = await sdk(new PutObjectCommand({ Bucket: BUCKET, Key: 'k', Body: 'data' }), {});
    wire.headers.push(['x-amz-server-side-encryption-customer-algorithm', 'AES192']);
    const res = await g.send(toRequest(wire)!);
    expect(res.status).toBe(403);
    expect(codeOf(await res.text())).toBe('AccessDenied');
  });

  it('a Deny of s3:GetObject under a prefix refuses reads there only; DeleteObjects entries one by one', async () => {
    const g = await scopedGateway();
    await putPolicy(g, policy(
      { Effect: 'Deny', Principal: '*', Action: ['s3:GetObject', 's3:DeleteObject'], Resource: `arn:aws:s3:::${BUCKET}/dir/*` },
    ));
    expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'dir/obj.txt' }))).status).toBe(403);
    expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(200);
    const res = await send(g, new DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: [{ Key: 'dir/obj.txt' }, { Key: 'obj' }] } }));
    const text = await res.text();
    expect(text).toMatch(/<Error><Key>dir\/obj.txt<\/Key><Code>AccessDenied<\/Code>/);
    expect(text).toMatch(/<Deleted><Key>obj<\/Key><\/Deleted>/);
    expect(await exists(g, 'dir/obj.txt')).toBe(true);
    expect(await exists(g, 'obj')).toBe(false);
  });

  it('s3:prefix on ListBucket; the copy source against its own bucket policy', async () => {
    const g = await scopedGateway();
    await putPolicy(g, policy(
      { Effect: 'Deny', Principal: '*', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${BUCKET}`, Condition: { StringNotLike: { 's3:prefix': 'dir/*' } } },
      { Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/obj` },
    ));
    expect((await send(g, new ListObjectsV2Command({ Bucket: BUCKET }))).status).toBe(403);
    expect((await send(g, new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'dir/' }))).status).toBe(200);
    const copy = await send(g, new CopyObjectCommand({ Bucket: BUCKET, Key: 'copied', CopySource: `${BUCKET}/obj` }));
    expect(copy.status).toBe(403);
    expect(await exists(g, 'copied')).toBe(false);
    expect((await send(g, new CopyObjectCommand({ Bucket: BUCKET, Key: 'copied', CopySource: `${BUCKET}/dir/obj.txt` }))).status).toBe(200);
  });

  it('s3:ExistingObjectTag and s3:RequestObjectTag', async () => {
    const g = await scopedGateway();
    expect((await send(g, new PutObjectTaggingCommand({ Bucket: BUCKET, Key: 'obj', Tagging: { TagSet: [{ Key: 'class', Value: 'secret' }] } }))).status).toBe(200);
    await putPolicy(g, policy(
      { Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/*`, Condition: { StringEquals: { 's3:ExistingObjectTag/class': 'secret' } } },
      denyPut({ StringEquals: { 's3:RequestObjectTag/class': 'secret' } }),
    ));
    expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(403);
    expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'dir/obj.txt' }))).status).toBe(200);
    expect((await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'new', Body: 'x', Tagging: 'class=secret' }))).status).toBe(403);
    expect((await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'new', Body: 'x', Tagging: 'class=open' }))).status).toBe(200);
  });

  it('a Deny of everything leaves the policy operations to whoever may manage them', async () => {
    const g = await scopedGateway();
    await putPolicy(g, policy({ Effect: 'Deny', Principal: '*', Action: 's3:*', Resource: [`arn:aws:s3:::${BUCKET}`, `arn:aws:s3:::${BUCKET}/*`] }));
    expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(403);
    expect((await send(g, new GetBucketPolicyCommand({ Bucket: BUCKET }))).status).toBe(200);
    expect((await send(g, new DeleteBucketPolicyCommand({ Bucket: BUCKET }))).status).toBe(204);
    expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(200);
  });

  it('a stored policy that no longer parses fails closed (500) and can still be deleted', async () => {
    const g = await scopedGateway();
    await g.store.putBucketPolicy(BUCKET, '{"Statement": "written by an older, laxer parser"}');
    const res = await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }));
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/no longer parses/);
    expect((await send(g, new DeleteBucketPolicyCommand({ Bucket: BUCKET }))).status).toBe(204);
    expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(200);
  });

  it('a Deny naming one access key refuses that key only', async () => {
    const g = await scopedGateway();
    await g.store.createBucket('fz-one', { region: 'us-east-1' });
    const text = JSON.stringify({ Statement: { Effect: 'Deny', Principal: { AWS: `arn:aws:iam::000000000000:user/${ONE_BUCKET.accessKeyId}` }, Action: 's3:PutObject', Resource: 'arn:aws:s3:::fz-one/*' } });
    expect((await send(g, new PutBucketPolicyCommand({ Bucket: 'fz-one', Policy: text }))).status).toBe(204);
    expect((await send(g, new PutObjectCommand({ Bucket: 'fz-one', Key: 'a', Body: 'x' }), { accessKeyId: ONE_BUCKET.accessKeyId, secret: ONE_BUCKET.secret })).status).toBe(403);
    expect((await send(g, new PutObjectCommand({ Bucket: 'fz-one', Key: 'a', Body: 'x' }))).status).toBe(200);
  });
});

describe('browser form uploads (PostObject)', () => {
  /** A SigV2 form of the test key, its fields before the file, as a browser posts it. */
  function form(fields: Record<string, string>): Request {
    const conditions = [{ bucket: BUCKET }, ...Object.entries(fields).map(([k, v]) => ({ [k]: v }))];
    const encoded = Buffer.from(JSON.stringify({ expiration: new Date(Date.now() + 3600_000).toISOString(), conditions })).toString('base64');
    const fd = new FormData();
    for (const [k, v] of Object.entries({ ...fields, AWSAccessKeyId: ACCESS_KEY, policy: encoded, signature: createHmac('sha1', SECRET).update(encoded).digest('base64') })) fd.append(k, v);
    fd.append('file', new Blob(['form data']), 'f.txt');
    return new Request(`http://${GATE_HOST}/${BUCKET}`, { method: 'POST', body: fd });
  }

  it('a Deny on s3:PutObject refuses the form as it refuses a PUT, its fields standing for the headers', async () => {
    const g = await scopedGateway();
    await putPolicy(g, policy(denyPut({ Null: { 's3:x-amz-server-side-encryption': 'true' } })));
    const refused = await g.send(form({ key: 'posted' }));
    expect(refused.status).toBe(403);
    expect(codeOf(await refused.text())).toBe('AccessDenied');
    expect(await exists(g, 'posted')).toBe(false);
    const ok = await g.send(form({ key: 'posted', 'x-amz-server-side-encryption': 'AES256' }));
    expect(ok.status).toBe(204);
    expect(await exists(g, 'posted')).toBe(true);
  });
});

describe('Allow never widens a scope', () => {
  it('an Allow of s3:* to everyone does not let a read-only key write', async () => {
    const g = await scopedGateway();
    await putPolicy(g, policy({ Effect: 'Allow', Principal: '*', Action: 's3:*', Resource: [`arn:aws:s3:::${BUCKET}`, `arn:aws:s3:::${BUCKET}/*`] }));
    expect((await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'w', Body: 'x' }), { accessKeyId: READ_ONLY.accessKeyId, secret: READ_ONLY.secret })).status).toBe(403);
    expect(await exists(g, 'w')).toBe(false);
    expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }), { accessKeyId: READ_ONLY.accessKeyId, secret: READ_ONLY.secret })).status).toBe(200);
  });
});
