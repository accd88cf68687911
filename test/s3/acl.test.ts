/**
 * ACLs and Object Ownership (issue 43, worker/model/acl.ts) through the real front door in Node
 * (test/support/gate-app.ts: the real gate, scopes and accounts, EcStore over memory parts), with
 * the AWS SDK's own requests: a key of the default account (main), one of account "alt", and
 * unsigned requests judged as `allowAnonymous: "policy"` judges them. What each grant lets in,
 * what it never does (past a policy's Deny, past IgnorePublicAcls, on a BucketOwnerEnforced
 * bucket), who owns what a write makes, and the errors AWS answers.
 */
import {
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketOwnershipControlsCommand,
  DeleteObjectsCommand,
  GetBucketAclCommand,
  GetBucketOwnershipControlsCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutBucketAclCommand,
  PutBucketOwnershipControlsCommand,
  PutBucketPolicyCommand,
  PutBucketVersioningCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  PutPublicAccessBlockCommand,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { ACCESS_KEY, SECRET } from '../auth/helpers/signers.ts';
import { sdk, type SignAs } from '../auth/mutation/bases.ts';
import { toRequest } from '../auth/mutation/wire.ts';
import { gateApp, GATE_HOST } from '../support/gate-app.ts';

const ALT: SignAs = { accessKeyId: 'AKIDALTACCOUNT', secret: 'alt account secret' };
const CREDENTIALS = [
  { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET },
  { accessKeyId: ALT.accessKeyId!, secretAccessKey: ALT.secret!, account: 'alt' },
];
const MAIN = 'shardgate'; // the default account's id (model/account.ts)
const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';

type Gateway = ReturnType<typeof gateApp>;
const gateway = (): Gateway => gateApp(undefined, CREDENTIALS, undefined, 'policy');

async function send(g: Gateway, command: unknown, as: SignAs = {}): Promise<Response> {
  return g.send(toRequest(await sdk(command, as))!);
}

/** [status, error code] of a signed request; `as` null: sent unsigned. */
async function answer(g: Gateway, command: unknown, as: SignAs | null = {}): Promise<[number, string | undefined]> {
  let request = toRequest(await sdk(command, as ?? {}))!;
  if (as === null) {
    const headers = new Headers();
    for (const [name, value] of request.headers)
      if (!/^(authorization|x-amz-date|x-amz-security-token|x-amz-content-sha256)$/i.test(name)) headers.set(name, value);
    const url = new URL(request.url);
    for (const name of [...url.searchParams.keys()]) if (name.startsWith('X-Amz-')) url.searchParams.delete(name);
    const body = request.method === 'GET' || request.method === 'HEAD' ? null : await request.arrayBuffer();
    request = new Request(url, { method: request.method, headers, body });
  }
  const res = await g.send(request);
  return [res.status, /<Code>([^<]+)<\/Code>/.exec(await res.text())?.[1]];
}

const ok = async (g: Gateway, command: unknown, as: SignAs | null = {}) => expect(await answer(g, command, as)).toEqual([expect.any(Number), undefined]);
const status = async (g: Gateway, command: unknown, as: SignAs | null = {}) => (await answer(g, command, as))[0];

async function aclOf(g: Gateway, command: unknown, as: SignAs = {}) {
  const res = await send(g, command, as);
  const xml = await res.text();
  expect(res.status, xml).toBe(200);
  const owner = /<Owner><ID>([^<]*)<\/ID>/.exec(xml)?.[1];
  const grants = [...xml.matchAll(/<Grant>.*?(?:<ID>([^<]*)<\/ID>|<URI>([^<]*)<\/URI>).*?<Permission>([^<]*)<\/Permission><\/Grant>/g)].map(
    ([, id, uri, permission]) => `${id ?? uri} ${permission}`,
  );
  return { owner, grants };
}

const get = (Bucket: string, Key: string) => new GetObjectCommand({ Bucket, Key });
const put = (Bucket: string, Key: string, extra: Record<string, string> = {}) => new PutObjectCommand({ Bucket, Key, Body: `body of ${Key}`, ...extra });

describe('ACLs on a bucket whose Object Ownership enables them', () => {
  it('canned ACLs at creation and on objects: public-read lets anyone read and list, never write; private objects stay private', async () => {
    const g = gateway();
    await ok(g, new CreateBucketCommand({ Bucket: 'open', ObjectOwnership: 'ObjectWriter', ACL: 'public-read' }));
    expect((await aclOf(g, new GetBucketAclCommand({ Bucket: 'open' }))).grants).toEqual([`${ALL_USERS} READ`, `${MAIN} FULL_CONTROL`]);
    const controls = await send(g, new GetBucketOwnershipControlsCommand({ Bucket: 'open' }));
    expect(await controls.text()).toContain('<ObjectOwnership>ObjectWriter</ObjectOwnership>');
    await ok(g, put('open', 'shown', { ACL: 'public-read' }));
    await ok(g, put('open', 'hidden'));
    expect((await aclOf(g, new GetObjectAclCommand({ Bucket: 'open', Key: 'hidden' }))).grants).toEqual([`${MAIN} FULL_CONTROL`]);

    for (const as of [null, ALT]) {
      expect(await status(g, get('open', 'shown'), as)).toBe(200);
      expect(await answer(g, get('open', 'hidden'), as)).toEqual([403, 'AccessDenied']);
      expect(await status(g, new ListObjectsV2Command({ Bucket: 'open' }), as)).toBe(200);
      expect(await answer(g, put('open', 'intruder'), as)).toEqual([403, 'AccessDenied']);
      expect(await answer(g, new GetBucketAclCommand({ Bucket: 'open' }), as)).toEqual([403, 'AccessDenied']);
      expect(await answer(g, new PutObjectAclCommand({ Bucket: 'open', Key: 'shown', ACL: 'public-read-write' }), as)).toEqual([403, 'AccessDenied']);
      // A key that does not exist: 404 to a caller who may list the bucket (it learns nothing new).
      expect(await answer(g, get('open', 'nothing-here'), as)).toEqual([404, 'NoSuchKey']);
    }
    // The bucket owner's own keys are never narrowed by ACLs.
    expect(await status(g, get('open', 'hidden'))).toBe(200);
    // A bucket that does not exist: NoSuchBucket to anyone, as S3 answers; nothing made.
    for (const as of [null, ALT]) expect(await answer(g, get('no-such-bucket', 'k'), as)).toEqual([404, 'NoSuchBucket']);
    expect(await answer(g, put('no-such-bucket', 'k'), null)).toEqual([404, 'NoSuchBucket']);
  });

  it('a grant to an account by header: WRITE lets it write (the object is its own under ObjectWriter) and delete; the owner keeps reading', async () => {
    const g = gateway();
    await ok(g, new CreateBucketCommand({ Bucket: 'shared', ObjectOwnership: 'ObjectWriter', GrantWrite: 'id="alt"', GrantRead: 'id="alt"' }));
    expect((await aclOf(g, new GetBucketAclCommand({ Bucket: 'shared' }))).grants.sort()).toEqual(['alt READ', 'alt WRITE']);
    await ok(g, put('shared', 'from-alt'), ALT);
    const acl = await aclOf(g, new GetObjectAclCommand({ Bucket: 'shared', Key: 'from-alt' }), ALT);
    expect(acl).toEqual({ owner: 'alt', grants: ['alt FULL_CONTROL'] });
    expect(await status(g, get('shared', 'from-alt'), ALT)).toBe(200);
    expect(await status(g, get('shared', 'from-alt'))).toBe(200); // the bucket owner's account, by design (model/acl.ts)
    expect(await answer(g, get('shared', 'from-alt'), null)).toEqual([403, 'AccessDenied']);
    await ok(g, put('shared', 'main-1'));
    await ok(g, put('shared', 'main-2'));
    expect(await answer(g, get('shared', 'main-1'), ALT)).toEqual([403, 'AccessDenied']); // bucket READ lists; it does not read objects
    // A missing key to a caller who may not list: 403, not 404 (its absence is not told).
    expect(await answer(g, get('shared', 'nothing-here'), null)).toEqual([403, 'AccessDenied']);
    expect(await answer(g, get('shared', 'nothing-here'), ALT)).toEqual([404, 'NoSuchKey']);
    // A policy about something else: DeleteObjects' entries are still let in by the bucket's WRITE grant.
    const unrelated = { Effect: 'Deny', Principal: '*', Action: 's3:GetObject', Resource: 'arn:aws:s3:::shared/secret/*' };
    await ok(g, new PutBucketPolicyCommand({ Bucket: 'shared', Policy: JSON.stringify({ Version: '2012-10-17', Statement: [unrelated] }) }));
    const del = await send(g, new DeleteObjectsCommand({ Bucket: 'shared', Delete: { Objects: [{ Key: 'main-1' }, { Key: 'main-2' }] } }), ALT);
    expect(await del.text()).not.toContain('<Error>');
    expect(await answer(g, get('shared', 'main-1'))).toEqual([404, 'NoSuchKey']);
    // The grant taken back: nothing more.
    await ok(g, new PutBucketAclCommand({ Bucket: 'shared', ACL: 'private' }));
    expect(await answer(g, put('shared', 'late'), ALT)).toEqual([403, 'AccessDenied']);
    expect(await answer(g, new ListObjectsV2Command({ Bucket: 'shared' }), ALT)).toEqual([403, 'AccessDenied']);
  });

  it("an object's ACL: a grant, then a revocation, by document and by header; versions keep their own ACL; a copy never carries it", async () => {
    const g = gateway();
    await ok(g, new CreateBucketCommand({ Bucket: 'docs', ObjectOwnership: 'BucketOwnerPreferred' }));
    await ok(g, new PutBucketVersioningCommand({ Bucket: 'docs', VersioningConfiguration: { Status: 'Enabled' } }));
    const first = await send(g, put('docs', 'report'));
    const v1 = first.headers.get('x-amz-version-id')!;
    await ok(
      g,
      new PutObjectAclCommand({
        Bucket: 'docs',
        Key: 'report',
        AccessControlPolicy: {
          Owner: { ID: MAIN },
          Grants: [
            { Grantee: { Type: 'CanonicalUser', ID: MAIN }, Permission: 'FULL_CONTROL' },
            { Grantee: { Type: 'CanonicalUser', ID: 'alt' }, Permission: 'READ' },
          ],
        },
      }),
    );
    expect(await status(g, get('docs', 'report'), ALT)).toBe(200);
    expect(await answer(g, new GetObjectAclCommand({ Bucket: 'docs', Key: 'report' }), ALT)).toEqual([403, 'AccessDenied']); // READ is not READ_ACP
    await ok(g, put('docs', 'report')); // a new version: private again
    expect(await answer(g, get('docs', 'report'), ALT)).toEqual([403, 'AccessDenied']);
    expect(await status(g, new GetObjectCommand({ Bucket: 'docs', Key: 'report', VersionId: v1 }), ALT)).toBe(200);
    await ok(g, new PutObjectAclCommand({ Bucket: 'docs', Key: 'report', VersionId: v1, ACL: 'private' }));
    expect(await answer(g, new GetObjectCommand({ Bucket: 'docs', Key: 'report', VersionId: v1 }), ALT)).toEqual([403, 'AccessDenied']);

    await ok(g, put('docs', 'public', { ACL: 'public-read' }));
    await ok(g, new CopyObjectCommand({ Bucket: 'docs', Key: 'copied', CopySource: 'docs/public' }));
    expect(await answer(g, get('docs', 'copied'), null)).toEqual([403, 'AccessDenied']);
    await ok(g, new CreateBucketCommand({ Bucket: 'alts' }), ALT);
    await ok(g, new CopyObjectCommand({ Bucket: 'alts', Key: 'mine', CopySource: 'docs/public' }), ALT); // read by the source's ACL
    expect(await answer(g, new CopyObjectCommand({ Bucket: 'alts', Key: 'no', CopySource: 'docs/copied' }), ALT)).toEqual([403, 'AccessDenied']);
  });

  it('BucketOwnerPreferred: a write saying bucket-owner-full-control is the bucket owner’s, any other its writer’s', async () => {
    const g = gateway();
    await ok(g, new CreateBucketCommand({ Bucket: 'dropbox', ObjectOwnership: 'BucketOwnerPreferred', GrantWrite: 'id="alt"' }));
    await ok(g, put('dropbox', 'handed-over', { ACL: 'bucket-owner-full-control' }), ALT);
    await ok(g, put('dropbox', 'kept'), ALT);
    expect(await aclOf(g, new GetObjectAclCommand({ Bucket: 'dropbox', Key: 'handed-over' }))).toEqual({ owner: MAIN, grants: [`${MAIN} FULL_CONTROL`] });
    expect(await aclOf(g, new GetObjectAclCommand({ Bucket: 'dropbox', Key: 'kept' }), ALT)).toEqual({ owner: 'alt', grants: ['alt FULL_CONTROL'] });
    // Its writer may change its ACL (an owner's implicit WRITE_ACP); a stranger may not.
    await ok(g, new PutObjectAclCommand({ Bucket: 'dropbox', Key: 'kept', ACL: 'bucket-owner-read' }), ALT);
    expect((await aclOf(g, new GetObjectAclCommand({ Bucket: 'dropbox', Key: 'kept' }), ALT)).grants).toEqual(['alt FULL_CONTROL', `${MAIN} READ`]);
    expect(await answer(g, new PutObjectAclCommand({ Bucket: 'dropbox', Key: 'handed-over', ACL: 'public-read' }), ALT)).toEqual([403, 'AccessDenied']);
    // An upload's future owner is its writer's account, in ListMultipartUploads and ListParts.
    const started = await send(g, new CreateMultipartUploadCommand({ Bucket: 'dropbox', Key: 'big' }), ALT);
    const uploadId = /<UploadId>([^<]+)</.exec(await started.text())![1]!;
    const uploads = await (await send(g, new ListMultipartUploadsCommand({ Bucket: 'dropbox' }))).text();
    expect(uploads).toContain('<Initiator><ID>alt</ID><DisplayName>alt</DisplayName></Initiator><Owner><ID>alt</ID>');
    const parts = await (await send(g, new ListPartsCommand({ Bucket: 'dropbox', Key: 'big', UploadId: uploadId }), ALT)).text();
    expect(parts).toContain('<Owner><ID>alt</ID>');
    // An ACL naming others only: its owner still reads and replaces it (implicit READ_ACP, WRITE_ACP), and reads nothing more.
    await ok(g, put('dropbox', 'given-away', { GrantFullControl: `id="${MAIN}"` }), ALT);
    expect(await aclOf(g, new GetObjectAclCommand({ Bucket: 'dropbox', Key: 'given-away' }), ALT)).toEqual({ owner: 'alt', grants: [`${MAIN} FULL_CONTROL`] });
    expect(await answer(g, get('dropbox', 'given-away'), ALT)).toEqual([403, 'AccessDenied']);
    await ok(g, new PutObjectAclCommand({ Bucket: 'dropbox', Key: 'given-away', ACL: 'private' }), ALT);
    expect(await status(g, get('dropbox', 'given-away'), ALT)).toBe(200);
  });

  it('never past a Deny, nor past IgnorePublicAcls; BlockPublicAcls refuses public ACLs by header and by document', async () => {
    const g = gateway();
    await ok(g, new CreateBucketCommand({ Bucket: 'guarded', ObjectOwnership: 'ObjectWriter', ACL: 'public-read' }));
    await ok(g, put('guarded', 'pub', { ACL: 'public-read', GrantRead: undefined as unknown as string }));
    await ok(g, new PutObjectAclCommand({ Bucket: 'guarded', Key: 'pub', GrantRead: `uri="${ALL_USERS}", id="alt"` }));
    expect(await status(g, get('guarded', 'pub'), null)).toBe(200);
    await ok(
      g,
      new PutBucketPolicyCommand({
        Bucket: 'guarded',
        Policy: JSON.stringify({
          Version: '2012-10-17',
          Statement: [{ Effect: 'Deny', Principal: { AWS: 'arn:aws:iam::alt:root' }, Action: 's3:GetObject', Resource: 'arn:aws:s3:::guarded/*' }],
        }),
      }),
    );
    expect(await answer(g, get('guarded', 'pub'), ALT)).toEqual([403, 'AccessDenied']);
    expect(await status(g, get('guarded', 'pub'), null)).toBe(200);

    await ok(g, new PutPublicAccessBlockCommand({ Bucket: 'guarded', PublicAccessBlockConfiguration: { IgnorePublicAcls: true } }));
    expect(await answer(g, get('guarded', 'pub'), null)).toEqual([403, 'AccessDenied']);
    expect(await answer(g, new ListObjectsV2Command({ Bucket: 'guarded' }), null)).toEqual([403, 'AccessDenied']);
    expect((await aclOf(g, new GetObjectAclCommand({ Bucket: 'guarded', Key: 'pub' }))).grants).toContain(`${ALL_USERS} READ`); // kept, ignored

    await ok(g, new PutPublicAccessBlockCommand({ Bucket: 'guarded', PublicAccessBlockConfiguration: { BlockPublicAcls: true } }));
    expect(await status(g, get('guarded', 'pub'), null)).toBe(200); // BlockPublicAcls alone ignores nothing
    expect(await answer(g, put('guarded', 'more', { ACL: 'public-read' }))).toEqual([403, 'AccessDenied']);
    const everyone = { Grantee: { Type: 'Group' as const, URI: ALL_USERS }, Permission: 'READ' as const };
    expect(await answer(g, new PutBucketAclCommand({ Bucket: 'guarded', AccessControlPolicy: { Owner: { ID: MAIN }, Grants: [everyone] } }))).toEqual([
      403,
      'AccessDenied',
    ]);
  });
});

describe('Object Ownership', () => {
  it('back to BucketOwnerEnforced only once the bucket ACL is private; then every ACL counts for nothing; deleted controls enable them again', async () => {
    const g = gateway();
    await ok(g, new CreateBucketCommand({ Bucket: 'flip', ObjectOwnership: 'ObjectWriter', ACL: 'public-read' }));
    await ok(g, put('flip', 'pub', { ACL: 'public-read' }));
    const enforce = new PutBucketOwnershipControlsCommand({ Bucket: 'flip', OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] } });
    expect(await answer(g, enforce)).toEqual([400, 'InvalidBucketAclWithObjectOwnership']);
    await ok(g, new PutBucketAclCommand({ Bucket: 'flip', ACL: 'private' }));
    await ok(g, enforce);
    expect(await answer(g, get('flip', 'pub'), null)).toEqual([403, 'AccessDenied']);
    expect(await aclOf(g, new GetObjectAclCommand({ Bucket: 'flip', Key: 'pub' }))).toEqual({ owner: MAIN, grants: [`${MAIN} FULL_CONTROL`] });
    expect(await answer(g, put('flip', 'x', { ACL: 'public-read' }))).toEqual([400, 'AccessControlListNotSupported']);
    expect(await answer(g, new PutBucketAclCommand({ Bucket: 'flip', ACL: 'public-read' }))).toEqual([400, 'AccessControlListNotSupported']);

    await ok(g, new DeleteBucketOwnershipControlsCommand({ Bucket: 'flip' }));
    await ok(g, new DeleteBucketOwnershipControlsCommand({ Bucket: 'flip' }));
    expect(await answer(g, new GetBucketOwnershipControlsCommand({ Bucket: 'flip' }))).toEqual([404, 'OwnershipControlsNotFoundError']);
    expect(await status(g, get('flip', 'pub'), null)).toBe(200); // the object's stored ACL counts again
    await ok(g, new PutBucketAclCommand({ Bucket: 'flip', ACL: 'public-read' }));
  });

  it('a new bucket is BucketOwnerEnforced by default: a public ACL at creation is InvalidBucketAclWithObjectOwnership, private is fine', async () => {
    const g = gateway();
    expect(await answer(g, new CreateBucketCommand({ Bucket: 'plain', ACL: 'public-read' }))).toEqual([400, 'InvalidBucketAclWithObjectOwnership']);
    await ok(g, new CreateBucketCommand({ Bucket: 'plain', ACL: 'private' }));
    const controls = await send(g, new GetBucketOwnershipControlsCommand({ Bucket: 'plain' }));
    expect(await controls.text()).toContain('<ObjectOwnership>BucketOwnerEnforced</ObjectOwnership>');
    expect(await answer(g, put('plain', 'k', { GrantRead: 'id="alt"' }))).toEqual([400, 'AccessControlListNotSupported']);
  });

  // AWS: `private` is the writer's own FULL_CONTROL, so on an enforced bucket it passes within the
  // bucket's account and is refused from another (redpanda-data/connect#4371).
  it('an enforced bucket open to another account by policy: its private is refused, bucket-owner-full-control and no ACL are fine, and so is its Put*Acl', async () => {
    const g = gateway();
    await ok(g, new CreateBucketCommand({ Bucket: 'open' }));
    const everything = { Effect: 'Allow', Principal: { AWS: '*' }, Action: '*', Resource: ['arn:aws:s3:::open', 'arn:aws:s3:::open/*'] };
    await ok(g, new PutBucketPolicyCommand({ Bucket: 'open', Policy: JSON.stringify({ Version: '2012-10-17', Statement: [everything] }) }));
    const refused = [400, 'AccessControlListNotSupported'];
    await ok(g, put('open', 'plain'), ALT);
    await ok(g, put('open', 'bofc', { ACL: 'bucket-owner-full-control' }), ALT);
    expect(await answer(g, put('open', 'alt-private', { ACL: 'private' }), ALT)).toEqual(refused);
    expect(await answer(g, new CreateMultipartUploadCommand({ Bucket: 'open', Key: 'alt-private', ACL: 'private' }), ALT)).toEqual(refused);
    expect(await answer(g, new CopyObjectCommand({ Bucket: 'open', Key: 'alt-private', CopySource: 'open/plain', ACL: 'private' }), ALT)).toEqual(refused);
    await ok(g, put('open', 'main-private', { ACL: 'private' }));
    // Another account's Put*Acl is refused; the owner's restating what the bucket has passes, a no-op (s3cmd's copies send it).
    expect(await answer(g, new PutObjectAclCommand({ Bucket: 'open', Key: 'plain', ACL: 'private' }), ALT)).toEqual(refused);
    expect(await answer(g, new PutBucketAclCommand({ Bucket: 'open', ACL: 'private' }), ALT)).toEqual(refused);
    const mainsAlone = { Owner: { ID: MAIN }, Grants: [{ Grantee: { Type: 'CanonicalUser' as const, ID: MAIN }, Permission: 'FULL_CONTROL' as const }] };
    expect(await answer(g, new PutObjectAclCommand({ Bucket: 'open', Key: 'plain', AccessControlPolicy: mainsAlone }), ALT)).toEqual(refused);
    expect(await answer(g, new PutBucketAclCommand({ Bucket: 'open', AccessControlPolicy: mainsAlone }), ALT)).toEqual(refused);
    await ok(g, new PutObjectAclCommand({ Bucket: 'open', Key: 'plain', AccessControlPolicy: mainsAlone }));
    await ok(g, new PutObjectAclCommand({ Bucket: 'open', Key: 'plain', ACL: 'private' }));
    await ok(g, new PutBucketAclCommand({ Bucket: 'open', ACL: 'private' }));
    expect(await aclOf(g, new GetObjectAclCommand({ Bucket: 'open', Key: 'plain' }), ALT)).toEqual({ owner: MAIN, grants: [`${MAIN} FULL_CONTROL`] });
    expect(await status(g, new GetObjectCommand({ Bucket: 'open', Key: 'alt-private' }))).toBe(404);
  });

  it("x-amz-expected-bucket-owner: 403 when the bucket is another account's, whoever asks; the source's for a copy", async () => {
    const g = gateway();
    await ok(g, new CreateBucketCommand({ Bucket: 'mine', ObjectOwnership: 'ObjectWriter', ACL: 'public-read-write' }));
    await ok(g, put('mine', 'k'));
    for (const as of [{}, ALT, null]) {
      expect(await answer(g, new ListObjectsV2Command({ Bucket: 'mine', ExpectedBucketOwner: 'alt-not' }), as)).toEqual([403, 'AccessDenied']);
      expect(await answer(g, put('mine', 'x', { ExpectedBucketOwner: 'nobody' }), as)).toEqual([403, 'AccessDenied']);
      expect(await status(g, new ListObjectsV2Command({ Bucket: 'mine', ExpectedBucketOwner: MAIN }), as)).toBe(200);
    }
    const copy = (source: string) => new CopyObjectCommand({ Bucket: 'mine', Key: 'copy', CopySource: 'mine/k', ExpectedSourceBucketOwner: source });
    expect(await answer(g, copy('alt'))).toEqual([403, 'AccessDenied']);
    await ok(g, copy(MAIN));
  });

  it('grants S3 refuses: an unknown id, an e-mail address, a group S3 does not define, a canned ACL with grants', async () => {
    const g = gateway();
    await ok(g, new CreateBucketCommand({ Bucket: 'strict', ObjectOwnership: 'ObjectWriter' }));
    expect(await answer(g, put('strict', 'k', { GrantRead: 'id="nobody"' }))).toEqual([400, 'InvalidArgument']);
    expect(await answer(g, put('strict', 'k', { GrantRead: 'emailAddress="a@example.com"' }))).toEqual([400, 'UnresolvableGrantByEmailAddress']);
    expect(await answer(g, put('strict', 'k', { GrantRead: 'uri="http://acs.amazonaws.com/groups/global/Nobody"' }))).toEqual([400, 'InvalidArgument']);
    expect(await answer(g, put('strict', 'k', { ACL: 'public-read', GrantRead: 'id="alt"' }))).toEqual([400, 'InvalidRequest']);
    expect(await answer(g, get('strict', 'k'))).toEqual([404, 'NoSuchKey']); // none of them stored anything
    expect(await answer(g, new PutBucketAclCommand({ Bucket: 'strict', GrantFullControl: 'id="nobody"' }))).toEqual([400, 'InvalidArgument']);
  });
});
