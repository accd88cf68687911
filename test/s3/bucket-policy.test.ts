/**
 * Bucket policies through the real front door in Node (test/support/gate-app.ts: the real gate and
 * scopes, EcStore over memory parts): Put/Get/Delete/GetBucketPolicyStatus and their errors; the
 * gate refusing what an explicit Deny matches before the handler runs (nothing stored, nothing
 * deleted), for object writes with SSE conditions, reads by prefix, listings by s3:prefix,
 * existing and requested object tags, copy sources and each entry of DeleteObjects; the policy
 * operations never locked out; an Allow never widening a key's scope; who may manage a policy.
 * Then the public access block (the second half of the file).
 */
import { storeText } from '../support/memory-store.ts';
import {
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteBucketPolicyCommand,
  DeleteObjectsCommand,
  DeletePublicAccessBlockCommand,
  GetBucketPolicyCommand,
  GetBucketPolicyStatusCommand,
  GetObjectCommand,
  GetPublicAccessBlockCommand,
  ListObjectsV2Command,
  PutBucketAclCommand,
  PutBucketPolicyCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  PutPublicAccessBlockCommand,
  type PublicAccessBlockConfiguration,
} from '@aws-sdk/client-s3';
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { sdk, type SignAs } from '../auth/mutation/bases.ts';
import { SCOPES } from '../auth/mutation/scoped-gateway.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { gateApp, GATE_HOST } from '../support/gate-app.ts';
import { ANONYMOUS_ACCESS } from '../../worker/model/access.ts';
import type { Authenticate } from '../../worker/s3/context.ts';

const BUCKET = 'fz';
const READ_ONLY = SCOPES[0]!;
const ONE_BUCKET = SCOPES[1]!;

/** The all-powerful test key and two scoped ones; bucket fz with objects obj and dir/obj.txt. */
async function scopedGateway() {
  const g = gateApp(undefined, [
    { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET },
    ...[READ_ONLY, ONE_BUCKET].map((s) => ({ accessKeyId: s.accessKeyId, secretAccessKey: s.secret, scope: s.grant })),
  ]);
  await g.store.createBucket(BUCKET, { region: 'us-east-1' });
  for (const [key, text] of [
    ['obj', 'object body'],
    ['dir/obj.txt', 'nested object'],
  ] as const) {
    await storeText(g.store, BUCKET, key, text);
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

const denyPut = (condition: Record<string, unknown>) => ({
  Effect: 'Deny',
  Principal: { AWS: '*' },
  Action: 's3:PutObject',
  Resource: `arn:aws:s3:::${BUCKET}/*`,
  Condition: condition,
});

async function putPolicy(g: Gateway, text: string): Promise<void> {
  const res = await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: text }));
  expect(res.status, await res.clone().text()).toBe(204);
}

