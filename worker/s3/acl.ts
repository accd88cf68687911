/**
 * GetBucketAcl, PutBucketAcl, GetObjectAcl, PutObjectAcl (issue 43), and the ACL a write gives its
 * new object. What an ACL holds and lets in: model/acl.ts; who may call these: acl-access.ts and
 * the gate (policy-gate.ts).
 * On a bucket whose Object Ownership is BucketOwnerEnforced (the default, and every bucket created
 * before ACLs existed) ACLs are disabled, as on a new AWS bucket: the bucket owner owns every
 * object and has FULL_CONTROL, Get*Acl answer that one grant, and Put*Acl succeeds only when it asks
 * for exactly that (`private`, `bucket-owner-full-control`, the owner's FULL_CONTROL by header or
 * document); anything else is 400 AccessControlListNotSupported.
 * On a bucket with ACLs enabled (ObjectWriter, BucketOwnerPreferred, no ownership controls) the
 * ACLs are stored and shown as put: a canned ACL or grant headers (not both: InvalidRequest), or an
 * AccessControlPolicy document (with a header: UnexpectedContent). An object written by another
 * account is that account's (ObjectWriter; BucketOwnerPreferred when the write does not say
 * `bucket-owner-full-control`), its ACL private to it unless the write says otherwise; an
 * anonymous write's object is the bucket owner's (no object here belongs to no account).
 * A public ACL on a bucket whose public access block has BlockPublicAcls is 403 (headers: at the
 * gate; a document: here).
 * Spec: S3 API reference, GetBucketAcl, PutBucketAcl, GetObjectAcl, PutObjectAcl; S3 User Guide,
 * "Access control list (ACL) overview", "Controlling ownership of objects".
 */
import { bucketOwner as ownerOfRow, DEFAULT_ACCOUNT, STRANGER } from '../model/account.ts';
import {
  accountOf,
  aclFromHeaders,
  bucketAcl,
  bucketAclRow,
  GROUP_URIS,
  groupOf,
  isPrivate,
  isPublicAcl,
  objectAcl,
  ownershipOf,
  PERMISSIONS,
  privateAcl,
  storedObjectAcl,
  unresolvableEmail,
  type Acl,
  type Grant,
  type KnownAccount,
  type Permission,
  type StoredObjectAcl,
} from '../model/acl.ts';
import type { BucketSettings } from '../model/bucket-settings.ts';
import { S3Error } from '../model/errors.ts';
import { parseStoredPublicAccessBlock } from '../model/public-access-block.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { readVersionId, versionHeader } from './versioning.ts';
import { GRANT_HEADERS, knownAccounts, notSupported, ofBucketAccount } from './acl-headers.ts';
import { el, group, ownerXml, xmlDocument, xmlResponse } from './xml.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml } from './xml-parse.ts';

const XSI = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"';

function grantXml(g: Grant): string {
  const grantee =
    'account' in g.grantee
      ? `<Grantee ${XSI} xsi:type="CanonicalUser">${el('ID', g.grantee.account)}${el('DisplayName', g.grantee.account)}</Grantee>`
      : `<Grantee ${XSI} xsi:type="Group">${el('URI', GROUP_URIS[g.grantee.group])}</Grantee>`;
  return group('Grant', grantee, el('Permission', g.permission));
}

/** The AccessControlPolicy document of `acl`. */
export function aclDocument(acl: Acl): string {
  // Group grants first, then accounts' (each in the order put), as S3 lists a canned ACL's grants.
  const grants = [...acl.grants.filter((g) => 'group' in g.grantee), ...acl.grants.filter((g) => 'account' in g.grantee)];
  return xmlDocument('AccessControlPolicy', ownerXml('Owner', acl.owner), group('AccessControlList', ...grants.map(grantXml)));
}

/**
 * The ACL an AccessControlPolicy document states, for a bucket or object owned by `owner`. Its
 * Owner, when given, must be that owner (an ACL does not change hands: AccessDenied). A grantee is
 * an ID (an account here: InvalidArgument otherwise), a group URI, or an e-mail address
 * (UnresolvableGrantByEmailAddress); a permission S3 does not define is MalformedACLError.
 */
