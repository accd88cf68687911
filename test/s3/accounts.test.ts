/**
 * Accounts (issue 43, worker/model/account.ts) through the real front door in Node
 * (test/support/gate-app.ts: the real gate and scopes, EcStore over memory parts): a key of
 * another account than a bucket's reaches it only where the bucket's policy Allows its account
 * or key, besides its own scope; ListBuckets shows each account its own buckets; another
 * account's name is 409 BucketAlreadyExists; the policy operations stay the owner's (405);
 * RestrictPublicBuckets keeps a public policy from letting other accounts in; owners in listings
 * and ACLs are the bucket's account; a second isolate with an old view of a bucket name another
 * account took since refuses what the new owner did not allow.
 */
import { storeText } from '../support/memory-store.ts';
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteBucketPolicyCommand,
  DeleteObjectsCommand,
  GetBucketAclCommand,
  GetBucketLoggingCommand,
  GetBucketPolicyCommand,
  PutBucketLoggingCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutBucketPolicyCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  PutPublicAccessBlockCommand,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { sdk, type SignAs } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { gateApp } from '../support/gate-app.ts';
import { parseConfig, s3Settings } from '../../worker/config/config.ts';
import type { AuthResult } from '../../worker/s3/context.ts';

const MAIN_BUCKET = 'main-bucket';
const ALT = { accessKeyId: 'AKIDALTACCOUNT', secret: 'alt account secret' };
const ALT_READ_ONLY = { accessKeyId: 'AKIDALTREADONLY', secret: 'alt read only secret' };
const AS_ALT: SignAs = { accessKeyId: ALT.accessKeyId, secret: ALT.secret };
const AS_ALT_READ_ONLY: SignAs = { accessKeyId: ALT_READ_ONLY.accessKeyId, secret: ALT_READ_ONLY.secret };

const CREDENTIALS = [
  { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET }, // the default account, every action
  { accessKeyId: ALT.accessKeyId, secretAccessKey: ALT.secret, account: 'alt' },
  {
    accessKeyId: ALT_READ_ONLY.accessKeyId,
    secretAccessKey: ALT_READ_ONLY.secret,
    account: 'alt',
    scope: { buckets: ['*'], actions: ['read' as const, 'list' as const] },
  },
];

type Gateway = ReturnType<typeof gateApp>;

async function gateway(isolateOf?: Parameters<typeof gateApp>[2]): Promise<Gateway> {
  const g = gateApp(undefined, CREDENTIALS, isolateOf);
  if (isolateOf) return g;
  await g.store.createBucket(MAIN_BUCKET, { region: 'us-east-1' });
  for (const key of ['public/a', 'private/b']) {
    await storeText(g.store, MAIN_BUCKET, key, `body of ${key}`);
  }
  return g;
}

async function send(g: Gateway, command: unknown, as: SignAs = {}): Promise<Response> {
  return g.send(toRequest(await sdk(command, as))!);
}

async function answer(g: Gateway, command: unknown, as: SignAs = {}): Promise<[number, string | undefined]> {
  const res = await send(g, command, as);
  return [res.status, /<Code>([^<]+)<\/Code>/.exec(await res.text())?.[1]];
}

const policy = (...statements: Record<string, unknown>[]) => JSON.stringify({ Version: '2012-10-17', Statement: statements });

async function putPolicy(g: Gateway, text: string, bucket = MAIN_BUCKET): Promise<void> {
  const res = await send(g, new PutBucketPolicyCommand({ Bucket: bucket, Policy: text }));
  expect(res.status, await res.clone().text()).toBe(204);
}

const exists = (g: Gateway, bucket: string, key: string) =>
  g.store.headObject(bucket, key, { conditions: {} }).then(
    () => true,
    () => false,
  );

const names = async (g: Gateway, as: SignAs) =>
  [...(await (await send(g, new ListBucketsCommand({}), as)).text()).matchAll(/<Name>([^<]+)<\/Name>/g)].map((m) => m[1]);

