/**
 * The map of the S3 API: one row per operation, naming its handler.
 * Detection lives in operations.ts; every handler takes an S3Context and returns a Response.
 */
import { GetBucketAcl, GetObjectAcl, PutBucketAcl, PutObjectAcl } from './acl.ts';
import { UNCONFIGURED_READ_HANDLERS } from './unconfigured-reads.ts';
import { GetObjectAttributes } from './object-attributes.ts';
import { RestoreObject } from './restore.ts';
import {
  GetObjectLegalHold,
  GetObjectLockConfiguration,
  GetObjectRetention,
  PutObjectLegalHold,
  PutObjectLockConfiguration,
  PutObjectRetention,
} from './object-lock.ts';
import { DeleteBucketOwnershipControls, GetBucketOwnershipControls, PutBucketOwnershipControls } from './ownership-controls.ts';
import { DeleteBucketPolicy, GetBucketPolicy, GetBucketPolicyStatus, PutBucketPolicy } from './bucket-policy.ts';
import { DeletePublicAccessBlock, GetPublicAccessBlock, PutPublicAccessBlock } from './public-access-block.ts';
import { GetBucketLogging, PutBucketLogging } from './bucket-logging.ts';
import { GetBucketNotificationConfiguration, PutBucketNotificationConfiguration } from './bucket-notification.ts';
import { DeleteBucketTagging, DeleteObjectTagging, GetBucketTagging, GetObjectTagging, PutBucketTagging, PutObjectTagging } from './tagging.ts';
import { DeleteBucketCors, GetBucketCors, PutBucketCors } from './bucket-cors.ts';
import { DeleteBucketEncryption, GetBucketEncryption, PutBucketEncryption } from './bucket-encryption.ts';
import { CreateBucket, DeleteBucket, GetBucketLocation, HeadBucket, ListBuckets } from './buckets.ts';
import { DeleteBucketLifecycle, GetBucketLifecycleConfiguration, PutBucketLifecycleConfiguration } from './lifecycle.ts';
import { GetBucketVersioning, ListObjectVersions, PutBucketVersioning } from './versioning.ts';
import type { S3Handler } from './context.ts';
import { CopyObject } from './copy.ts';
import { DeleteObjects } from './delete-objects.ts';
import { ListObjects, ListObjectsV2 } from './listing.ts';
import { AbortMultipartUpload, CompleteMultipartUpload, CreateMultipartUpload, UploadPart, UploadPartCopy } from './multipart.ts';
import { ListMultipartUploads, ListParts } from './multipart-listing.ts';
import { DeleteObject, GetObject, HeadObject, PutObject } from './objects.ts';
import type { S3Operation } from './operations.ts';

export const S3_HANDLERS: Record<S3Operation, S3Handler> = {
  ListBuckets,
  CreateBucket,
  HeadBucket,
  DeleteBucket,
  GetBucketLocation,
  GetBucketVersioning,
  PutBucketVersioning,
  ListObjectVersions,
  GetBucketCors,
  PutBucketCors,
  DeleteBucketCors,
  GetBucketEncryption,
  PutBucketEncryption,
  DeleteBucketEncryption,
  PutObject,
  GetObject,
  HeadObject,
  DeleteObject,
  DeleteObjects,
  CopyObject,
  ListObjectsV2,
  ListObjects,
  CreateMultipartUpload,
  UploadPart,
  UploadPartCopy,
  CompleteMultipartUpload,
  AbortMultipartUpload,
  ListParts,
  ListMultipartUploads,
  GetBucketAcl,
  PutBucketAcl,
  GetObjectAcl,
  PutObjectAcl,
  GetBucketTagging,
  PutBucketTagging,
  DeleteBucketTagging,
  GetBucketLifecycleConfiguration,
  PutBucketLifecycleConfiguration,
  DeleteBucketLifecycle,
  GetObjectTagging,
  PutObjectTagging,
  DeleteObjectTagging,
  GetObjectAttributes,
  PutBucketOwnershipControls,
  GetBucketOwnershipControls,
  DeleteBucketOwnershipControls,
  GetBucketPolicy,
  PutBucketPolicy,
  DeleteBucketPolicy,
  GetBucketPolicyStatus,
  GetPublicAccessBlock,
  PutPublicAccessBlock,
  DeletePublicAccessBlock,
  GetBucketLogging,
  PutBucketLogging,
  GetBucketNotificationConfiguration,
  PutBucketNotificationConfiguration,
  GetObjectLockConfiguration,
  PutObjectLockConfiguration,
  GetObjectRetention,
  PutObjectRetention,
  GetObjectLegalHold,
  RestoreObject,
  PutObjectLegalHold,
  ...UNCONFIGURED_READ_HANDLERS,
};
