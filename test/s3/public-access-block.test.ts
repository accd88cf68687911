/**
 * The public access block through the real front door in Node (test/support/gate-app.ts):
 * Put/Get/Delete and their errors; BlockPublicAcls refusing public ACLs in headers and bodies with
 * 403 (nothing stored) where they are otherwise 400 AccessControlListNotSupported; BlockPublicPolicy
 * refusing a public policy (AWS's fixed-value reading) and only that; RestrictPublicBuckets
 * refusing anonymous requests, signed ones untouched; a change seen by a second isolate's gate on
 * its next request; a Deny of s3:GetBucketPublicAccessBlock applying to GetPublicAccessBlock.
 */
import {
  CreateMultipartUploadCommand,
  DeletePublicAccessBlockCommand,
  GetBucketPolicyStatusCommand,
  GetObjectCommand,
  GetPublicAccessBlockCommand,
  PutBucketAclCommand,
  PutBucketPolicyCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  PutPublicAccessBlockCommand,
  type PublicAccessBlockConfiguration,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { sdk } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { gateApp } from '../support/gate-app.ts';
import { ANONYMOUS_ACCESS } from '../../worker/model/access.ts';
import type { Authenticate } from '../../worker/s3/context.ts';

const BUCKET = 'fz';
const ANONYMOUS = 'x-test-anonymous';

/** Requests carrying ANONYMOUS are let through as anonymous ones (as allowAnonymous would). */
const withAnonymous = (gate: Authenticate): Authenticate => async (request, view, owner) =>
  request.headers.has(ANONYMOUS) ? { body: request.body, decodedContentLength: Number(request.headers.get('content-length') ?? 0) || null, access: ANONYMOUS_ACCESS } : gate(request, view, owner);

async function gateway(isolateOf?: Parameters<typeof gateApp>[2]) {
  const g = gateApp(withAnonymous, undefined, isolateOf);
  if (!isolateOf) {
    await g.store.createBucket(BUCKET, { region: 'us-east-1' });
    await g.store.putObject(BUCKET, 'obj', new Response('object body').body!, { contentLength: 11, contentMD5: null, metadata: { user: {} }, checksum: null, conditions: {} });
  }
  return g;
}
type Gateway = Awaited<ReturnType<typeof gateway>>;

async function send(g: Gateway, command: unknown, anonymous = false): Promise<Response> {
  const request = toRequest(await sdk(command, {}))!;
  if (!anonymous) return g.send(request);
  const headers = new Headers(request.headers);
  headers.set(ANONYMOUS, '1');
  return g.send(new Request(request, { headers }));
}

const codeOf = async (res: Response) => /<Code>([^<]+)<\/Code>/.exec(await res.text())?.[1];
const block = (c: PublicAccessBlockConfiguration) => new PutPublicAccessBlockCommand({ Bucket: BUCKET, PublicAccessBlockConfiguration: c });
const exists = (g: Gateway, key: string) => g.store.headObject(BUCKET, key, { conditions: {} }).then(() => true, () => false);

function rawPut(g: Gateway, body: string): Promise<Response> {
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
    const g = await gateway();
    const get = () => send(g, new GetPublicAccessBlockCommand({ Bucket: BUCKET }));
    let res = await get();
    expect(res.status).toBe(404);
    expect(await codeOf(res)).toBe('NoSuchPublicAccessBlockConfiguration');
    expect((await send(g, block({ BlockPublicAcls: true, BlockPublicPolicy: true }))).status).toBe(200);
    res = await get();
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/<PublicAccessBlockConfiguration[^>]*><BlockPublicAcls>true<\/BlockPublicAcls><IgnorePublicAcls>false<\/IgnorePublicAcls><BlockPublicPolicy>true<\/BlockPublicPolicy><RestrictPublicBuckets>false<\/RestrictPublicBuckets><\/PublicAccessBlockConfiguration>/);
    for (let i = 0; i < 2; i++) expect((await send(g, new DeletePublicAccessBlockCommand({ Bucket: BUCKET }))).status).toBe(204);
    expect(await codeOf(await get())).toBe('NoSuchPublicAccessBlockConfiguration');
    expect(await codeOf(await send(g, new GetPublicAccessBlockCommand({ Bucket: 'missing' })))).toBe('NoSuchBucket');
    expect(await codeOf(await send(g, new PutPublicAccessBlockCommand({ Bucket: 'missing', PublicAccessBlockConfiguration: {} })))).toBe('NoSuchBucket');
  });

  it('a document that is not a PublicAccessBlockConfiguration of booleans is 400 MalformedXML, and nothing changes', async () => {
    const g = await gateway();
    for (const bad of [
      '<PublicAccessBlockConfiguration><BlockPublicAcls>yes</BlockPublicAcls></PublicAccessBlockConfiguration>',
      '<PublicAccessBlockConfiguration><BlockEverything>true</BlockEverything></PublicAccessBlockConfiguration>',
      '<OwnershipControls/>',
      '<PublicAccessBlockConfiguration><BlockPublicAcls>true',
    ]) {
      const res = await rawPut(g, bad);
      expect(res.status, bad).toBe(400);
      expect(await codeOf(res)).toBe('MalformedXML');
    }
    expect((await rawPut(g, '<PublicAccessBlockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><IgnorePublicAcls> TRUE </IgnorePublicAcls></PublicAccessBlockConfiguration>')).status).toBe(200);
    expect(await (await send(g, new GetPublicAccessBlockCommand({ Bucket: BUCKET }))).text()).toContain('<IgnorePublicAcls>true</IgnorePublicAcls><BlockPublicPolicy>false</BlockPublicPolicy>');
  });
});