describe('buckets belong to the account that created them', () => {
  it("ListBuckets shows each account its own; re-creating another account's is 409 BucketAlreadyExists, one's own 200", async () => {
    const g = await gateway();
    expect((await send(g, new CreateBucketCommand({ Bucket: 'alt-bucket' }), AS_ALT)).status).toBe(200);
    expect(await names(g, {})).toEqual([MAIN_BUCKET]);
    expect(await names(g, AS_ALT)).toEqual(['alt-bucket']);
    expect(await names(g, AS_ALT_READ_ONLY)).toEqual(['alt-bucket']);
    const listing = await (await send(g, new ListBucketsCommand({}), AS_ALT)).text();
    expect(listing).toContain('<Owner><ID>alt</ID><DisplayName>alt</DisplayName></Owner>');

    expect(await answer(g, new CreateBucketCommand({ Bucket: MAIN_BUCKET }), AS_ALT)).toEqual([409, 'BucketAlreadyExists']);
    expect(await answer(g, new CreateBucketCommand({ Bucket: 'alt-bucket' }))).toEqual([409, 'BucketAlreadyExists']);
    expect((await send(g, new CreateBucketCommand({ Bucket: MAIN_BUCKET }))).status).toBe(200); // us-east-1's legacy answer to the owner
    expect((await send(g, new CreateBucketCommand({ Bucket: 'alt-bucket' }), AS_ALT)).status).toBe(200);
  });

  it("without a policy another account's key is refused everything on the bucket, whatever its scope", async () => {
    const g = await gateway();
    for (const command of [
      new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }),
      new PutObjectCommand({ Bucket: MAIN_BUCKET, Key: 'planted', Body: 'x' }),
      new ListObjectsV2Command({ Bucket: MAIN_BUCKET }),
      new HeadBucketCommand({ Bucket: MAIN_BUCKET }),
      new GetBucketLoggingCommand({ Bucket: MAIN_BUCKET }),
      new GetBucketAclCommand({ Bucket: MAIN_BUCKET }),
      new DeleteObjectsCommand({ Bucket: MAIN_BUCKET, Delete: { Objects: [{ Key: 'public/a' }] } }),
      new DeleteBucketCommand({ Bucket: MAIN_BUCKET }),
    ]) {
      expect((await send(g, command, AS_ALT)).status, command.constructor.name).toBe(403);
    }
    expect(await exists(g, MAIN_BUCKET, 'planted')).toBe(false);
    expect(await exists(g, MAIN_BUCKET, 'public/a')).toBe(true);
  });

  it("owners in listings and ACLs are the bucket's account", async () => {
    const g = await gateway();
    await send(g, new CreateBucketCommand({ Bucket: 'alt-bucket' }), AS_ALT);
    await send(g, new PutObjectCommand({ Bucket: 'alt-bucket', Key: 'k', Body: 'x' }), AS_ALT);
    const list = await (await send(g, new ListObjectsV2Command({ Bucket: 'alt-bucket', FetchOwner: true }), AS_ALT)).text();
    expect(list).toContain('<Owner><ID>alt</ID>');
    const acl = await (await send(g, new GetBucketAclCommand({ Bucket: 'alt-bucket' }), AS_ALT)).text();
    expect(acl).toContain('<Owner><ID>alt</ID>');
    expect(acl).not.toContain('shardgate');
    const mainAcl = await (await send(g, new GetBucketAclCommand({ Bucket: MAIN_BUCKET }))).text();
    expect(mainAcl).toContain('<Owner><ID>shardgate</ID>');
  });
});

