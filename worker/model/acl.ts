/**
 * Access control lists (issue 43), as S3 keeps them on a bucket whose Object Ownership enables
 * them (ObjectWriter, BucketOwnerPreferred, or no ownership controls at all): an owner and a list
 * of grants, each a permission for an account (a canonical user, named by its account id:
 * model/account.ts) or a group (everyone, every signed request, the log delivery group).
 *
 * What a grant lets in, here: grants only widen. A key of the bucket owner's account does what
 * its scope says (model/access.ts) whatever the ACLs; a grant lets another account's key, or an
 * anonymous request where the gateway lets anonymous requests be judged (`allowAnonymous:
 * "policy"`), do what a bucket policy's Allow would (s3/policy-gate.ts). Permissions, as AWS maps
 * them (S3 User Guide, "Access control list (ACL) overview", "Mapping of ACL permissions and
 * access policy permissions"):
 *   bucket READ       list the bucket (ListObjects, ListObjectVersions, ListMultipartUploads, HeadBucket)
 *   bucket WRITE      create, overwrite and delete any object in it (and the multipart steps)
 *   bucket READ_ACP / WRITE_ACP   read / replace the bucket's ACL
 *   object READ       read the object (GET, HEAD, its tags and attributes)
 *   object READ_ACP / WRITE_ACP   read / replace the object's ACL
 *   FULL_CONTROL      all of the above on what it is granted on
 * A deliberate difference from AWS: the bucket owner's account keeps every access its keys have to
 * objects another account wrote into its bucket (on AWS an ObjectWriter object's owner must grant
 * the bucket owner READ), so no object in a bucket is ever out of its owner's reach.
 * The log delivery group's grants are kept and shown and let nothing in (server access logs here
 * are delivered by the gateway itself: docs/COMPATIBILITY.md). Grants to e-mail addresses are
 * refused as AWS refuses an address it cannot resolve (UnresolvableGrantByEmailAddress): accounts
 * here have none.
 *
 * Stored: the bucket's ACL in its state row ACL_ROW (absent: the owner's FULL_CONTROL alone), its
 * ownership setting in OWNERSHIP_ROW (absent: BucketOwnerEnforced, every bucket created before
 * ACLs existed); both are request-path settings (model/bucket-settings.ts). An object's ACL is its
 * metadata's `acl` (model/object-store.ts; absent: owned by the bucket owner, FULL_CONTROL alone).
 */
import { S3Error } from './errors.ts';
import { isPublicGroup } from './public-access-block.ts';

export type Permission = 'READ' | 'WRITE' | 'READ_ACP' | 'WRITE_ACP' | 'FULL_CONTROL';
export const PERMISSIONS: readonly Permission[] = ['READ', 'WRITE', 'READ_ACP', 'WRITE_ACP', 'FULL_CONTROL'];

export const GROUP_URIS = {
  AllUsers: 'http://acs.amazonaws.com/groups/global/AllUsers',
  AuthenticatedUsers: 'http://acs.amazonaws.com/groups/global/AuthenticatedUsers',
  LogDelivery: 'http://acs.amazonaws.com/groups/s3/LogDelivery',
} as const;
export type Group = keyof typeof GROUP_URIS;

export type Grantee = { account: string } | { group: Group };

export interface Grant {
  grantee: Grantee;
  permission: Permission;
}

/** An ACL: whose the bucket or object is, and what it grants (the owner's own grant included, as S3 lists it). */
export interface Acl {
  owner: string;
  grants: Grant[];
}

/** The bucket's state row holding its ACL (JSON of Acl's grants: the owner is the bucket's). */
export const ACL_ROW = 'acl';
/** The bucket's state row holding its Object Ownership (absent: BucketOwnerEnforced). */
export const OWNERSHIP_ROW = 'ownership';

export type ObjectOwnership = 'BucketOwnerEnforced' | 'BucketOwnerPreferred' | 'ObjectWriter';
export const OWNERSHIP_SETTINGS: readonly ObjectOwnership[] = ['BucketOwnerEnforced', 'BucketOwnerPreferred', 'ObjectWriter'];
/** The ownership row after DeleteBucketOwnershipControls: no controls, ACLs enabled as ObjectWriter (AWS). */
export const NO_CONTROLS = 'none';

