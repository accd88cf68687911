/**
 * ACLs as S3 does them on a bucket whose Object Ownership is "bucket owner enforced" (the
 * default for new AWS buckets, and the only setting here): ACLs are disabled, the bucket owner
 * (the gateway's one account) owns every object and has FULL_CONTROL, and nothing else can be
 * granted. GetBucketAcl / GetObjectAcl return that one grant. PutBucketAcl / PutObjectAcl, and
 * `x-amz-acl` on any request, succeed when they ask for exactly that: the canned ACLs `private`
 * and `bucket-owner-full-control`, `x-amz-grant-full-control` naming only the owner, or an
 * AccessControlPolicy document of one or more grants, each FULL_CONTROL to the owner. Anything else
 * (public-read, authenticated-read, log-delivery-write, a grant to another account or group) is
 * 400 AccessControlListNotSupported, as S3 answers it.
 * Spec: S3 "Controlling ownership of objects and disabling ACLs for your bucket", GetBucketAcl,
 * PutBucketAcl, GetObjectAcl, PutObjectAcl.
 */
import { S3Error } from '../model/errors.ts';
import { isPublicGroup, parseStoredPublicAccessBlock } from '../model/public-access-block.ts';
import { accessDenied } from './authorize.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { readVersionId, versionHeader } from './versioning.ts';
import { GRANT_HEADERS, notSupported } from './acl-headers.ts';
import { el, group, ownerXml, xmlDocument, xmlResponse } from './xml.ts';
import { DEFAULT_ACCOUNT } from '../model/account.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml } from './xml-parse.ts';

/** The one ACL a bucket or object has here: its bucket owner's FULL_CONTROL (model/account.ts). */
function aclDocument(owner: string): string {
  const grantee = `<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">${el('ID', owner)}${el('DisplayName', owner)}</Grantee>`;
  return xmlDocument('AccessControlPolicy', ownerXml('Owner', owner), group('AccessControlList', group('Grant', grantee, el('Permission', 'FULL_CONTROL'))));
}

/** A PutBucketAcl / PutObjectAcl request: the headers were checked before the handler (app.ts); a
 *  body must grant FULL_CONTROL to the owner only (one granting to a public group is 403 when the
 *  bucket's public access block has BlockPublicAcls). Neither header nor body is MalformedXML, as S3 answers. */
async function readAclRequest(s3: S3Context): Promise<void> {
  const xml = await readXmlBody(s3, { requireDigest: false });
  const byHeader = s3.headers.has('x-amz-acl') || GRANT_HEADERS.some((h) => s3.headers.has(h));
  if (xml.trim() === '') {
    if (!byHeader) throw malformedXml('an AccessControlPolicy document or an x-amz-acl header');
    return;
  }
  if (byHeader) throw new S3Error('UnexpectedContent', 'This request does not support content when an ACL header is given.');
  const root = expectRoot(parseXml(xml), 'AccessControlPolicy');
  const list = childrenNamed(root, 'AccessControlList')[0];
  const grants = list ? childrenNamed(list, 'Grant') : [];
  if (grants.length === 0) throw notSupported(); // revoking the owner's own grant is not an ACL S3 allows here either
  const publicGrant = grants.some((g) => {
    const grantee = childrenNamed(g, 'Grantee')[0];
    const uri = grantee ? childText(grantee, 'URI') : undefined;
    return uri !== undefined && isPublicGroup(uri);
  });
  // A public ACL on a bucket whose public access block has BlockPublicAcls: 403, as S3 answers (one call, for such a body only).
  if (publicGrant && parseStoredPublicAccessBlock((await s3.config.fetchBucketSettings(s3.bucket!)).rows['public-access-block'])?.blockPublicAcls)
    throw accessDenied();
  for (const grant of grants) {
    const grantee = childrenNamed(grant, 'Grantee')[0];
    const id = grantee ? childText(grantee, 'ID')?.trim() : undefined;
    if (id !== (s3.bucketOwner ?? DEFAULT_ACCOUNT) || childText(grant, 'Permission')?.trim() !== 'FULL_CONTROL') throw notSupported();
  }
}

export async function GetBucketAcl(s3: S3Context): Promise<Response> {
  await s3.store.headBucket(s3.bucket!);
  return xmlResponse(aclDocument(s3.bucketOwner ?? DEFAULT_ACCOUNT));
}

export async function PutBucketAcl(s3: S3Context): Promise<Response> {
  await s3.store.headBucket(s3.bucket!);
  await readAclRequest(s3);
  return new Response(null);
}

/** The object (or the version named) must exist: NoSuchKey, NoSuchVersion. */
async function headFor(s3: S3Context): Promise<string | undefined> {
  const versionId = readVersionId(s3.query);
  return (await s3.store.headObject(s3.bucket!, s3.key!, { conditions: {}, ...(versionId === undefined ? {} : { versionId }) })).versionId;
}

export async function GetObjectAcl(s3: S3Context): Promise<Response> {
  return xmlResponse(aclDocument(s3.bucketOwner ?? DEFAULT_ACCOUNT), versionHeader(await headFor(s3)));
}

export async function PutObjectAcl(s3: S3Context): Promise<Response> {
  await headFor(s3);
  await readAclRequest(s3);
  return new Response(null);
}
