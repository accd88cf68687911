/**
 * Bucket handlers: ListBuckets, CreateBucket, HeadBucket (with RGW's read-stats: rgw-read-stats.ts),
 * DeleteBucket, GetBucketLocation.
 * (GetBucketVersioning is in versioning.ts.)
 * Spec: S3 API reference of each; bucket naming rules in model/bucket-name.ts. A LocationConstraint
 * other than the configured region is refused (IllegalLocationConstraintException, or
 * InvalidLocationConstraint when it names no Region: assertLocationConstraint). ListBuckets pages by name
 * (max-buckets, continuation-token = last name returned), filters by prefix and bucket-region,
 * and shows a key only the buckets its scope names (model/access.ts).
 * Re-creating one's own bucket is 200 in us-east-1 (AWS's legacy behaviour there), 409
 * BucketAlreadyOwnedByYou in any other region; another account's is 409 BucketAlreadyExists
 * (model/account.ts). ListBuckets shows only the signer's account's buckets. Known gap: one
 * region per gateway.
 */
import { aclFromHeaders, bucketAclRow, isPrivate, OWNERSHIP_SETTINGS, ownershipOf, ownershipRow, type ObjectOwnership } from '../model/acl.ts';
import { knownAccounts } from './acl-headers.ts';
import { ANONYMOUS_ACCESS } from '../model/access.ts';
import { DEFAULT_ACCOUNT } from '../model/account.ts';
import { storedOwner } from './policy-gate.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { isValidBucketName } from '../model/bucket-name.ts';
import { S3Error } from '../model/errors.ts';
import { intParam } from './listing.ts';
import { readBucketLockEnabled } from './object-lock.ts';
import { assertMayReadStats, readStatsHeaders, wantsReadStats } from './rgw-read-stats.ts';
import { el, group, ownerXml, xmlDocument, xmlResponse } from './xml.ts';
import { childText, expectRoot, parseXml } from './xml-parse.ts';

export async function ListBuckets(s3: S3Context): Promise<Response> {
  const prefix = s3.query.get('prefix') ?? '';
  const after = s3.query.get('continuation-token') ?? '';
  const region = s3.query.get('bucket-region');
  const max = intParam(s3.query, 'max-buckets', 10_000, 10_000);
  const access = s3.auth.access ?? ANONYMOUS_ACCESS;
  const candidates = (await s3.store.listBuckets()).filter(
    (b) => access.seesBucket(b.name) && b.name.startsWith(prefix) && b.name > after && (!region || b.region === region),
  );
  const all = s3.settings.otherAccounts ? await ownedBy(s3, access.account, candidates, max + 1) : candidates;
  const page = all.slice(0, max);
  const truncated = all.length > page.length;
  const buckets = page.map((b) => group('Bucket', el('Name', b.name), el('CreationDate', b.creationDate), el('BucketRegion', b.region)));
  return xmlResponse(
    xmlDocument(
      'ListAllMyBucketsResult',
      group('Buckets', ...buckets),
      ownerXml('Owner', access.account ?? DEFAULT_ACCOUNT),
      truncated ? el('ContinuationToken', page[page.length - 1].name) : '',
      s3.query.has('prefix') ? el('Prefix', prefix) : '',
    ),
  );
}

export async function CreateBucket(s3: S3Context): Promise<Response> {
  const bucket = s3.bucket!;
  if (!isValidBucketName(bucket)) throw new S3Error('InvalidBucketName', undefined, { BucketName: bucket });
  const xml = await readXmlBody(s3, { requireDigest: false });
  if (xml.trim() !== '') {
    const constraint = childText(expectRoot(parseXml(xml), 'CreateBucketConfiguration'), 'LocationConstraint')?.trim() ?? '';
    assertLocationConstraint(constraint, s3.settings.region);
  }
  const account = s3.auth.access?.account ?? DEFAULT_ACCOUNT;
  const access = newBucketAccess(s3, account);
  try {
    await s3.store.createBucket(bucket, {
      region: s3.settings.region,
      objectLock: readBucketLockEnabled(s3.headers),
      ...(account === DEFAULT_ACCOUNT ? {} : { owner: account }),
      ...access,
    });
  } catch (err) {
    if (!(err instanceof S3Error && err.code === 'BucketAlreadyOwnedByYou')) throw err;
    // Taken: by another account, BucketAlreadyExists (the name says nothing more about its owner).
    const owner = await storedOwner(s3.config, bucket).catch((e) => {
      // Deleted since (or still being created): AWS's answer to a create racing another operation.
      throw e instanceof S3Error && e.code === 'NoSuchBucket' ? new S3Error('OperationAborted') : e;
    });
    if (owner !== account) throw new S3Error('BucketAlreadyExists', undefined, { BucketName: bucket });
    // us-east-1 answers 200 to re-creating one's own bucket (legacy behaviour AWS keeps there).
    if (s3.settings.region !== 'us-east-1') throw err;
  }
  return new Response(null, { headers: { Location: `/${bucket}` } });
}

