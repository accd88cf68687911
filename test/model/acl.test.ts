// worker/model/acl.ts: canned ACLs as S3 defines them, grant headers as clients write them, what
// each grant lets in (and what it never does), the stored forms and what a damaged row means.
import { describe, expect, it } from 'vitest';
import {
  aclAllows,
  aclFromHeaders,
  bucketAcl,
  bucketAclRow,
  cannedAcl,
  isPrivate,
  isPublicAcl,
  objectAcl,
  ownershipOf,
  ownershipRow,
  parseStoredGrants,
  storedObjectAcl,
  type Acl,
} from '../../worker/model/acl.ts';
import { S3Error } from '../../worker/model/errors.ts';
import type { ObjectStore } from '../../worker/model/object-store.ts';
import { objectAclOf } from '../../worker/s3/acl-access.ts';

const known = (id: string) => ['owner', 'alt', 'bucket-owner'].includes(id);
const show = (acl: Acl) => acl.grants.map((g) => `${'account' in g.grantee ? g.grantee.account : g.grantee.group} ${g.permission}`);

describe('canned ACLs', () => {
  it.each([
    ['private', ['owner FULL_CONTROL']],
    ['public-read', ['AllUsers READ', 'owner FULL_CONTROL']],
    ['public-read-write', ['AllUsers READ', 'AllUsers WRITE', 'owner FULL_CONTROL']],
    ['authenticated-read', ['AuthenticatedUsers READ', 'owner FULL_CONTROL']],
    ['bucket-owner-read', ['owner FULL_CONTROL', 'bucket-owner READ']],
    ['bucket-owner-full-control', ['owner FULL_CONTROL', 'bucket-owner FULL_CONTROL']],
    ['log-delivery-write', ['LogDelivery WRITE', 'LogDelivery READ_ACP', 'owner FULL_CONTROL']],
    ['aws-exec-read', ['owner FULL_CONTROL']],
  ])('%s', (name, grants) => {
    expect(show(cannedAcl(name, 'owner', 'bucket-owner'))).toEqual(grants);
  });

  it('bucket-owner-* for the bucket owner itself is one grant; an unknown name is InvalidArgument', () => {
    expect(show(cannedAcl('bucket-owner-full-control', 'owner', 'owner'))).toEqual(['owner FULL_CONTROL']);
    expect(() => cannedAcl('public', 'owner', 'owner')).toThrow(expect.objectContaining({ code: 'InvalidArgument' }));
  });
});

describe('grant headers', () => {
  const headers = (h: Record<string, string>) => new Headers(h);
  it('ids, URIs (http or https), several per header, spaces and quotes as clients send them', () => {
    const acl = aclFromHeaders(
      headers({
        'x-amz-grant-read': 'id="alt", uri="https://acs.amazonaws.com/groups/global/AllUsers"',
        'x-amz-grant-write-acp': ' id = alt ',
        'x-amz-grant-full-control': 'id="owner"',
      }),
      'owner',
      'owner',
      known,
    )!;
    expect(show(acl)).toEqual(['alt READ', 'AllUsers READ', 'alt WRITE_ACP', 'owner FULL_CONTROL']);
    expect(acl.owner).toBe('owner');
  });

  it('none: null; canned with grants: InvalidRequest; an unknown id, an e-mail address, an unknown group or grantee type: refused', () => {
    expect(aclFromHeaders(headers({}), 'owner', 'owner', known)).toBeNull();
    const refused = (h: Record<string, string>, code: string) =>
      expect(() => aclFromHeaders(headers(h), 'owner', 'owner', known)).toThrow(expect.objectContaining({ code }));
    refused({ 'x-amz-acl': 'private', 'x-amz-grant-read': 'id="alt"' }, 'InvalidRequest');
    refused({ 'x-amz-grant-read': 'id="stranger"' }, 'InvalidArgument');
    refused({ 'x-amz-grant-read': 'emailAddress="a@example.com"' }, 'UnresolvableGrantByEmailAddress');
    refused({ 'x-amz-grant-read': 'uri="http://acs.amazonaws.com/groups/global/Everyone"' }, 'InvalidArgument');
    refused({ 'x-amz-grant-read': 'arn="x"' }, 'InvalidArgument');
  });
});