async function exists(g: Gateway, key: string): Promise<boolean> {
  return g.store.headObject(BUCKET, key, { conditions: {} }).then(
    () => true,
    () => false,
  );
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
    const res = await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: policy(denyPut({})) }), {
      accessKeyId: READ_ONLY.accessKeyId,
      secret: READ_ONLY.secret,
    });
    expect(res.status).toBe(403);
    expect(await send(g, new GetBucketPolicyCommand({ Bucket: BUCKET })).then((r) => r.status)).toBe(404);
    expect((await send(g, new GetBucketPolicyCommand({ Bucket: BUCKET }), { accessKeyId: READ_ONLY.accessKeyId, secret: READ_ONLY.secret })).status).toBe(404);
    expect((await send(g, new DeleteBucketPolicyCommand({ Bucket: BUCKET }), { accessKeyId: READ_ONLY.accessKeyId, secret: READ_ONLY.secret })).status).toBe(
      403,
    );
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
    await putPolicy(g, policy({ Effect: 'Deny', Principal: '*', Action: ['s3:GetObject', 's3:DeleteObject'], Resource: `arn:aws:s3:::${BUCKET}/dir/*` }));
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
    await putPolicy(
      g,
      policy(
        { Effect: 'Deny', Principal: '*', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${BUCKET}`, Condition: { StringNotLike: { 's3:prefix': 'dir/*' } } },
        { Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/obj` },
      ),
    );
    expect((await send(g, new ListObjectsV2Command({ Bucket: BUCKET }))).status).toBe(403);
    expect((await send(g, new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'dir/' }))).status).toBe(200);
    const copy = await send(g, new CopyObjectCommand({ Bucket: BUCKET, Key: 'copied', CopySource: `${BUCKET}/obj` }));
    expect(copy.status).toBe(403);
    expect(await exists(g, 'copied')).toBe(false);
    expect((await send(g, new CopyObjectCommand({ Bucket: BUCKET, Key: 'copied', CopySource: `${BUCKET}/dir/obj.txt` }))).status).toBe(200);
  });

  it('s3:ExistingObjectTag and s3:RequestObjectTag', async () => {
    const g = await scopedGateway();
    expect((await send(g, new PutObjectTaggingCommand({ Bucket: BUCKET, Key: 'obj', Tagging: { TagSet: [{ Key: 'class', Value: 'secret' }] } }))).status).toBe(
      200,
    );
    await putPolicy(
      g,
      policy(
        {
          Effect: 'Deny',
          Principal: '*',
          Action: 's3:GetObject',
          Resource: `arn:aws:s3:::${BUCKET}/*`,
          Condition: { StringEquals: { 's3:ExistingObjectTag/class': 'secret' } },
        },
        denyPut({ StringEquals: { 's3:RequestObjectTag/class': 'secret' } }),
      ),
    );
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
    await g.store.config.putBucketPolicy(BUCKET, '{"Statement": "written by an older, laxer parser"}');
    const res = await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }));
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/no longer parses/);
    expect((await send(g, new DeleteBucketPolicyCommand({ Bucket: BUCKET }))).status).toBe(204);
    expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(200);
  });

  it("s3:if-none-match (AWS's enforcement of conditional writes): a PUT or completion without the header is refused", async () => {
    const g = await scopedGateway();
    await putPolicy(g, policy(denyPut({ Null: { 's3:if-none-match': 'true' } })));
    expect((await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'plain', Body: 'x' }))).status).toBe(403);
    expect(await exists(g, 'plain')).toBe(false);
    expect((await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'guarded', Body: 'x', IfNoneMatch: '*' }))).status).toBe(200);
    expect((await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'guarded', Body: 'y', IfNoneMatch: '*' }))).status).toBe(412);
  });

  it('a Deny naming one access key refuses that key only', async () => {
    const g = await scopedGateway();
    await g.store.createBucket('fz-one', { region: 'us-east-1' });
    const text = JSON.stringify({
      Statement: {
        Effect: 'Deny',
        Principal: { AWS: `arn:aws:iam::000000000000:user/${ONE_BUCKET.accessKeyId}` },
        Action: 's3:PutObject',
        Resource: 'arn:aws:s3:::fz-one/*',
      },
    });
    expect((await send(g, new PutBucketPolicyCommand({ Bucket: 'fz-one', Policy: text }))).status).toBe(204);
    expect(
      (await send(g, new PutObjectCommand({ Bucket: 'fz-one', Key: 'a', Body: 'x' }), { accessKeyId: ONE_BUCKET.accessKeyId, secret: ONE_BUCKET.secret }))
        .status,
    ).toBe(403);
    expect((await send(g, new PutObjectCommand({ Bucket: 'fz-one', Key: 'a', Body: 'x' }))).status).toBe(200);
  });
});

describe('browser form uploads (PostObject)', () => {
  /** A SigV2 form of the test key, its fields before the file, as a browser posts it. */
  function form(fields: Record<string, string>): Request {
    const conditions = [{ bucket: BUCKET }, ...Object.entries(fields).map(([k, v]) => ({ [k]: v }))];
    const encoded = Buffer.from(JSON.stringify({ expiration: new Date(Date.now() + 3600_000).toISOString(), conditions })).toString('base64');
    const fd = new FormData();
    for (const [k, v] of Object.entries({
      ...fields,
      AWSAccessKeyId: ACCESS_KEY,
      policy: encoded,
      signature: createHmac('sha1', SECRET).update(encoded).digest('base64'),
    }))
      fd.append(k, v);
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
    expect(
      (await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'w', Body: 'x' }), { accessKeyId: READ_ONLY.accessKeyId, secret: READ_ONLY.secret })).status,
    ).toBe(403);
    expect(await exists(g, 'w')).toBe(false);
    expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }), { accessKeyId: READ_ONLY.accessKeyId, secret: READ_ONLY.secret })).status).toBe(
      200,
    );
  });
});

