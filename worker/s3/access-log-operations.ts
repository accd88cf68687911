/**
 * The Operation field of an access log record, per S3 operation: REST.<HTTP method>.<resource>,
 * as AWS's access logs name them (S3 user guide, "Amazon S3 server access log format": the
 * Operation field, and the GET half of a copy, REST.COPY.OBJECT_GET / REST.COPY.PART_GET).
 * One choice differs (docs/COMPATIBILITY.md): each entry of a DeleteObjects request is its own
 * record named REST.POST.DELETE_MULTI_OBJECT (Ceph RGW's name, which ceph/s3-tests reads), where
 * AWS names them BATCH.DELETE.OBJECT; the request's own record is AWS's REST.POST.MULTI_OBJECT_DELETE.
 */
import type { S3Operation } from './operations.ts';

const NAMES: Partial<Record<S3Operation | 'PostObject', string>> = {
  ListBuckets: 'REST.GET.SERVICE',
  CreateBucket: 'REST.PUT.BUCKET',
  HeadBucket: 'REST.HEAD.BUCKET',
  DeleteBucket: 'REST.DELETE.BUCKET',
  ListObjects: 'REST.GET.BUCKET',
  ListObjectsV2: 'REST.GET.BUCKET',
  ListObjectVersions: 'REST.GET.BUCKETVERSIONS',
  GetBucketLocation: 'REST.GET.LOCATION',
  GetBucketVersioning: 'REST.GET.VERSIONING',
  PutBucketVersioning: 'REST.PUT.VERSIONING',
  GetBucketLogging: 'REST.GET.LOGGING_STATUS',
  PutBucketLogging: 'REST.PUT.LOGGING_STATUS',
  GetBucketPolicy: 'REST.GET.BUCKETPOLICY',
  PutBucketPolicy: 'REST.PUT.BUCKETPOLICY',
  DeleteBucketPolicy: 'REST.DELETE.BUCKETPOLICY',
  GetBucketPolicyStatus: 'REST.GET.POLICY_STATUS',
  GetPublicAccessBlock: 'REST.GET.PUBLIC_ACCESS_BLOCK',
  PutPublicAccessBlock: 'REST.PUT.PUBLIC_ACCESS_BLOCK',
  DeletePublicAccessBlock: 'REST.DELETE.PUBLIC_ACCESS_BLOCK',
  GetBucketCors: 'REST.GET.CORS',
  PutBucketCors: 'REST.PUT.CORS',
  DeleteBucketCors: 'REST.DELETE.CORS',
  GetBucketEncryption: 'REST.GET.ENCRYPTION',
  PutBucketEncryption: 'REST.PUT.ENCRYPTION',
  DeleteBucketEncryption: 'REST.DELETE.ENCRYPTION',
  GetBucketAcl: 'REST.GET.ACL',
  PutBucketAcl: 'REST.PUT.ACL',
  GetBucketTagging: 'REST.GET.TAGGING',
  PutBucketTagging: 'REST.PUT.TAGGING',
  DeleteBucketTagging: 'REST.DELETE.TAGGING',
  GetBucketLifecycleConfiguration: 'REST.GET.LIFECYCLE',
  PutBucketLifecycleConfiguration: 'REST.PUT.LIFECYCLE',
  DeleteBucketLifecycle: 'REST.DELETE.LIFECYCLE',
  GetObjectLockConfiguration: 'REST.GET.OBJECT_LOCK_CONFIGURATION',
  PutObjectLockConfiguration: 'REST.PUT.OBJECT_LOCK_CONFIGURATION',
  PutBucketOwnershipControls: 'REST.PUT.OWNERSHIP_CONTROLS',
  GetBucketOwnershipControls: 'REST.GET.OWNERSHIP_CONTROLS',
  GetObject: 'REST.GET.OBJECT',
  HeadObject: 'REST.HEAD.OBJECT',
  PutObject: 'REST.PUT.OBJECT',
  CopyObject: 'REST.PUT.OBJECT',
  PostObject: 'REST.POST.OBJECT',
  DeleteObject: 'REST.DELETE.OBJECT',
  DeleteObjects: 'REST.POST.MULTI_OBJECT_DELETE',
  GetObjectAcl: 'REST.GET.ACL',
  PutObjectAcl: 'REST.PUT.ACL',
  GetObjectTagging: 'REST.GET.OBJECT_TAGGING',
  PutObjectTagging: 'REST.PUT.OBJECT_TAGGING',
  DeleteObjectTagging: 'REST.DELETE.OBJECT_TAGGING',
  GetObjectAttributes: 'REST.GET.OBJECT_ATTRIBUTES',
  GetObjectRetention: 'REST.GET.RETENTION',
  PutObjectRetention: 'REST.PUT.RETENTION',
  GetObjectLegalHold: 'REST.GET.LEGAL_HOLD',
  PutObjectLegalHold: 'REST.PUT.LEGAL_HOLD',
  RestoreObject: 'REST.POST.RESTORE',
  CreateMultipartUpload: 'REST.POST.UPLOADS',
  UploadPart: 'REST.PUT.PART',
  UploadPartCopy: 'REST.COPY.PART',
  CompleteMultipartUpload: 'REST.POST.UPLOAD',
  AbortMultipartUpload: 'REST.DELETE.UPLOAD',
  ListParts: 'REST.GET.UPLOAD',
  ListMultipartUploads: 'REST.GET.UPLOADS',
};

/** The record's Operation; operations without a documented name get REST.<method>.<OPERATION>. */
export function accessLogOperation(op: S3Operation | 'PostObject', method: string): string {
  return NAMES[op] ?? `REST.${method}.${op.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}`;
}

/** The GET half of a copy, logged to the source bucket. */
export const copySourceOperation = (op: 'CopyObject' | 'UploadPartCopy') => (op === 'CopyObject' ? 'REST.COPY.OBJECT_GET' : 'REST.COPY.PART_GET');

/** Each entry a DeleteObjects request deleted. */
export const DELETE_ENTRY_OPERATION = 'REST.POST.DELETE_MULTI_OBJECT';