describe('what a grant lets in', () => {
  const acl: Acl = {
    owner: 'owner',
    grants: [
      { grantee: { group: 'AllUsers' }, permission: 'READ' },
      { grantee: { group: 'AuthenticatedUsers' }, permission: 'READ_ACP' },
      { grantee: { group: 'LogDelivery' }, permission: 'WRITE' },
      { grantee: { account: 'alt' }, permission: 'FULL_CONTROL' },
    ],
  };
  it('AllUsers anyone, AuthenticatedUsers any signed caller, an account itself, FULL_CONTROL every permission; LogDelivery nobody', () => {
    expect(aclAllows(acl, null, 'READ')).toBe(true);
    expect(aclAllows(acl, null, 'READ_ACP')).toBe(false);
    expect(aclAllows(acl, 'someone', 'READ_ACP')).toBe(true);
    expect(aclAllows(acl, 'someone', 'WRITE')).toBe(false); // LogDelivery's WRITE lets no caller in
    for (const p of ['READ', 'WRITE', 'READ_ACP', 'WRITE_ACP', 'FULL_CONTROL'] as const) expect(aclAllows(acl, 'alt', p)).toBe(true);
  });
  it('IgnorePublicAcls: the groups count for nothing, an account grant still does', () => {
    expect(aclAllows(acl, null, 'READ', true)).toBe(false);
    expect(aclAllows(acl, 'someone', 'READ_ACP', true)).toBe(false);
    expect(aclAllows(acl, 'alt', 'READ', true)).toBe(true);
  });
  it('public and private as S3 means them', () => {
    expect(isPublicAcl(acl)).toBe(true);
    expect(isPublicAcl(cannedAcl('log-delivery-write', 'o', 'o'))).toBe(false);
    expect(isPrivate(cannedAcl('private', 'o', 'o'))).toBe(true);
    expect(isPrivate(cannedAcl('bucket-owner-read', 'o', 'b'))).toBe(false);
  });
});

describe('stored forms', () => {
  it("a bucket's row: none for the owner's FULL_CONTROL alone, the grants otherwise (an empty list kept as one)", () => {
    expect(bucketAclRow(cannedAcl('private', 'owner', 'owner'))).toBeNull();
    for (const acl of [cannedAcl('public-read-write', 'owner', 'owner'), { owner: 'owner', grants: [] }]) {
      expect(bucketAcl(bucketAclRow(acl), 'owner')).toEqual(acl);
    }
    expect(bucketAcl(null, 'owner')).toEqual(cannedAcl('private', 'owner', 'owner'));
  });
  it("an object's: none for the bucket owner's private ACL; its owner and grants otherwise", () => {
    expect(storedObjectAcl(cannedAcl('private', 'b', 'b'), 'b')).toBeUndefined();
    const theirs = cannedAcl('private', 'alt', 'b');
    expect(objectAcl(storedObjectAcl(theirs, 'b'), 'b')).toEqual(theirs);
    expect(objectAcl(undefined, 'b')).toEqual(cannedAcl('private', 'b', 'b'));
  });
  it('a damaged row grants nothing beyond its owner; unknown permissions and groups are dropped', () => {
    expect(parseStoredGrants('{not json', 'owner')).toEqual([{ grantee: { account: 'owner' }, permission: 'FULL_CONTROL' }]);
    expect(parseStoredGrants('[{"group":"Martians","p":"READ"},{"id":"alt","p":"ROOT"},{"id":"alt","p":"READ"}]', 'owner')).toEqual([
      { grantee: { account: 'alt' }, permission: 'READ' },
    ]);
  });
  it('Object Ownership rows: absent is BucketOwnerEnforced (ACLs off), "none" no controls (ACLs on), an unknown row ACLs off', () => {
    expect(ownershipOf(null)).toEqual({ setting: 'BucketOwnerEnforced', aclsEnabled: false });
    expect(ownershipOf(ownershipRow(null))).toEqual({ setting: null, aclsEnabled: true });
    for (const s of ['ObjectWriter', 'BucketOwnerPreferred'] as const) expect(ownershipOf(ownershipRow(s))).toEqual({ setting: s, aclsEnabled: true });
    expect(ownershipRow('BucketOwnerEnforced')).toBeNull();
    expect(ownershipOf('garbage').aclsEnabled).toBe(false);
  });
});

describe("the gate's read of an object's ACL (s3/acl-access.ts objectAclOf)", () => {
  const storeThrowing = (code: string) =>
    ({
      headObject: async () => {
        throw new S3Error(code as 'NoSuchKey');
      },
    }) as unknown as ObjectStore;
  it('no such key, version or a delete marker: missing (null); any other refusal, such as an SSE-C object read without its key: private (fails closed)', async () => {
    for (const code of ['NoSuchKey', 'NoSuchVersion', 'MethodNotAllowed']) expect(await objectAclOf(storeThrowing(code), 'b', 'k', undefined)).toBeNull();
    for (const code of ['InvalidRequest', 'AccessDenied', 'InvalidArgument'])
      expect(await objectAclOf(storeThrowing(code), 'b', 'k', undefined)).toBeUndefined();
  });
});
