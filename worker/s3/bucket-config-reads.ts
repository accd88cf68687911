/**
 * Reads of bucket configurations this gateway never holds, answered as S3 answers them for a
 * bucket where nothing was configured, so that infrastructure tools (Terraform, Pulumi, awscli,
 * backup tools) that read every configuration on each refresh see "not configured", never 501.
 * One row per operation: the subresource that selects it, and either the 404 error S3 sends or
 * the empty document it returns. NoSuchBucket first, as S3 does.
 * Spec: S3 API reference of each Get operation ("Errors" and the response syntax):
 *   (GetBucketPolicy and GetBucketPolicyStatus are bucket-policy.ts's: NoSuchBucketPolicy without
 *   one, as AWS answers both; RGW answers the status read IsPublic false),
 *   (GetBucketEncryption is bucket-encryption.ts's: buckets here are encrypted by policy),
 *   (GetObjectLockConfiguration is object-lock.ts's), GetBucketWebsite -> NoSuchWebsiteConfiguration,
 *   GetBucketReplication -> ReplicationConfigurationNotFoundError (GetPublicAccessBlock is
 *   public-access-block.ts's, GetBucketLifecycleConfiguration lifecycle.ts's);
 *   (GetBucketLogging is bucket-logging.ts's), empty documents for
 *   (GetBucketNotificationConfiguration is bucket-notification.ts's), GetBucketAccelerateConfiguration; GetBucketRequestPayment
 *   -> Payer BucketOwner (GetBucketOwnershipControls is ownership-controls.ts's).
 * The Put/Delete side of these stays NotImplemented (unsupported-subresources.ts). The handlers
 * are made from this table in unconfigured-reads.ts (this file is read by operations.ts).
 */
import type { S3ErrorCode } from '../model/errors.ts';
import { el, xmlDocument, xmlResponse } from './xml.ts';

export type Answer = { error: S3ErrorCode } | { document: () => string };

/** Operation -> [subresource, answer]. */
export const UNCONFIGURED_READS = {
  GetBucketWebsite: ['website', { error: 'NoSuchWebsiteConfiguration' }],
  GetBucketReplication: ['replication', { error: 'ReplicationConfigurationNotFoundError' }],
  GetBucketAccelerateConfiguration: ['accelerate', { document: () => xmlDocument('AccelerateConfiguration') }],
  GetBucketRequestPayment: ['requestPayment', { document: () => xmlDocument('RequestPaymentConfiguration', el('Payer', 'BucketOwner')) }],
} as const satisfies Record<string, readonly [string, Answer]>;

export type UnconfiguredRead = keyof typeof UNCONFIGURED_READS;