export function parseAclDocument(xml: string, owner: string, known: KnownAccount): Acl {
  const root = expectRoot(parseXml(xml), 'AccessControlPolicy');
  const ownerEl = childrenNamed(root, 'Owner')[0];
  const ownerId = ownerEl ? childText(ownerEl, 'ID')?.trim() : undefined;
  if (ownerId !== undefined && ownerId !== owner) throw new S3Error('AccessDenied');
  const list = childrenNamed(root, 'AccessControlList')[0];
  const grants: Grant[] = [];
  for (const grant of list ? childrenNamed(list, 'Grant') : []) {
    const grantee = childrenNamed(grant, 'Grantee')[0];
    const permission = childText(grant, 'Permission')?.trim() as Permission | undefined;
    if (!grantee || !permission || !PERMISSIONS.includes(permission)) throw new S3Error('MalformedACLError');
    const id = childText(grantee, 'ID')?.trim();
    const uri = childText(grantee, 'URI')?.trim();
    const email = childText(grantee, 'EmailAddress')?.trim();
    if (id !== undefined) grants.push({ grantee: accountOf(id, known), permission });
    else if (uri !== undefined) grants.push({ grantee: { group: groupOf(uri) }, permission });
    else if (email !== undefined) throw unresolvableEmail(email);
    else throw new S3Error('MalformedACLError');
  }
  return { owner, grants };
}

/**
 * The ACL a Put*Acl request asks for: its headers' or its document's (never both: UnexpectedContent;
 * neither: MalformedXML, as S3 answers). `owner`: the bucket's or object's owner, `bucketOwner` the bucket's.
 */
async function readAclRequest(s3: S3Context, owner: string, bucketOwner: string): Promise<Acl> {
  const xml = await readXmlBody(s3, { requireDigest: false });
  const byHeader = s3.headers.has('x-amz-acl') || GRANT_HEADERS.some((h) => s3.headers.has(h));
  const known = knownAccounts(s3.settings);
  if (xml.trim() === '') {
    if (!byHeader) throw malformedXml('an AccessControlPolicy document or an x-amz-acl header');
    return aclFromHeaders(s3.headers, owner, bucketOwner, known)!;
  }
  if (byHeader) throw new S3Error('UnexpectedContent', 'This request does not support content when an ACL header is given.');
  return parseAclDocument(xml, owner, known);
}

/**
 * Refuses what a Put*Acl may not store: a public ACL under BlockPublicAcls (403); where ACLs are
 * disabled, anything but the bucket owner's own request restating what the bucket has (the
 * owner's FULL_CONTROL alone). AWS refuses that restatement too ("Requests to set ACLs or update
 * ACLs fail"); it is accepted here, a no-op, because s3cmd's cp, mv and modify re-apply the
 * source's ACL after every copy (s3tools/s3cmd#1304: they fail on AWS). Another account's
 * Put*Acl is refused as on AWS.
 */
function assertStorable(acl: Acl, settings: BucketSettings, aclsEnabled: boolean, byBucketOwner: boolean): void {
  if (isPublicAcl(acl) && parseStoredPublicAccessBlock(settings.rows['public-access-block'])?.blockPublicAcls) throw new S3Error('AccessDenied');
  // Revoking the owner's own grant is not an ACL an owner-enforced bucket takes either.
  if (!aclsEnabled && (!byBucketOwner || !isPrivate(acl) || acl.grants.length === 0)) throw notSupported();
}

export async function GetBucketAcl(s3: S3Context): Promise<Response> {
  const settings = await s3.config.fetchBucketSettings(s3.bucket!); // NoSuchBucket
  const owner = ownerOfRow(settings.rows.owner);
  const acl = ownershipOf(settings.rows.ownership).aclsEnabled ? bucketAcl(settings.rows.acl, owner) : privateAcl(owner);
  return xmlResponse(aclDocument(acl));
}