// The public access block (PutPublicAccessBlock and what its four flags do here:
// model/public-access-block.ts): Put/Get/Delete and their errors; BlockPublicAcls refusing public
// ACLs in headers and bodies with 403 (nothing stored) where they are otherwise 400
// AccessControlListNotSupported; BlockPublicPolicy refusing a public policy (AWS's fixed-value
// reading) and only that; RestrictPublicBuckets refusing anonymous requests, signed ones untouched,
// a change seen by a second isolate's gate on its next request; a Deny of
// s3:GetBucketPublicAccessBlock applying to GetPublicAccessBlock.

const ANONYMOUS = 'x-test-anonymous';

/** Requests carrying ANONYMOUS are let through as anonymous ones (as allowAnonymous would). */
const withAnonymous =
  (gate: Authenticate): Authenticate =>
  async (request, view, owner) =>
    request.headers.has(ANONYMOUS)
      ? { body: request.body, decodedContentLength: Number(request.headers.get('content-length') ?? 0) || null, access: ANONYMOUS_ACCESS }
      : gate(request, view, owner);

async function pabGateway(isolateOf?: Parameters<typeof gateApp>[2]) {
  const g = gateApp(withAnonymous, undefined, isolateOf);
  if (!isolateOf) {
    await g.store.createBucket(BUCKET, { region: 'us-east-1' });
    await storeText(g.store, BUCKET, 'obj', 'object body');
  }
  return g;
}
type PabGateway = Awaited<ReturnType<typeof pabGateway>>;

async function pabSend(g: PabGateway, command: unknown, anonymous = false): Promise<Response> {
  const request = toRequest(await sdk(command, {}))!;
  if (!anonymous) return g.send(request);
  const headers = new Headers(request.headers);
  headers.set(ANONYMOUS, '1');
  return g.send(new Request(request, { headers }));
}

const errorCode = async (res: Response) => /<Code>([^<]+)<\/Code>/.exec(await res.text())?.[1];
const block = (c: PublicAccessBlockConfiguration) => new PutPublicAccessBlockCommand({ Bucket: BUCKET, PublicAccessBlockConfiguration: c });
const stored = (g: PabGateway, key: string) =>
  g.store.headObject(BUCKET, key, { conditions: {} }).then(
    () => true,
    () => false,
  );

function rawPut(g: PabGateway, body: string): Promise<Response> {
  // The SDK only writes well-formed documents: a bad one is sent through the same signer by hand.
  return sdk(new PutPublicAccessBlockCommand({ Bucket: BUCKET, PublicAccessBlockConfiguration: {} }), {}).then((wire) => {
    const request = toRequest(wire)!;
    const headers = new Headers(request.headers);
    headers.set(ANONYMOUS, '1'); // unsigned: the body differs from the signed one
    headers.delete('content-md5');
    for (const name of [...headers.keys()]) if (name.startsWith('x-amz-checksum-') || name === 'x-amz-sdk-checksum-algorithm') headers.delete(name);
    headers.set('content-length', String(new TextEncoder().encode(body).length));
    return g.send(new Request(request.url, { method: 'PUT', headers, body }));
  });
}

