/**
 * A bucket's configuration as the S3 API reads and sets it (issue 39): default encryption, CORS,
 * policy and public access block (with the request-path settings view the policy gate reads),
 * access logging, notifications, tags, lifecycle, Object Lock defaults and versioning. A port
 * of its own, beside ObjectStore (object-store.ts: buckets, objects, uploads), so the bucket
 * configuration handlers (s3/bucket-*.ts), the CORS answers (s3/cors.ts) and the policy gate
 * (s3/policy-gate.ts) take this and nothing else. Implemented over the catalog by
 * engine/bucket-config.ts; every verb answers NoSuchBucket for a bucket that is not there.
 */
import type { BucketSettings } from './bucket-settings.ts';
import type { BucketLogging } from './bucket-logging.ts';
import type { NotificationRule } from './notification.ts';
import type { CorsRule } from './cors.ts';
import type { PublicAccessBlock } from './public-access-block.ts';
import type { LifecycleRule } from './lifecycle.ts';
import type { Tag } from './tagging.ts';
import type { DefaultEncryption } from './default-encryption.ts';
import type { DefaultRetention, ObjectLockConfig } from './object-lock.ts';
import type { VersioningStatus } from './object-store.ts';

export interface BucketConfigStore {
  /** Whether new objects of the bucket are encrypted at rest by default (its policy, the gateway's keys); NoSuchBucket. */
  bucketEncrypted(bucket: string): Promise<boolean>;
  /** The bucket's default encryption as PutBucketEncryption set it; null when none is (NoSuchBucket). */
  getBucketEncryption(bucket: string): Promise<DefaultEncryption | null>;
  /** Sets (null: removes) it; an aws:kms key must exist and be enabled (KMS.NotFoundException, KMS.DisabledException). */
  putBucketEncryption(bucket: string, config: DefaultEncryption | null): Promise<void>;
  /** The bucket's CORS rules: NoSuchCORSConfiguration when it has none (NoSuchBucket). */
  getBucketCors(bucket: string): Promise<CorsRule[]>;
  /** The bucket's CORS rules, or null (for the app's preflight and response headers). */
  findBucketCors(bucket: string): Promise<CorsRule[] | null>;
  putBucketCors(bucket: string, rules: CorsRule[]): Promise<void>;
  deleteBucketCors(bucket: string): Promise<void>;
  /** The bucket policy's JSON document as put: NoSuchBucketPolicy when it has none (NoSuchBucket). */
  getBucketPolicy(bucket: string): Promise<string>;
  /** This isolate's view of the bucket's request-path settings (bucket-settings.ts): no call. */
  bucketSettings(bucket: string): BucketSettings;
  /** The bucket's request-path settings as stored now: one call (NoSuchBucket). */
  fetchBucketSettings(bucket: string): Promise<BucketSettings>;
  /**
   * Replaces the bucket policy (already validated: model/bucket-policy.ts). `isPublic`: AccessDenied
   * when the bucket's public access block has BlockPublicPolicy (checked as it is stored).
   */
  putBucketPolicy(bucket: string, policy: string, isPublic?: boolean): Promise<void>;
  /** The bucket's public access block: NoSuchPublicAccessBlockConfiguration when it has none (NoSuchBucket). */
  getPublicAccessBlock(bucket: string): Promise<PublicAccessBlock>;
  /** Replaces it; null removes it (NoSuchBucket). */
  putPublicAccessBlock(bucket: string, config: PublicAccessBlock | null): Promise<void>;
  deleteBucketPolicy(bucket: string): Promise<void>;
  /**
   * Changes the bucket's Object Ownership and ACL rows (model/acl.ts; a field left out stays, null
   * removes it). InvalidBucketAclWithObjectOwnership / AccessControlListNotSupported when the result
   * would be grants on a bucket whose ownership disables ACLs (checked as it is stored). NoSuchBucket.
   */
  putBucketAccess(bucket: string, change: { ownership?: string | null; acl?: string | null }): Promise<void>;
  /** The bucket's access logging, or null when off (NoSuchBucket). */
  getBucketLogging(bucket: string): Promise<BucketLogging | null>;
  /**
   * Turns access logging on (config) or off (null). The target bucket must exist here
   * (InvalidTargetBucketForLogging). NoSuchBucket for the source.
   */
  putBucketLogging(bucket: string, config: BucketLogging | null): Promise<void>;
  /** The bucket's event notification rules, or null when none (NoSuchBucket). */
  getBucketNotification(bucket: string): Promise<NotificationRule[] | null>;
  /** Replaces them (null: none); InvalidArgument for an unknown destination, event or overlapping rules. Queues an s3:TestEvent per destination. */
  putBucketNotification(bucket: string, rules: NotificationRule[] | null): Promise<void>;
  /** The bucket's tags: NoSuchTagSet when it has none (NoSuchBucket). */
  getBucketTagging(bucket: string): Promise<Tag[]>;
  /** Replaces the bucket's tags; [] removes them. */
  putBucketTagging(bucket: string, tags: Tag[]): Promise<void>;
  /** The bucket's lifecycle rules: NoSuchLifecycleConfiguration when it has none (NoSuchBucket). */
  getBucketLifecycle(bucket: string): Promise<LifecycleRule[]>;
  /** Replaces the bucket's lifecycle rules (already validated). */
  putBucketLifecycle(bucket: string, rules: LifecycleRule[]): Promise<void>;
  deleteBucketLifecycle(bucket: string): Promise<void>;
  /** The bucket's Object Lock configuration: ObjectLockConfigurationNotFoundError when lock is not enabled. */
  getObjectLockConfiguration(bucket: string): Promise<ObjectLockConfig>;
  /** Sets the default retention (null: none); enables lock on a versioning-Enabled bucket, else InvalidBucketState. */
  putObjectLockConfiguration(bucket: string, rule: DefaultRetention | null): Promise<void>;
  /** The bucket's versioning state; null when it was never configured (NoSuchBucket). */
  getBucketVersioning(bucket: string): Promise<VersioningStatus | null>;
  putBucketVersioning(bucket: string, status: VersioningStatus): Promise<void>;
}