describe('BlockPublicAcls', () => {
  it('public canned ACLs and grants are 403 AccessDenied (nothing stored) instead of 400; private ones pass', async () => {
    const g = await gateway();
    // Without a block: ACLs are disabled here, so a public one is AccessControlListNotSupported.
    let res = await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'a', Body: 'x', ACL: 'public-read' }));
    expect([res.status, await codeOf(res)]).toEqual([400, 'AccessControlListNotSupported']);
    await send(g, block({ BlockPublicAcls: true }));
    for (const command of [
      new PutObjectCommand({ Bucket: BUCKET, Key: 'a', Body: 'x', ACL: 'public-read' }),
      new PutObjectCommand({ Bucket: BUCKET, Key: 'a', Body: 'x', ACL: 'public-read-write' }),
      new PutObjectCommand({ Bucket: BUCKET, Key: 'a', Body: 'x', ACL: 'authenticated-read' }),
      new PutObjectCommand({ Bucket: BUCKET, Key: 'a', Body: 'x', GrantRead: 'uri="http://acs.amazonaws.com/groups/global/AllUsers"' }),
      new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'a', ACL: 'public-read' }),
      new PutBucketAclCommand({ Bucket: BUCKET, ACL: 'public-read' }),
      new PutObjectAclCommand({ Bucket: BUCKET, Key: 'obj', ACL: 'authenticated-read' }),
      new PutObjectAclCommand({
        Bucket: BUCKET, Key: 'obj',
        AccessControlPolicy: { Owner: { ID: 'shardgate' }, Grants: [{ Grantee: { Type: 'Group', URI: 'http://acs.amazonaws.com/groups/global/AllUsers' }, Permission: 'READ' }] },
      }),
    ]) {
      res = await send(g, command);
      expect([res.status, await codeOf(res)], command.constructor.name).toEqual([403, 'AccessDenied']);
    }
    expect(await exists(g, 'a')).toBe(false);
    // Not public: the usual answers.
    expect((await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'b', Body: 'x', ACL: 'private' }))).status).toBe(200);
    res = await send(g, new PutObjectCommand({ Bucket: BUCKET, Key: 'c', Body: 'x', GrantRead: 'id="someone-else"' }));
    expect([res.status, await codeOf(res)]).toEqual([400, 'AccessControlListNotSupported']);
  });
});

describe('BlockPublicPolicy and GetBucketPolicyStatus', () => {
  const statement = (extra: Record<string, unknown>) => JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/*`, ...extra }] });
  const isPublic = async (g: Gateway) => /<IsPublic>(\w+)<\/IsPublic>/.exec(await (await send(g, new GetBucketPolicyStatusCommand({ Bucket: BUCKET }))).text())?.[1];

  it('a public policy is 403 and not stored; a fixed principal or a pinning condition is not public and is stored', async () => {
    const g = await gateway();
    const publicPolicy = statement({});
    // Before the block: stored, and public; the block leaves it in place (as AWS: existing policies are untouched).
    expect((await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: publicPolicy }))).status).toBe(204);
    expect(await isPublic(g)).toBe('true');
    await send(g, block({ BlockPublicPolicy: true }));
    expect(await isPublic(g)).toBe('true');
    const fixed = statement({ Principal: { AWS: 'arn:aws:iam::s3tenant1:root' } });
    expect((await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: fixed }))).status).toBe(204);
    expect(await isPublic(g)).toBe('false');
    for (const policy of [publicPolicy, statement({ Principal: { AWS: '*' }, Condition: { StringLike: { 's3:prefix': 'a/' } } })]) {
      const res = await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: policy }));
      expect([res.status, await codeOf(res)]).toEqual([403, 'AccessDenied']);
    }
    expect(await isPublic(g)).toBe('false'); // the fixed one is still the stored one
    expect((await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: statement({ Condition: { IpAddress: { 'aws:SourceIp': '192.0.2.0/24' } } }) }))).status).toBe(204);
  });

  it("a Deny of s3:GetBucketPublicAccessBlock refuses GetPublicAccessBlock (s3-tests' test_get_public_block_deny_bucket_policy)", async () => {
    const g = await gateway();
    await send(g, block({ BlockPublicAcls: true, IgnorePublicAcls: true, BlockPublicPolicy: true }));
    const deny = JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Deny', Principal: '*', Action: 's3:GetBucketPublicAccessBlock', Resource: `arn:aws:s3:::${BUCKET}` }] });
    expect((await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: deny }))).status).toBe(204);
    expect((await send(g, new GetPublicAccessBlockCommand({ Bucket: BUCKET }))).status).toBe(403);
  });
});

describe('RestrictPublicBuckets', () => {
  it('refuses anonymous requests to the bucket (the policy operations too); signed ones pass; another isolate sees it at once', async () => {
    const a = await gateway();
    const b = await gateway(a);
    expect((await send(b, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }), true)).status).toBe(200); // b has seen the bucket without a block
    expect((await send(a, block({ RestrictPublicBuckets: true }))).status).toBe(200);
    for (const g of [a, b]) {
      const res = await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }), true);
      expect([res.status, await codeOf(res)]).toEqual([403, 'AccessDenied']);
      expect((await send(g, new PutBucketPolicyCommand({ Bucket: BUCKET, Policy: '{}' }), true)).status).toBe(403);
      expect((await send(g, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }))).status).toBe(200);
    }
    // BlockPublicAcls alone does not restrict anyone.
    await send(a, block({ BlockPublicAcls: true }));
    expect((await send(b, new GetObjectCommand({ Bucket: BUCKET, Key: 'obj' }), true)).status).toBe(200);
  });
});