describe('PutPublicAccessBlock, GetPublicAccessBlock, DeletePublicAccessBlock', () => {
  it('absent: 404 NoSuchPublicAccessBlockConfiguration; put, get (all four flags), delete (204, twice), absent again', async () => {
    const g = await pabGateway();
    const get = () => pabSend(g, new GetPublicAccessBlockCommand({ Bucket: BUCKET }));
    let res = await get();
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('NoSuchPublicAccessBlockConfiguration');
    expect((await pabSend(g, block({ BlockPublicAcls: true, BlockPublicPolicy: true }))).status).toBe(200);
    res = await get();
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(
      /<PublicAccessBlockConfiguration[^>]*><BlockPublicAcls>true<\/BlockPublicAcls><IgnorePublicAcls>false<\/IgnorePublicAcls><BlockPublicPolicy>true<\/BlockPublicPolicy><RestrictPublicBuckets>false<\/RestrictPublicBuckets><\/PublicAccessBlockConfiguration>/,
    );
    for (let i = 0; i < 2; i++) expect((await pabSend(g, new DeletePublicAccessBlockCommand({ Bucket: BUCKET }))).status).toBe(204);
    expect(await errorCode(await get())).toBe('NoSuchPublicAccessBlockConfiguration');
    expect(await errorCode(await pabSend(g, new GetPublicAccessBlockCommand({ Bucket: 'missing' })))).toBe('NoSuchBucket');
    expect(await errorCode(await pabSend(g, new PutPublicAccessBlockCommand({ Bucket: 'missing', PublicAccessBlockConfiguration: {} })))).toBe('NoSuchBucket');
  });

  it('a document that is not a PublicAccessBlockConfiguration of booleans is 400 MalformedXML, and nothing changes', async () => {
    const g = await pabGateway();
    for (const bad of [
      '<PublicAccessBlockConfiguration><BlockPublicAcls>yes</BlockPublicAcls></PublicAccessBlockConfiguration>',
      '<PublicAccessBlockConfiguration><BlockEverything>true</BlockEverything></PublicAccessBlockConfiguration>',
      '<OwnershipControls/>',
      '<PublicAccessBlockConfiguration><BlockPublicAcls>true',
    ]) {
      const res = await rawPut(g, bad);
      expect(res.status, bad).toBe(400);
      expect(await errorCode(res)).toBe('MalformedXML');
    }
    expect(
      (
        await rawPut(
          g,
          '<PublicAccessBlockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><IgnorePublicAcls> TRUE </IgnorePublicAcls></PublicAccessBlockConfiguration>',
        )
      ).status,
    ).toBe(200);
    expect(await (await pabSend(g, new GetPublicAccessBlockCommand({ Bucket: BUCKET }))).text()).toContain(
      '<IgnorePublicAcls>true</IgnorePublicAcls><BlockPublicPolicy>false</BlockPublicPolicy>',
    );
  });
});

describe("S3 Control's account-level public access block", () => {
  it('GET answers "not configured" (404 NoSuchPublicAccessBlockConfiguration); PUT is NotImplemented; without x-amz-account-id it is an object path', async () => {
    const g = await pabGateway();
    const at = (method: string, headers: Record<string, string>) =>
      g.send(new Request(`http://${GATE_HOST}/v20180820/configuration/publicAccessBlock`, { method, headers: { [ANONYMOUS]: '1', ...headers } }));
    let res = await at('GET', { 'x-amz-account-id': '123456789012' });
    expect([res.status, await errorCode(res)]).toEqual([404, 'NoSuchPublicAccessBlockConfiguration']);
    res = await at('PUT', { 'x-amz-account-id': '123456789012', 'content-length': '0' });
    expect([res.status, await errorCode(res)]).toEqual([501, 'NotImplemented']);
    expect(await errorCode(await at('GET', {}))).toBe('NoSuchBucket');
    // The address the SDKs build from an endpoint override: <account>.<endpoint host>.
    const hosted = await g.send(
      new Request('http://123456789012.s3.gw.test/v20180820/configuration/publicAccessBlock', {
        headers: { [ANONYMOUS]: '1', 'x-amz-account-id': '123456789012' },
      }),
    );
    expect([hosted.status, await errorCode(hosted)]).toEqual([404, 'NoSuchPublicAccessBlockConfiguration']);
  });
});

describe('BlockPublicAcls', () => {
  it('public canned ACLs and grants are 403 AccessDenied (nothing stored) instead of 400; private ones pass', async () => {
    const g = await pabGateway();
    // Without a block: ACLs are disabled here, so a public one is AccessControlListNotSupported.
    let res = await pabSend(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'a', Body: 'x', ACL: 'public-read' }));
    expect([res.status, await errorCode(res)]).toEqual([400, 'AccessControlListNotSupported']);
    await pabSend(g, block({ BlockPublicAcls: true }));
    for (const command of [
      new PutObjectCommand({ Bucket: BUCKET, Key: 'a', Body: 'x', ACL: 'public-read' }),
      new PutObjectCommand({ Bucket: BUCKET, Key: 'a', Body: 'x', ACL: 'public-read-write' }),
      new PutObjectCommand({ Bucket: BUCKET, Key: 'a', Body: 'x', ACL: 'authenticated-read' }),
      new PutObjectCommand({ Bucket: BUCKET, Key: 'a', Body: 'x', GrantRead: 'uri="http://acs.amazonaws.com/groups/global/AllUsers"' }),
      new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'a', ACL: 'public-read' }),
      new PutBucketAclCommand({ Bucket: BUCKET, ACL: 'public-read' }),
      new PutObjectAclCommand({ Bucket: BUCKET, Key: 'obj', ACL: 'authenticated-read' }),
      new PutObjectAclCommand({
        Bucket: BUCKET,
        Key: 'obj',
        AccessControlPolicy: {
          Owner: { ID: 'shardgate' },
          Grants: [{ Grantee: { Type: 'Group', URI: 'http://acs.amazonaws.com/groups/global/AllUsers' }, Permission: 'READ' }],
        },
      }),
    ]) {
      res = await pabSend(g, command);
      expect([res.status, await errorCode(res)], command.constructor.name).toEqual([403, 'AccessDenied']);
    }
    expect(await stored(g, 'a')).toBe(false);
    // Not public: the usual answers.
    expect((await pabSend(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'b', Body: 'x', ACL: 'private' }))).status).toBe(200);
    res = await pabSend(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'c', Body: 'x', GrantRead: 'id="someone-else"' }));
    expect([res.status, await errorCode(res)]).toEqual([400, 'AccessControlListNotSupported']);
  });
});