/**
 * The Object Ownership and ACL rows a CreateBucket asks for (model/acl.ts): `x-amz-object-ownership`
 * (else config `s3.defaultObjectOwnership`) and the ACL headers. An ACL beyond the owner's on a
 * bucket created BucketOwnerEnforced is 400 InvalidBucketAclWithObjectOwnership, as S3 answers
 * (a new AWS bucket refuses `public-read` unless the request also asks for ObjectWriter or
 * BucketOwnerPreferred); an ownership S3 does not define is InvalidArgument.
 */
function newBucketAccess(s3: S3Context, account: string): { ownership: string | null; acl: string | null } {
  const asked = s3.headers.get('x-amz-object-ownership')?.trim() ?? s3.settings.defaultObjectOwnership ?? 'BucketOwnerEnforced';
  if (!(OWNERSHIP_SETTINGS as readonly string[]).includes(asked))
    throw new S3Error('InvalidArgument', `Invalid x-amz-object-ownership: ${asked}`, { ArgumentName: 'x-amz-object-ownership', ArgumentValue: asked });
  const ownership = ownershipRow(asked as ObjectOwnership);
  const acl = aclFromHeaders(s3.headers, account, account, knownAccounts(s3.settings));
  if (acl === null) return { ownership, acl: null };
  if (!ownershipOf(ownership).aclsEnabled) {
    if (!isPrivate(acl)) throw new S3Error('InvalidBucketAclWithObjectOwnership');
    return { ownership, acl: null };
  }
  return { ownership, acl: bucketAclRow(acl) };
}

/**
 * The first `limit` of `buckets` (in order) that `account` owns: one stored-settings read per
 * bucket looked at, a few at a time (only on a gateway with more than one account; a bucket
 * deleted meanwhile is left out). Anonymous callers (null) see the default account's.
 */
async function ownedBy<B extends { name: string }>(s3: S3Context, account: string | null, buckets: B[], limit: number): Promise<B[]> {
  const want = account ?? DEFAULT_ACCOUNT;
  const out: B[] = [];
  const AT_ONCE = 8;
  for (let i = 0; i < buckets.length && out.length < limit; i += AT_ONCE) {
    const batch = buckets.slice(i, i + AT_ONCE);
    const owners = await Promise.all(
      batch.map((b) =>
        storedOwner(s3.config, b.name).catch((err) => {
          if (err instanceof S3Error && err.code === 'NoSuchBucket') return null;
          throw err;
        }),
      ),
    );
    batch.forEach((b, j) => owners[j] === want && out.push(b));
  }
  return out.slice(0, limit);
}

/** A Region's name as AWS spells them (us-east-1, ap-southeast-2, us-gov-west-1, ...) or the legacy EU. */
const REGION_NAME = /^(?:[a-z]{2}(?:-[a-z]+)+-\d{1,2}|EU)$/;

/**
 * CreateBucket's LocationConstraint against the one region this gateway serves, with AWS's codes:
 * another Region's name is IllegalLocationConstraintException (as a regional endpoint answers a
 * bucket meant for elsewhere), a value that names no Region InvalidLocationConstraint. An empty
 * constraint is us-east-1's; a request without a body is accepted in any region (lenient where
 * AWS's regional endpoints refuse it: clients that never send one keep working).
 */
function assertLocationConstraint(constraint: string, region: string): void {
  if (constraint === region || (constraint === '' && region === 'us-east-1')) return;
  if (constraint === '' || REGION_NAME.test(constraint)) {
    const named = constraint === '' ? 'unspecified' : constraint;
    throw new S3Error(
      'IllegalLocationConstraintException',
      `The ${named} location constraint is incompatible for the region specific endpoint this request was sent to (this gateway serves ${region}).`,
    );
  }
  throw new S3Error('InvalidLocationConstraint', undefined, { LocationConstraint: constraint });
}

export async function HeadBucket(s3: S3Context): Promise<Response> {
  const info = await s3.store.headBucket(s3.bucket!);
  let stats = {};
  if (wantsReadStats(s3.query)) {
    assertMayReadStats(s3);
    stats = readStatsHeaders(await s3.store.bucketStats(s3.bucket!));
  }
  return new Response(null, { headers: { 'x-amz-bucket-region': info.region, ...stats } });
}

export async function DeleteBucket(s3: S3Context): Promise<Response> {
  await s3.store.deleteBucket(s3.bucket!);
  return new Response(null, { status: 204 });
}

export async function GetBucketLocation(s3: S3Context): Promise<Response> {
  const info = await s3.store.headBucket(s3.bucket!);
  const region = info.region === 'us-east-1' ? '' : info.region;
  return xmlResponse(
    `<?xml version="1.0" encoding="UTF-8"?>\n<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${region}</LocationConstraint>`,
  );
}