describe("another account's key through the bucket's policy", () => {
  it('an Allow naming the account (its root ARN) lets it read under a prefix only, never beyond its own scope', async () => {
    const g = await gateway();
    await putPolicy(
      g,
      policy(
        { Effect: 'Allow', Principal: { AWS: 'arn:aws:iam::alt:root' }, Action: 's3:GetObject', Resource: `arn:aws:s3:::${MAIN_BUCKET}/public/*` },
        { Effect: 'Allow', Principal: { AWS: 'alt' }, Action: 's3:PutObject', Resource: `arn:aws:s3:::${MAIN_BUCKET}/drop/*` },
      ),
    );
    const read = await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }), AS_ALT);
    expect([read.status, await read.text()]).toEqual([200, 'body of public/a']);
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'private/b' }), AS_ALT)).status).toBe(403);
    expect((await send(g, new ListObjectsV2Command({ Bucket: MAIN_BUCKET }), AS_ALT)).status).toBe(403);
    expect((await send(g, new PutObjectCommand({ Bucket: MAIN_BUCKET, Key: 'drop/x', Body: 'y' }), AS_ALT)).status).toBe(200);
    expect(await exists(g, MAIN_BUCKET, 'drop/x')).toBe(true);
    // The read-only key of the same account: the policy allows the PUT, its scope does not.
    expect((await send(g, new PutObjectCommand({ Bucket: MAIN_BUCKET, Key: 'drop/y', Body: 'y' }), AS_ALT_READ_ONLY)).status).toBe(403);
    expect(await exists(g, MAIN_BUCKET, 'drop/y')).toBe(false);
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }), AS_ALT_READ_ONLY)).status).toBe(200);
  });

  it('an Allow naming one key of the account lets that key only; a Deny wins over an Allow', async () => {
    const g = await gateway();
    await putPolicy(
      g,
      policy(
        {
          Effect: 'Allow',
          Principal: { AWS: `arn:aws:iam::alt:user/${ALT_READ_ONLY.accessKeyId}` },
          Action: 's3:GetObject',
          Resource: `arn:aws:s3:::${MAIN_BUCKET}/*`,
        },
        { Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${MAIN_BUCKET}/private/*` },
      ),
    );
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }), AS_ALT_READ_ONLY)).status).toBe(200);
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }), AS_ALT)).status).toBe(403);
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'private/b' }), AS_ALT_READ_ONLY)).status).toBe(403);
  });

  it("an Allow's conditions hold for another account: s3:ExistingObjectTag reads the object's tags", async () => {
    const g = await gateway();
    const tag = (key: string, value: string) =>
      send(g, new PutObjectTaggingCommand({ Bucket: MAIN_BUCKET, Key: key, Tagging: { TagSet: [{ Key: 'security', Value: value }] } }));
    expect((await tag('public/a', 'public')).status).toBe(200);
    expect((await tag('private/b', 'private')).status).toBe(200);
    await putPolicy(
      g,
      policy({
        Effect: 'Allow',
        Principal: { AWS: '*' },
        Action: 's3:GetObject',
        Resource: `arn:aws:s3:::${MAIN_BUCKET}/*`,
        Condition: { StringEquals: { 's3:ExistingObjectTag/security': 'public' } },
      }),
    );
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }), AS_ALT)).status).toBe(200);
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'private/b' }), AS_ALT)).status).toBe(403);
  });

  it('DeleteObjects: entries the Allow does not cover are AccessDenied in the result, the others deleted', async () => {
    const g = await gateway();
    await putPolicy(g, policy({ Effect: 'Allow', Principal: { AWS: 'alt' }, Action: 's3:DeleteObject', Resource: `arn:aws:s3:::${MAIN_BUCKET}/public/*` }));
    const res = await send(g, new DeleteObjectsCommand({ Bucket: MAIN_BUCKET, Delete: { Objects: [{ Key: 'public/a' }, { Key: 'private/b' }] } }), AS_ALT);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).toContain('<Deleted><Key>public/a</Key>');
    expect(text).toMatch(/<Error><Key>private\/b<\/Key><Code>AccessDenied<\/Code>/);
    expect(await exists(g, MAIN_BUCKET, 'public/a')).toBe(false);
    expect(await exists(g, MAIN_BUCKET, 'private/b')).toBe(true);
  });

  it("copying out of another account's bucket needs the source's Allow of s3:GetObject", async () => {
    const g = await gateway();
    await send(g, new CreateBucketCommand({ Bucket: 'alt-bucket' }), AS_ALT);
    const copy = (key: string) => new CopyObjectCommand({ Bucket: 'alt-bucket', Key: 'copy', CopySource: `${MAIN_BUCKET}/${key}` });
    expect((await send(g, copy('public/a'), AS_ALT)).status).toBe(403);
    await putPolicy(g, policy({ Effect: 'Allow', Principal: { AWS: 'alt' }, Action: 's3:GetObject', Resource: `arn:aws:s3:::${MAIN_BUCKET}/public/*` }));
    expect((await send(g, copy('private/b'), AS_ALT)).status).toBe(403);
    expect(await exists(g, 'alt-bucket', 'copy')).toBe(false);
    expect((await send(g, copy('public/a'), AS_ALT)).status).toBe(200);
    expect(await exists(g, 'alt-bucket', 'copy')).toBe(true);
  });

  it("the policy operations are the owner's alone: 405 to another account, whatever the policy allows", async () => {
    const g = await gateway();
    await putPolicy(g, policy({ Effect: 'Allow', Principal: '*', Action: 's3:*', Resource: [`arn:aws:s3:::${MAIN_BUCKET}`, `arn:aws:s3:::${MAIN_BUCKET}/*`] }));
    expect(await answer(g, new GetBucketPolicyCommand({ Bucket: MAIN_BUCKET }), AS_ALT)).toEqual([405, 'MethodNotAllowed']);
    expect(await answer(g, new PutBucketPolicyCommand({ Bucket: MAIN_BUCKET, Policy: policy() }), AS_ALT)).toEqual([405, 'MethodNotAllowed']);
    expect(await answer(g, new DeleteBucketPolicyCommand({ Bucket: MAIN_BUCKET }), AS_ALT)).toEqual([405, 'MethodNotAllowed']);
    expect((await send(g, new GetBucketPolicyCommand({ Bucket: MAIN_BUCKET }))).status).toBe(200);
    // The s3:* Allow does let it read.
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'private/b' }), AS_ALT)).status).toBe(200);
  });

  it('RestrictPublicBuckets: a public policy lets no other account in; one naming the account still does', async () => {
    const g = await gateway();
    const publicRead = { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${MAIN_BUCKET}/*` };
    await putPolicy(g, policy(publicRead));
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }), AS_ALT)).status).toBe(200);
    const block = new PutPublicAccessBlockCommand({ Bucket: MAIN_BUCKET, PublicAccessBlockConfiguration: { RestrictPublicBuckets: true } });
    expect((await send(g, block)).status).toBe(200);
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }), AS_ALT)).status).toBe(403);
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }))).status).toBe(200);
    await putPolicy(g, policy({ ...publicRead, Principal: { AWS: 'arn:aws:iam::alt:root' } }));
    expect((await send(g, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }), AS_ALT)).status).toBe(200);
  });
});

describe('a second isolate', () => {
  it("with an old view of a bucket whose name another account took since refuses the old owner's bucket-wide requests", async () => {
    const a = await gateway();
    const b = await gateway(a);
    // b sees main-bucket with a policy (a view of its settings, the default account's).
    await putPolicy(a, policy({ Effect: 'Deny', Principal: '*', Action: 's3:PutObject', Resource: `arn:aws:s3:::${MAIN_BUCKET}/nothing-here` }));
    expect((await send(b, new GetObjectCommand({ Bucket: MAIN_BUCKET, Key: 'public/a' }))).status).toBe(200);
    // In a, the default account empties and deletes it; alt takes the name and sets logging (a
    // bucket configuration no fenced call guards).
    for (const key of ['public/a', 'private/b']) await a.store.deleteObject(MAIN_BUCKET, key, {});
    expect((await send(a, new DeleteBucketCommand({ Bucket: MAIN_BUCKET }))).status).toBe(204);
    expect((await send(a, new CreateBucketCommand({ Bucket: MAIN_BUCKET }), AS_ALT)).status).toBe(200);
    expect((await send(b, new GetBucketLoggingCommand({ Bucket: MAIN_BUCKET }))).status).toBe(403);
    expect((await send(b, new ListObjectsV2Command({ Bucket: MAIN_BUCKET }))).status).toBe(403);
    expect((await send(b, new PutObjectCommand({ Bucket: MAIN_BUCKET, Key: 'planted', Body: 'x' }))).status).toBe(403);
    expect(await exists(a, MAIN_BUCKET, 'planted')).toBe(false);
    expect((await send(b, new GetBucketLoggingCommand({ Bucket: MAIN_BUCKET }), AS_ALT)).status).toBe(200);
  });
});

describe('allowAnonymous "policy": unsigned requests are strangers to every bucket', () => {
  async function publicGateway() {
    const g = gateApp(undefined, CREDENTIALS, undefined, 'policy');
    await g.store.createBucket(MAIN_BUCKET, { region: 'us-east-1' });
    await storeText(g.store, MAIN_BUCKET, 'public/a', 'public body');
    return g;
  }
  const unsigned = (g: Gateway, method: string, path: string, body?: string) =>
    g.send(new Request(`http://gw.test${path}`, { method, ...(body === undefined ? {} : { body }) }));

  it('reach only what a policy Allows everyone; never list or create buckets, nor read a policy', async () => {
    const g = await publicGateway();
    expect((await unsigned(g, 'GET', `/${MAIN_BUCKET}/public/a`)).status).toBe(403);
    expect((await unsigned(g, 'GET', '/')).status).toBe(403);
    expect((await unsigned(g, 'PUT', '/made-by-nobody')).status).toBe(403);
    expect((await g.store.listBuckets()).map((b) => b.name)).toEqual([MAIN_BUCKET]);
    // A policy naming an account does not name anonymous callers.
    await putPolicy(
      g,
      policy({ Effect: 'Allow', Principal: { AWS: 'arn:aws:iam::alt:root' }, Action: 's3:GetObject', Resource: `arn:aws:s3:::${MAIN_BUCKET}/*` }),
    );
    expect((await unsigned(g, 'GET', `/${MAIN_BUCKET}/public/a`)).status).toBe(403);
    await putPolicy(g, policy({ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${MAIN_BUCKET}/public/*` }));
    const read = await unsigned(g, 'GET', `/${MAIN_BUCKET}/public/a`);
    expect([read.status, await read.text()]).toEqual([200, 'public body']);
    expect((await unsigned(g, 'GET', `/${MAIN_BUCKET}/private/b`)).status).toBe(403);
    expect((await unsigned(g, 'PUT', `/${MAIN_BUCKET}/public/planted`, 'x')).status).toBe(403);
    expect(await exists(g, MAIN_BUCKET, 'public/planted')).toBe(false);
    expect((await unsigned(g, 'GET', `/${MAIN_BUCKET}?list-type=2`)).status).toBe(403);
    expect((await unsigned(g, 'GET', `/${MAIN_BUCKET}?policy`)).status).toBe(403);
    // RestrictPublicBuckets closes it again.
    expect(
      (await send(g, new PutPublicAccessBlockCommand({ Bucket: MAIN_BUCKET, PublicAccessBlockConfiguration: { RestrictPublicBuckets: true } }))).status,
    ).toBe(200);
    expect((await unsigned(g, 'GET', `/${MAIN_BUCKET}/public/a`)).status).toBe(403);
  });

  it('a gateway without it refuses unsigned requests whatever the policy', async () => {
    const g = gateApp(undefined, CREDENTIALS);
    await g.store.createBucket(MAIN_BUCKET, { region: 'us-east-1' });
    await putPolicy(g, policy({ Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${MAIN_BUCKET}/*` }));
    expect((await unsigned(g, 'GET', `/${MAIN_BUCKET}/anything`)).status).toBe(403);
  });
});

describe('server access logging', () => {
  it("logs go only into a bucket of the source's account", async () => {
    const g = await gateway();
    await send(g, new CreateBucketCommand({ Bucket: 'alt-logs' }), AS_ALT);
    await send(g, new CreateBucketCommand({ Bucket: 'main-logs' }));
    const logTo = (bucket: string, target: string) =>
      new PutBucketLoggingCommand({ Bucket: bucket, BucketLoggingStatus: { LoggingEnabled: { TargetBucket: target, TargetPrefix: 'log/' } } });
    // Even with the target's policy letting the source's account write there.
    const allowMain = policy({ Effect: 'Allow', Principal: { AWS: 'shardgate' }, Action: 's3:PutObject', Resource: 'arn:aws:s3:::alt-logs/*' });
    expect((await send(g, new PutBucketPolicyCommand({ Bucket: 'alt-logs', Policy: allowMain }), AS_ALT)).status).toBe(204);
    expect(await answer(g, logTo(MAIN_BUCKET, 'alt-logs'))).toEqual([400, 'InvalidTargetBucketForLogging']);
    expect((await send(g, logTo(MAIN_BUCKET, 'main-logs'))).status).toBe(200);
    await send(g, new CreateBucketCommand({ Bucket: 'alt-source' }), AS_ALT);
    expect(await answer(g, logTo('alt-source', 'main-logs'), AS_ALT)).toEqual([400, 'InvalidTargetBucketForLogging']);
    expect((await send(g, logTo('alt-source', 'alt-logs'), AS_ALT)).status).toBe(200);
    expect((await g.store.config.getBucketLogging('alt-source'))?.owner).toBe('alt');
  });

  it("records are refused by a target that no longer belongs to the source's account", async () => {
    const g = await gateway();
    await send(g, new CreateBucketCommand({ Bucket: 'alt-logs' }), AS_ALT);
    const group = { stem: 'log/', partitioned: null };
    const lines = [{ at: Date.now(), line: 'a record\n' }];
    await expect(g.catalog.appendAccessLog('alt-logs', group, lines, new Date(), 5000)).rejects.toMatchObject({ code: 'AccessDenied' });
    await expect(g.catalog.appendAccessLog(MAIN_BUCKET, group, lines, new Date(), 5000, 'alt')).rejects.toMatchObject({ code: 'AccessDenied' });
    expect((await g.catalog.appendAccessLog('alt-logs', group, lines, new Date(), 5000, 'alt')).dropped).toBe(0);
    expect((await g.catalog.appendAccessLog(MAIN_BUCKET, group, lines, new Date(), 5000)).dropped).toBe(0);
  });
});

describe('the config', () => {
  const base = { backends: [{ id: 'x', kind: 'memory', domain: 'x' }], policies: { p: { k: 1, m: 0 } }, defaultPolicy: 'p' };
  const withKeys = (...credentials: Record<string, unknown>[]) => parseConfig({ ...base, credentials });

  it('takes an account per key; a gateway has other accounts only when a key names one other than the default', () => {
    expect(s3Settings(withKeys({ accessKeyId: 'a', secretAccessKey: 's' })).otherAccounts).toBe(false);
    expect(s3Settings(withKeys({ accessKeyId: 'a', secretAccessKey: 's', account: 'shardgate' })).otherAccounts).toBe(false);
    const two = withKeys({ accessKeyId: 'a', secretAccessKey: 's' }, { accessKeyId: 'b', secretAccessKey: 's', account: 'team-b' });
    expect(two.credentials[1]!.account).toBe('team-b');
    expect(s3Settings(two).otherAccounts).toBe(true);
  });

  it("gives a key of another account without a scope every S3 action but none of the operator's, and refuses admin in its scope", async () => {
    const seen: AuthResult[] = [];
    const g = gateApp(
      (gate) => async (request, view, owner) => {
        const r = await gate(request, view, owner);
        seen.push(r);
        return r;
      },
      CREDENTIALS,
    );
    await send(g, new ListBucketsCommand({}), AS_ALT);
    await send(g, new ListBucketsCommand({}));
    expect(seen.map((r) => [r.access?.account, r.access?.admin, r.access?.allowsBucket('delete', 'any')])).toEqual([
      ['alt', false, true],
      ['shardgate', true, true],
    ]);
    expect(() => withKeys({ accessKeyId: 'a', secretAccessKey: 's', account: 'team-b', scope: { buckets: ['*'], actions: ['admin'] } })).toThrow(
      /a key of another account cannot have it/,
    );
    expect(() => withKeys({ accessKeyId: 'a', secretAccessKey: 's', scope: { buckets: ['*'], actions: ['admin'] } })).not.toThrow();
  });

  it('refuses an account id that could not be a principal or an owner id', () => {
    for (const account of ['', 'has space', 'a/b', '-leading', 'x'.repeat(65), 'arn:aws:iam::1:root']) {
      expect(() => withKeys({ accessKeyId: 'a', secretAccessKey: 's', account }), JSON.stringify(account)).toThrow(/credentials\.0\.account/);
    }
  });
});
