/**
 * PutBucketOwnershipControls, GetBucketOwnershipControls, DeleteBucketOwnershipControls (issue
 * 43): a bucket's Object Ownership (model/acl.ts), stored in its state row 'ownership', a
 * request-path setting (model/bucket-settings.ts), so every isolate's gate sees a change on its
 * next request.
 * - BucketOwnerEnforced (absent row: every bucket created before, and new ones by default:
 *   config `s3.defaultObjectOwnership`): ACLs disabled. Put while the bucket's ACL grants more
 *   than the owner's FULL_CONTROL: 400 InvalidBucketAclWithObjectOwnership, as S3 (put `private`
 *   first); object ACLs stay stored and count for nothing while it holds.
 * - BucketOwnerPreferred, ObjectWriter: ACLs enabled (acl.ts says who owns a new object).
 * - Delete: no controls, as S3 leaves the bucket: ACLs enabled, objects their writers' (as
 *   ObjectWriter); Get then answers 404 OwnershipControlsNotFoundError. 204, also when repeated.
 * Spec: S3 API reference, PutBucketOwnershipControls (an `<OwnershipControls><Rule>
 * <ObjectOwnership>` document with exactly one rule), GetBucketOwnershipControls,
 * DeleteBucketOwnershipControls; "Controlling ownership of objects".
 */
import { NO_CONTROLS, OWNERSHIP_SETTINGS, ownershipOf, ownershipRow, type ObjectOwnership } from '../model/acl.ts';
import { S3Error } from '../model/errors.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml } from './xml-parse.ts';

export async function PutBucketOwnershipControls(s3: S3Context): Promise<Response> {
  await s3.store.headBucket(s3.bucket!); // NoSuchBucket first
  const xml = await readXmlBody(s3, { requireDigest: false });
  const rules = childrenNamed(expectRoot(parseXml(xml), 'OwnershipControls'), 'Rule');
  if (rules.length !== 1) throw malformedXml('an OwnershipControls document with exactly one Rule');
  const setting = childText(rules[0]!, 'ObjectOwnership')?.trim();
  if (!setting || !(OWNERSHIP_SETTINGS as readonly string[]).includes(setting))
    throw malformedXml('ObjectOwnership BucketOwnerEnforced, BucketOwnerPreferred or ObjectWriter');
  await s3.config.putBucketAccess(s3.bucket!, { ownership: ownershipRow(setting as ObjectOwnership) });
  return new Response(null);
}

export async function GetBucketOwnershipControls(s3: S3Context): Promise<Response> {
  const { setting } = ownershipOf((await s3.config.fetchBucketSettings(s3.bucket!)).rows.ownership);
  if (setting === null) throw new S3Error('OwnershipControlsNotFoundError', undefined, { BucketName: s3.bucket! });
  return xmlResponse(xmlDocument('OwnershipControls', group('Rule', el('ObjectOwnership', setting))));
}

export async function DeleteBucketOwnershipControls(s3: S3Context): Promise<Response> {
  await s3.config.putBucketAccess(s3.bucket!, { ownership: NO_CONTROLS });
  return new Response(null, { status: 204 });
}