/** The bucket's Object Ownership as its row says: the setting (null: no controls) and whether ACLs count. */
export function ownershipOf(row: string | null): { setting: ObjectOwnership | null; aclsEnabled: boolean } {
  if (row === null) return { setting: 'BucketOwnerEnforced', aclsEnabled: false };
  if (row === NO_CONTROLS) return { setting: null, aclsEnabled: true };
  if ((OWNERSHIP_SETTINGS as readonly string[]).includes(row)) return { setting: row as ObjectOwnership, aclsEnabled: row !== 'BucketOwnerEnforced' };
  return { setting: 'BucketOwnerEnforced', aclsEnabled: false }; // unknown: ACLs off (fails closed)
}

/** The row a setting stores (BucketOwnerEnforced: none, as every bucket created before ACLs). */
export function ownershipRow(setting: ObjectOwnership | null): string | null {
  return setting === null ? NO_CONTROLS : setting === 'BucketOwnerEnforced' ? null : setting;
}

/** The ACL of a bucket or object nothing was granted on: its owner's FULL_CONTROL. */
export function privateAcl(owner: string): Acl {
  return { owner, grants: [{ grantee: { account: owner }, permission: 'FULL_CONTROL' }] };
}

const sameGrantee = (a: Grantee, b: Grantee) => ('account' in a ? 'account' in b && a.account === b.account : 'group' in b && a.group === b.group);

/** Whether `acl` grants no more than its owner's FULL_CONTROL (what BucketOwnerEnforced allows). */
export function isPrivate(acl: Acl): boolean {
  return acl.grants.every((g) => 'account' in g.grantee && g.grantee.account === acl.owner && g.permission === 'FULL_CONTROL');
}

/** Whether `acl` grants anything to AllUsers or AuthenticatedUsers (S3's "public"). */
export function isPublicAcl(acl: Acl): boolean {
  return acl.grants.some((g) => 'group' in g.grantee && (g.grantee.group === 'AllUsers' || g.grantee.group === 'AuthenticatedUsers'));
}

/** The canned ACLs S3 defines, and which apply to what (aws-exec-read's EC2 grantee does not exist here: it is the owner's alone). */
const CANNED = [
  'private',
  'public-read',
  'public-read-write',
  'authenticated-read',
  'aws-exec-read',
  'bucket-owner-read',
  'bucket-owner-full-control',
  'log-delivery-write',
];

/**
 * The ACL a canned name stands for (S3 User Guide, "Canned ACL"): `owner` is the new bucket's or
 * object's owner, `bucketOwner` the bucket's (bucket-owner-read / -full-control name it; on a
 * bucket they mean private). Public grants come before the owner's, as S3 lists them.
 * InvalidArgument for a name S3 does not define.
 */
export function cannedAcl(name: string, owner: string, bucketOwner: string): Acl {
  const own: Grant = { grantee: { account: owner }, permission: 'FULL_CONTROL' };
  const all = (permission: Permission): Grant => ({ grantee: { group: 'AllUsers' }, permission });
  switch (name.trim()) {
    case 'private':
    case 'aws-exec-read':
      return { owner, grants: [own] };
    case 'public-read':
      return { owner, grants: [all('READ'), own] };
    case 'public-read-write':
      return { owner, grants: [all('READ'), all('WRITE'), own] };
    case 'authenticated-read':
      return { owner, grants: [{ grantee: { group: 'AuthenticatedUsers' }, permission: 'READ' }, own] };
    case 'bucket-owner-read':
      return { owner, grants: owner === bucketOwner ? [own] : [own, { grantee: { account: bucketOwner }, permission: 'READ' }] };
    case 'bucket-owner-full-control':
      return { owner, grants: owner === bucketOwner ? [own] : [own, { grantee: { account: bucketOwner }, permission: 'FULL_CONTROL' }] };
    case 'log-delivery-write':
      return {
        owner,
        grants: [{ grantee: { group: 'LogDelivery' }, permission: 'WRITE' }, { grantee: { group: 'LogDelivery' }, permission: 'READ_ACP' }, own],
      };
  }
  throw new S3Error('InvalidArgument', `${name} is not a canned ACL (${CANNED.join(', ')}).`, { ArgumentName: 'x-amz-acl', ArgumentValue: name });
}

