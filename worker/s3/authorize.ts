/**
 * Authorization (issue 21): after the gate has said WHO signed a request and operations.ts WHAT
 * it asks, this says whether the signer's scope (model/access.ts) allows it, before any handler
 * runs, so a refused request reads no body and stores nothing. One row per S3 operation:
 * the action it needs and on what (an object key, the whole bucket, a listing prefix). The copy
 * source of CopyObject and UploadPartCopy needs `read` on its own bucket and key; a conditional
 * DeleteObject (delete-conditions.ts) needs `read` on its key as well; a write with
 * x-amz-object-lock-* headers needs `retention` or `legal-hold` on its key too (lockHeaderActions).
 * Checked elsewhere, because they are not known here: each entry of DeleteObjects
 * (delete-objects.ts: an entry outside the scope is answered AccessDenied in the result, as S3
 * does), the buckets ListBuckets shows (buckets.ts), the operator routes (admin.ts, operator.ts).
 * Refusals are AccessDenied with AWS's message; they never say what the scope is.
 */
import type { Access, Action } from '../model/access.ts';
import { STRANGER } from '../model/account.ts';
import { S3Error } from '../model/errors.ts';
import { readCopySource } from './copy.ts';
import { hasDeleteConditionHeaders } from './delete-conditions.ts';
import { UNCONFIGURED_READS, type UnconfiguredRead } from './bucket-config-reads.ts';
import type { S3Operation } from './operations.ts';
import type { S3Address } from './request.ts';

/** object: on the request's key; bucket: on the whole bucket; some: on any part of the bucket; listing: under the `prefix` parameter. */
type Need = { action: Action; on: 'object' | 'bucket' | 'some' | 'listing' } | 'any-signer';

const NEEDS: Record<S3Operation, Need> = {
  ListBuckets: 'any-signer', // filtered by what the key sees (buckets.ts)
  CreateBucket: { action: 'write', on: 'bucket' },
  DeleteBucket: { action: 'delete', on: 'bucket' },
  PutBucketCors: { action: 'write', on: 'bucket' },
  DeleteBucketCors: { action: 'write', on: 'bucket' },
  HeadBucket: { action: 'list', on: 'some' },
  GetBucketLocation: { action: 'list', on: 'some' },
  GetBucketVersioning: { action: 'list', on: 'some' },
  PutBucketVersioning: { action: 'write', on: 'bucket' },
  ListObjectVersions: { action: 'list', on: 'listing' },
  GetBucketCors: { action: 'list', on: 'some' },
  GetBucketEncryption: { action: 'list', on: 'some' },
  PutBucketEncryption: { action: 'write', on: 'bucket' },
  DeleteBucketEncryption: { action: 'write', on: 'bucket' },
  ListObjects: { action: 'list', on: 'listing' },
  ListObjectsV2: { action: 'list', on: 'listing' },
  ListMultipartUploads: { action: 'list', on: 'listing' },
  GetObject: { action: 'read', on: 'object' },
  HeadObject: { action: 'read', on: 'object' },
  PutObject: { action: 'write', on: 'object' },
  CopyObject: { action: 'write', on: 'object' },
  DeleteObject: { action: 'delete', on: 'object' },
  DeleteObjects: { action: 'delete', on: 'some' }, // and each entry (delete-objects.ts)
  CreateMultipartUpload: { action: 'write', on: 'object' },
  UploadPart: { action: 'write', on: 'object' },
  UploadPartCopy: { action: 'write', on: 'object' },
  CompleteMultipartUpload: { action: 'write', on: 'object' },
  AbortMultipartUpload: { action: 'write', on: 'object' },
  ListParts: { action: 'write', on: 'object' },
  // Reading a bucket's settings is like reading its CORS rules; changing them needs write on it all.
  ...(Object.fromEntries(Object.keys(UNCONFIGURED_READS).map((op) => [op, { action: 'list', on: 'some' }])) as Record<UnconfiguredRead, Need>),
  GetBucketAcl: { action: 'list', on: 'some' },
  PutBucketAcl: { action: 'write', on: 'bucket' },
  GetBucketTagging: { action: 'list', on: 'some' },
  PutBucketTagging: { action: 'write', on: 'bucket' },
  DeleteBucketTagging: { action: 'write', on: 'bucket' },
  GetBucketLifecycleConfiguration: { action: 'list', on: 'some' },
  // Rules that expire objects delete them: setting them needs delete on the whole bucket.
  PutBucketLifecycleConfiguration: { action: 'delete', on: 'bucket' },
  DeleteBucketLifecycle: { action: 'write', on: 'bucket' },
  GetObjectAcl: { action: 'read', on: 'object' },
  PutObjectAcl: { action: 'write', on: 'object' },
  GetObjectTagging: { action: 'read', on: 'object' },
  PutObjectTagging: { action: 'write', on: 'object' },
  DeleteObjectTagging: { action: 'write', on: 'object' },
  GetObjectAttributes: { action: 'read', on: 'object' },
  PutBucketOwnershipControls: { action: 'write', on: 'bucket' },
  GetBucketOwnershipControls: { action: 'list', on: 'some' },
  DeleteBucketOwnershipControls: { action: 'write', on: 'bucket' },
  // A policy only denies (policy-gate.ts): managing it is like managing the bucket's other settings.
  GetBucketPolicy: { action: 'list', on: 'some' },
  GetBucketPolicyStatus: { action: 'list', on: 'some' },
  GetPublicAccessBlock: { action: 'list', on: 'some' },
  PutPublicAccessBlock: { action: 'write', on: 'bucket' },
  DeletePublicAccessBlock: { action: 'write', on: 'bucket' },
  PutBucketPolicy: { action: 'write', on: 'bucket' },
  GetBucketLogging: { action: 'list', on: 'some' },
  PutBucketLogging: { action: 'write', on: 'bucket' },
  GetBucketNotificationConfiguration: { action: 'list', on: 'some' },
  PutBucketNotificationConfiguration: { action: 'write', on: 'bucket' },
  DeleteBucketPolicy: { action: 'write', on: 'bucket' },
  GetObjectLockConfiguration: { action: 'list', on: 'some' },
  PutObjectLockConfiguration: { action: 'write', on: 'bucket' },
  GetObjectRetention: { action: 'read', on: 'object' },
  PutObjectRetention: { action: 'retention', on: 'object' }, // a shortening or removal also needs bypass (object-lock.ts)
  GetObjectLegalHold: { action: 'read', on: 'object' },
  PutObjectLegalHold: { action: 'legal-hold', on: 'object' },
  RestoreObject: { action: 'write', on: 'object' },
};