export async function PutBucketAcl(s3: S3Context): Promise<Response> {
  const settings = await s3.config.fetchBucketSettings(s3.bucket!); // NoSuchBucket first
  const owner = ownerOfRow(settings.rows.owner);
  const acl = await readAclRequest(s3, owner, owner);
  const { aclsEnabled } = ownershipOf(settings.rows.ownership);
  assertStorable(acl, settings, aclsEnabled, ofBucketAccount(s3.auth.access?.account, owner));
  // The ownership is checked again where the ACL is stored (a change racing this one cannot leave grants on an enforced bucket).
  if (aclsEnabled) await s3.config.putBucketAccess(s3.bucket!, { acl: bucketAclRow(acl) });
  return new Response(null);
}

/** The addressed bucket's settings as the gate checked them (this isolate's view without a gate). */
const rowsOf = (s3: S3Context): BucketSettings['rows'] => s3.bucketRows ?? s3.config.bucketSettings(s3.bucket!).rows;

/** The object's head (NoSuchKey, NoSuchVersion): its version id and stored ACL. */
async function headFor(s3: S3Context): Promise<{ versionId: string | undefined; acl: StoredObjectAcl | undefined }> {
  const versionId = readVersionId(s3.query);
  const head = await s3.store.headObject(s3.bucket!, s3.key!, { conditions: {}, ...(versionId === undefined ? {} : { versionId }) });
  return { versionId: head.versionId, acl: head.metadata.acl };
}

export async function GetObjectAcl(s3: S3Context): Promise<Response> {
  const { versionId, acl } = await headFor(s3);
  const owner = s3.bucketOwner ?? DEFAULT_ACCOUNT;
  const enabled = ownershipOf(rowsOf(s3).ownership).aclsEnabled;
  return xmlResponse(aclDocument(enabled ? objectAcl(acl, owner) : privateAcl(owner)), versionHeader(versionId));
}

export async function PutObjectAcl(s3: S3Context): Promise<Response> {
  const { versionId, acl: stored } = await headFor(s3);
  const bucketOwner = s3.bucketOwner ?? DEFAULT_ACCOUNT;
  const settings = { stamp: '', rows: rowsOf(s3) };
  const { aclsEnabled } = ownershipOf(settings.rows.ownership);
  const current = aclsEnabled ? objectAcl(stored, bucketOwner) : privateAcl(bucketOwner);
  const acl = await readAclRequest(s3, current.owner, bucketOwner);
  assertStorable(acl, settings, aclsEnabled, ofBucketAccount(s3.auth.access?.account, bucketOwner));
  if (aclsEnabled) await s3.store.putObjectAcl(s3.bucket!, s3.key!, storedObjectAcl(acl, bucketOwner), readVersionId(s3.query));
  return new Response(null, { headers: versionHeader(versionId) });
}

/**
 * The ACL a write (PutObject, CopyObject, CreateMultipartUpload, a POST form) gives its new
 * object, as its metadata keeps it (undefined: the bucket owner's alone). `rows`: the bucket's
 * settings as the gate checked them; `writer`: the signer's account (null or STRANGER: the bucket
 * owner's). The headers were checked at the gate (acl-headers.ts).
 */
export function newObjectAcl(
  headers: Headers,
  rows: BucketSettings['rows'],
  bucketOwner: string,
  writer: string | null,
  known: KnownAccount,
): StoredObjectAcl | undefined {
  const { setting, aclsEnabled } = ownershipOf(rows.ownership);
  if (!aclsEnabled) return undefined;
  const author = writer === null || writer === STRANGER ? bucketOwner : writer;
  const owner = setting === 'BucketOwnerPreferred' && headers.get('x-amz-acl')?.trim() === 'bucket-owner-full-control' ? bucketOwner : author;
  return storedObjectAcl(aclFromHeaders(headers, owner, bucketOwner, known) ?? privateAcl(owner), bucketOwner);
}

/** newObjectAcl for a handler's request. */
export function requestObjectAcl(s3: S3Context): StoredObjectAcl | undefined {
  return newObjectAcl(s3.headers, rowsOf(s3), s3.bucketOwner ?? DEFAULT_ACCOUNT, s3.auth.access?.account ?? null, knownAccounts(s3.settings));
}
