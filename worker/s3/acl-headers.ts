/**
 * The ACL headers every request may carry (`x-amz-acl`, `x-amz-grant-*`), checked after the gate
 * (app.ts, post-object.ts; the gate first refuses a public one with 403 AccessDenied on a bucket
 * whose public access block has BlockPublicAcls, as S3 does) and before the handler reads a body.
 * On a bucket whose Object Ownership disables ACLs (BucketOwnerEnforced, model/acl.ts), a write
 * may ask only for the bucket owner's (model/account.ts) FULL_CONTROL: `bucket-owner-full-control`,
 * a full-control grant to that owner's id, or `private` from the owner's own account (its owner is
 * the writer: from another account it would leave the bucket owner out). Anything else is 400
 * AccessControlListNotSupported, as S3 answers (redpanda-data/connect#4371 observed AWS accepting
 * `private` within the bucket's account and refusing it from another); on one that enables them the
 * headers must state an ACL S3 would accept (a canned name it defines, grantees that exist here).
 * CreateBucket's are its handler's (buckets.ts): the bucket's ownership is in the same request. The
 * ACL operations themselves are in acl.ts.
 * Spec: S3 "Controlling ownership of objects and disabling ACLs for your bucket", "Access control
 * list (ACL) overview".
 */
import { S3Error } from '../model/errors.ts';
import { GRANT_HEADERS } from '../model/public-access-block.ts';
import { DEFAULT_ACCOUNT } from '../model/account.ts';
import { aclFromHeaders, ownershipOf, type KnownAccount } from '../model/acl.ts';
import type { BucketSettings } from '../model/bucket-settings.ts';
import type { S3Settings } from './context.ts';

export { GRANT_HEADERS };

export const notSupported = () => new S3Error('AccessControlListNotSupported');

/** `id="..."` grantees of a grant header, all the owner's (FULL_CONTROL only). */
function ownerOnlyGrant(name: string, value: string, owner: string): boolean {
  if (name !== 'x-amz-grant-full-control') return false;
  const grantees = value
    .split(',')
    .map((g) => g.trim())
    .filter(Boolean);
  return (
    grantees.length > 0 &&
    grantees.every((g) => {
      const id = /^id\s*=\s*"?([^"]*)"?$/i.exec(g)?.[1];
      return id === owner;
    })
  );
}

/**
 * Whether a request signed for `requester`'s account is of the bucket's (`owner`): null (or
 * absent) is a caller of `allowAnonymous: true`, whose gateway-wide access is the owner's
 * (policy-gate.ts `account`). Its `private` names the bucket owner; its Put*Acl may restate the
 * owner's ACL (acl.ts).
 */
export function ofBucketAccount(requester: string | null | undefined, owner: string): boolean {
  return requester === null || requester === undefined || requester === owner;
}

/**
 * Refuses `x-amz-acl` and `x-amz-grant-*` headers that grant anything beyond the bucket owner's
 * FULL_CONTROL. `requester`: the writer's account, whose `private` names itself (ofBucketAccount).
 */
function assertOwnerOnlyAclHeaders(headers: Headers, owner: string, requester: string | null): void {
  const acl = headers.get('x-amz-acl')?.trim();
  const ownerOnly = acl === undefined || acl === 'bucket-owner-full-control' || (acl === 'private' && ofBucketAccount(requester, owner));
  if (!ownerOnly) throw notSupported();
  for (const name of GRANT_HEADERS) {
    const value = headers.get(name);
    if (value !== null && !ownerOnlyGrant(name, value, owner)) throw notSupported();
  }
}

/** The account ids an ACL grant may name here (S3Settings.accounts; absent: the default account). */
export function knownAccounts(settings: Pick<S3Settings, 'accounts'>): KnownAccount {
  const ids = settings.accounts ?? [DEFAULT_ACCOUNT];
  return (id) => ids.includes(id);
}

/**
 * The request's ACL headers against its bucket (`rows`: its request-path settings, as the gate
 * checked them; `owner`: the bucket's account; `requester`: the signer's, as policy-gate.ts has it):
 * the bucket owner's alone where ACLs are disabled, a valid ACL where they are enabled
 * (InvalidArgument, InvalidRequest, UnresolvableGrantByEmailAddress: model/acl.ts).
 */
export function assertAclHeaders(headers: Headers, owner: string, requester: string | null, rows: BucketSettings['rows'], known: KnownAccount): void {
  if (ownershipOf(rows.ownership).aclsEnabled) aclFromHeaders(headers, owner, owner, known);
  else assertOwnerOnlyAclHeaders(headers, owner, requester);
}