describe('BlockPublicPolicy and GetBucketPolicyStatus', () => {
  const statement = (extra: Record<string, unknown>) =>
    JSON.stringify({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/*`, ...extra }],
    });
  const isPublic = async (g: PabGateway) =>
    /<IsPublic>(\w+)<\/IsPublic>/.exec(await (await pabSend(g, new GetBucketPolicyStatusCommand({ Bucket: BUCKET }))).text())?.[1];

  it('a public policy is 403 and not stored; a fixed principal or a pinning condition is not public and is stored', async () => {
    const g = await pabGateway();
    const publicPolicy = statement({});
    // Before the block: stored, and public; the block leaves it in place (as AWS: existing policies are untouched).
    expect((await pabSend(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: publicPolicy }))).status).toBe(204);
    expect(await isPublic(g)).toBe('true');
    await pabSend(g, block({ BlockPublicPolicy: true }));
    expect(await isPublic(g)).toBe('true');
    const fixed = statement({ Principal: { AWS: 'arn:aws:iam::s3tenant1:root' } });
    expect((await pabSend(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: fixed }))).status).toBe(204);
    expect(await isPublic(g)).toBe('false');
    for (const policy of [publicPolicy, statement({ Principal: { AWS: '*' }, Condition: { StringLike: { 's3:prefix': 'a/' } } })]) {
      const res = await pabSend(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: policy }));
      expect([res.status, await errorCode(res)]).toEqual([403, 'AccessDenied']);
    }
    expect(await isPublic(g)).toBe('false'); // the fixed one is still the stored one
    expect(
      (await pabSend(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: statement({ Condition: { IpAddress: { 'aws:SourceIp': '192.0.2.0/24' } } }) })))
        .status,
    ).toBe(204);
  });

  it("a Deny of s3:GetBucketPublicAccessBlock refuses GetPublicAccessBlock (s3-tests' test_get_public_block_deny_bucket_policy)", async () => {
    const g = await pabGateway();
    await pabSend(g, block({ BlockPublicAcls: true, IgnorePublicAcls: true, BlockPublicPolicy: true }));
    const deny = JSON.stringify({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:GetBucketPublicAccessBlock', Resource: `arn:aws:s3:::${BUCKET}` }],
    });
    expect((await pabSend(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: deny }))).status).toBe(204);
    expect((await pabSend(g, new GetPublicAccessBlockCommand({ Bucket: BUCKET }))).status).toBe(403);
  });
});

describe('RestrictPublicBuckets', () => {
  it('refuses anonymous requests to the bucket (the policy operations too); signed ones pass; another isolate sees it at once', async () => {
    const a = await pabGateway();
    const b = await pabGateway(a);
    expect((await pabSend(b, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }), true)).status).toBe(200); // b has seen the bucket without a block
    expect((await pabSend(a, block({ RestrictPublicBuckets: true }))).status).toBe(200);
    for (const g of [a, b]) {
      const res = await pabSend(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }), true);
      expect([res.status, await errorCode(res)]).toEqual([403, 'AccessDenied']);
      expect((await pabSend(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: '{}' }), true)).status).toBe(403);
      expect((await pabSend(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(200);
    }
    // BlockPublicAcls alone does not restrict anyone.
    await pabSend(a, block({ BlockPublicAcls: true }));
    expect((await pabSend(b, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }), true)).status).toBe(200);
  });
});