/** The x-amz-grant-* header of each permission. */
export const GRANT_HEADER: Readonly<Record<Permission, string>> = {
  READ: 'x-amz-grant-read',
  WRITE: 'x-amz-grant-write',
  READ_ACP: 'x-amz-grant-read-acp',
  WRITE_ACP: 'x-amz-grant-write-acp',
  FULL_CONTROL: 'x-amz-grant-full-control',
};

/** Who can be a grantee: `known(id)` says whether an account id exists here. */
export type KnownAccount = (id: string) => boolean;

/** The grantee a group URI names (http or https, as S3 accepts); InvalidArgument otherwise. */
export function groupOf(uri: string): Group {
  const u = uri.trim().replace(/^https:/i, 'http:');
  const found = (Object.keys(GROUP_URIS) as Group[]).find((g) => GROUP_URIS[g] === u);
  if (!found) throw new S3Error('InvalidArgument', `${uri} is not a group S3 defines.`, { ArgumentName: 'URI', ArgumentValue: uri });
  return found;
}

/** A canonical user's id, which must be an account here: InvalidArgument as S3 answers an id it does not know. */
export function accountOf(id: string, known: KnownAccount): Grantee {
  const trimmed = id.trim();
  if (!known(trimmed)) throw new S3Error('InvalidArgument', 'Invalid id', { ArgumentName: 'CanonicalUser/ID', ArgumentValue: trimmed });
  return { account: trimmed };
}

export const unresolvableEmail = (address: string) =>
  new S3Error('UnresolvableGrantByEmailAddress', 'The e-mail address you provided does not match any account on record.', { EmailAddress: address });

/**
 * The ACL a request's `x-amz-acl` or `x-amz-grant-*` headers ask for; null when it has neither.
 * Both at once is InvalidRequest (S3: "Specifying both Canned ACLs and Header Grants is not
 * allowed"). Grant headers list `id="..."`, `uri="..."` or `emailAddress="..."`, comma-separated;
 * the owner gets no grant of its own unless one names it, as S3 stores it.
 */
export function aclFromHeaders(headers: Headers, owner: string, bucketOwner: string, known: KnownAccount): Acl | null {
  const canned = headers.get('x-amz-acl');
  const granted = PERMISSIONS.filter((p) => headers.has(GRANT_HEADER[p]));
  if (canned !== null && granted.length) throw new S3Error('InvalidRequest', 'Specifying both Canned ACLs and Header Grants is not allowed');
  if (canned !== null) return cannedAcl(canned, owner, bucketOwner);
  if (!granted.length) return null;
  const grants: Grant[] = [];
  for (const permission of granted) {
    for (const part of headers.get(GRANT_HEADER[permission])!.split(',')) {
      if (part.trim() === '') continue;
      const m = /^\s*([A-Za-z]+)\s*=\s*"?([^"]*)"?\s*$/.exec(part);
      if (!m) throw new S3Error('InvalidArgument', `Invalid grant ${part.trim()}`, { ArgumentName: GRANT_HEADER[permission], ArgumentValue: part.trim() });
      const [, kind, value] = m as unknown as [string, string, string];
      const k = kind.toLowerCase();
      const grantee: Grantee =
        k === 'id'
          ? accountOf(value, known)
          : k === 'uri'
            ? { group: groupOf(value) }
            : k === 'emailaddress'
              ? (() => {
                  throw unresolvableEmail(value);
                })()
              : (() => {
                  throw new S3Error('InvalidArgument', `Invalid grantee type ${kind}`, { ArgumentName: GRANT_HEADER[permission], ArgumentValue: part.trim() });
                })();
      grants.push({ grantee, permission });
    }
  }
  return { owner, grants };
}