export function accessDenied(): S3Error {
  return new S3Error('AccessDenied');
}

/** Writes whose x-amz-object-lock-* headers set a version's lock. */
const LOCKING_WRITES: ReadonlySet<S3Operation> = new Set(['PutObject', 'CopyObject', 'CreateMultipartUpload']);

/**
 * The lock actions a write's headers ask for (issue 37): a retention (mode, retain-until date)
 * needs `retention`, a legal hold `legal-hold`, as AWS's s3:PutObjectRetention and
 * s3:PutObjectLegalHold. A header present at all counts, whatever its value (the handler refuses a
 * bad one); `OFF` too, since on a copy or an upload it still decides the new version's hold.
 */
export function lockHeaderActions(op: S3Operation, headers: Headers): ('retention' | 'legal-hold')[] {
  if (!LOCKING_WRITES.has(op)) return [];
  const out: ('retention' | 'legal-hold')[] = [];
  if (headers.has('x-amz-object-lock-mode') || headers.has('x-amz-object-lock-retain-until-date')) out.push('retention');
  if (headers.has('x-amz-object-lock-legal-hold')) out.push('legal-hold');
  return out;
}

/** Throws AccessDenied unless `access` allows `op` on `addr` (and its copy source, from `headers`). */
export function authorize(op: S3Operation, addr: S3Address, headers: Headers, access: Access): void {
  // An anonymous caller let in by bucket policies (model/account.ts STRANGER) has no buckets of its own to list or make.
  if (access.account === STRANGER && (op === 'ListBuckets' || op === 'CreateBucket')) throw accessDenied();
  const need = NEEDS[op];
  if (need === 'any-signer') return;
  const bucket = addr.bucket!;
  const { action, on } = need;
  const allowed =
    on === 'object'
      ? access.allowsObject(action, bucket, addr.key!)
      : on === 'bucket'
        ? access.allowsBucket(action, bucket)
        : on === 'some'
          ? access.allowsSomeOf(action, bucket)
          : access.allowsListing(bucket, addr.query.get('prefix') ?? '');
  if (!allowed) throw accessDenied();
  for (const lockAction of lockHeaderActions(op, headers)) if (!access.allowsObject(lockAction, bucket, addr.key!)) throw accessDenied();
  // A conditional delete's answer tells the object's ETag, time or size (delete-conditions.ts).
  if (op === 'DeleteObject' && hasDeleteConditionHeaders(headers) && !access.allowsObject('read', bucket, addr.key!)) throw accessDenied();
  if (op === 'CopyObject' || op === 'UploadPartCopy') {
    const source = readCopySource(headers);
    if (!access.allowsObject('read', source.bucket, source.key)) throw accessDenied();
  }
}
