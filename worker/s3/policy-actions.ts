/**
 * The IAM action (or actions) each S3 operation is evaluated as against a bucket policy, from the
 * S3 API reference's "Permissions" section of each operation and the Service Authorization
 * Reference. A read or delete naming `versionId` is evaluated as the Version action too
 * (s3:GetObjectVersion, s3:DeleteObjectVersion), as AWS does. null: not evaluated against a
 * bucket policy (ListBuckets has no bucket; CreateBucket has no policy yet; the policy operations
 * themselves: policy-gate.ts explains).
 */
import type { S3Operation } from './operations.ts';

const ACTIONS: Record<S3Operation, string | readonly string[] | null> = {
  ListBuckets: null,
  CreateBucket: null,
  GetBucketPolicy: null,
  PutBucketPolicy: null,
  DeleteBucketPolicy: null,
  DeleteBucket: 's3:DeleteBucket',
  HeadBucket: 's3:ListBucket',
  GetBucketLocation: 's3:GetBucketLocation',
  GetBucketVersioning: 's3:GetBucketVersioning',
  PutBucketVersioning: 's3:PutBucketVersioning',
  ListObjectVersions: 's3:ListBucketVersions',
  GetBucketCors: 's3:GetBucketCORS',
  PutBucketCors: 's3:PutBucketCORS',
  DeleteBucketCors: 's3:PutBucketCORS',
  GetBucketEncryption: 's3:GetEncryptionConfiguration',
  PutBucketEncryption: 's3:PutEncryptionConfiguration',
  DeleteBucketEncryption: 's3:PutEncryptionConfiguration',
  ListObjects: 's3:ListBucket',
  ListObjectsV2: 's3:ListBucket',
  ListMultipartUploads: 's3:ListBucketMultipartUploads',
  GetObject: 's3:GetObject',
  HeadObject: 's3:GetObject',
  PutObject: 's3:PutObject',
  CopyObject: 's3:PutObject', // and s3:GetObject on the source (policy-gate.ts)
  DeleteObject: 's3:DeleteObject',
  DeleteObjects: 's3:DeleteObject', // entry by entry (delete-objects.ts)
  CreateMultipartUpload: 's3:PutObject',
  UploadPart: 's3:PutObject',
  UploadPartCopy: 's3:PutObject', // and s3:GetObject on the source
  CompleteMultipartUpload: 's3:PutObject',
  AbortMultipartUpload: 's3:AbortMultipartUpload',
  ListParts: 's3:ListMultipartUploadParts',
  GetBucketAcl: 's3:GetBucketAcl',
  PutBucketAcl: 's3:PutBucketAcl',
  GetObjectAcl: 's3:GetObjectAcl',
  PutObjectAcl: 's3:PutObjectAcl',
  GetBucketTagging: 's3:GetBucketTagging',
  PutBucketTagging: 's3:PutBucketTagging',
  DeleteBucketTagging: 's3:PutBucketTagging',
  GetBucketLifecycleConfiguration: 's3:GetLifecycleConfiguration',
  PutBucketLifecycleConfiguration: 's3:PutLifecycleConfiguration',
  DeleteBucketLifecycle: 's3:PutLifecycleConfiguration',
  GetObjectTagging: 's3:GetObjectTagging',
  PutObjectTagging: 's3:PutObjectTagging',
  DeleteObjectTagging: 's3:DeleteObjectTagging',
  GetObjectAttributes: ['s3:GetObjectAttributes', 's3:GetObject'],
  PutBucketOwnershipControls: 's3:PutBucketOwnershipControls',
  DeleteBucketOwnershipControls: 's3:PutBucketOwnershipControls', // as AWS: no action of its own
  GetObjectLockConfiguration: 's3:GetBucketObjectLockConfiguration',
  PutObjectLockConfiguration: 's3:PutBucketObjectLockConfiguration',
  GetObjectRetention: 's3:GetObjectRetention',
  PutObjectRetention: 's3:PutObjectRetention',
  GetObjectLegalHold: 's3:GetObjectLegalHold',
  PutObjectLegalHold: 's3:PutObjectLegalHold',
  RestoreObject: 's3:RestoreObject',
  GetBucketPolicyStatus: 's3:GetBucketPolicyStatus',
  GetBucketWebsite: 's3:GetBucketWebsite',
  GetBucketReplication: 's3:GetReplicationConfiguration',
  GetPublicAccessBlock: 's3:GetBucketPublicAccessBlock',
  PutPublicAccessBlock: 's3:PutBucketPublicAccessBlock',
  DeletePublicAccessBlock: 's3:PutBucketPublicAccessBlock', // as AWS: no action of its own
  GetBucketLogging: 's3:GetBucketLogging',
  PutBucketLogging: 's3:PutBucketLogging',
  PutBucketNotificationConfiguration: 's3:PutBucketNotification',
  GetBucketNotificationConfiguration: 's3:GetBucketNotification',
  GetBucketAccelerateConfiguration: 's3:GetAccelerateConfiguration',
  GetBucketRequestPayment: 's3:GetBucketRequestPayment',
  GetBucketOwnershipControls: 's3:GetBucketOwnershipControls',
};

const VERSIONED: Record<string, string> = {
  's3:GetObject': 's3:GetObjectVersion',
  's3:DeleteObject': 's3:DeleteObjectVersion',
  's3:GetObjectTagging': 's3:GetObjectVersionTagging',
  's3:PutObjectTagging': 's3:PutObjectVersionTagging',
  's3:DeleteObjectTagging': 's3:DeleteObjectVersionTagging',
  's3:GetObjectAcl': 's3:GetObjectVersionAcl',
  's3:PutObjectAcl': 's3:PutObjectVersionAcl',
  's3:GetObjectAttributes': 's3:GetObjectVersionAttributes',
};

/** The actions `op` is evaluated as (with `versionId` in the query: the Version actions too); null: none. */
export function policyActions(op: S3Operation, versioned: boolean): string[] | null {
  const a = ACTIONS[op];
  if (a === null) return null;
  const list = typeof a === 'string' ? [a] : [...a];
  return versioned ? [...list, ...list.flatMap((x) => (VERSIONED[x] ? [VERSIONED[x]] : []))] : list;
}