/** What the grants of `acl` let `who` do: does any grant give it `permission` (FULL_CONTROL gives all)? */
export function aclAllows(
  acl: Acl,
  /** The caller's account; null for an anonymous request. */
  who: string | null,
  permission: Permission,
  /** IgnorePublicAcls of the bucket's public access block: AllUsers and AuthenticatedUsers grants count for nothing. */
  ignorePublic = false,
): boolean {
  return acl.grants.some((g) => {
    if (g.permission !== permission && g.permission !== 'FULL_CONTROL') return false;
    if ('account' in g.grantee) return who !== null && g.grantee.account === who;
    if (ignorePublic) return false;
    if (g.grantee.group === 'AllUsers') return true;
    if (g.grantee.group === 'AuthenticatedUsers') return who !== null;
    return false; // LogDelivery: delivered by the gateway itself
  });
}

/** The stored form of a grant list (JSON). */
export function storedGrants(grants: Grant[]): string {
  return JSON.stringify(grants.map((g) => ('account' in g.grantee ? { id: g.grantee.account, p: g.permission } : { group: g.grantee.group, p: g.permission })));
}

/** Grants as storedGrants wrote them; a row that does not parse grants nothing beyond the owner (fails closed). */
export function parseStoredGrants(text: string, owner: string): Grant[] {
  try {
    const rows = JSON.parse(text) as { id?: unknown; group?: unknown; p?: unknown }[];
    const out: Grant[] = [];
    for (const r of rows) {
      if (!PERMISSIONS.includes(r.p as Permission)) continue;
      if (typeof r.id === 'string') out.push({ grantee: { account: r.id }, permission: r.p as Permission });
      else if (typeof r.group === 'string' && r.group in GROUP_URIS) out.push({ grantee: { group: r.group as Group }, permission: r.p as Permission });
    }
    return out;
  } catch {
    return privateAcl(owner).grants;
  }
}

/** A bucket's ACL from its row (absent: private to `owner`). */
export function bucketAcl(row: string | null, owner: string): Acl {
  return row === null ? privateAcl(owner) : { owner, grants: parseStoredGrants(row, owner) };
}

/** The row a bucket ACL stores: none when it is the owner's FULL_CONTROL alone. */
export function bucketAclRow(acl: Acl): string | null {
  return isPrivate(acl) && acl.grants.length === 1 ? null : storedGrants(acl.grants);
}

/** An object's ACL as its metadata keeps it (model/object-store.ts ObjectMetadata.acl). */
export interface StoredObjectAcl {
  owner: string;
  grants: string;
}

/** The object's ACL (absent: private to the bucket owner). */
export function objectAcl(stored: StoredObjectAcl | undefined, bucketOwner: string): Acl {
  return stored === undefined ? privateAcl(bucketOwner) : { owner: stored.owner, grants: parseStoredGrants(stored.grants, stored.owner) };
}

/** `metadata` with `acl` instead of its own (none: without one). */
export function withAcl<M extends { acl?: StoredObjectAcl }>(metadata: M, acl: StoredObjectAcl | undefined): M {
  const { acl: _old, ...rest } = metadata;
  return (acl === undefined ? rest : { ...rest, acl }) as M;
}

/** What an object's metadata keeps of `acl`: nothing when it is the bucket owner's FULL_CONTROL alone. */
export function storedObjectAcl(acl: Acl, bucketOwner: string): StoredObjectAcl | undefined {
  return acl.owner === bucketOwner && isPrivate(acl) && acl.grants.length === 1 ? undefined : { owner: acl.owner, grants: storedGrants(acl.grants) };
}

/** Whether a grant header's or document's grantee URI is public: re-exported for the gate's header check. */
export { isPublicGroup };

/** Grants equal as sets (for tests and for PutBucketOwnershipControls' check). */
export function sameGrants(a: Grant[], b: Grant[]): boolean {
  return a.length === b.length && a.every((g) => b.some((h) => h.permission === g.permission && sameGrantee(h.grantee, g.grantee)));
}
