/**
 * BucketConfig: the bucket configuration port (model/bucket-config-store.ts) over the catalog.
 * Each verb is one catalog call or two (a check first: the source bucket and the logging target
 * both exist; an aws:kms default names a key the gateway has, enabled; a lifecycle transition
 * names a configured storage class), and turns the catalog's "none" into the S3 error a GET of
 * that configuration answers (NoSuchCORSConfiguration, NoSuchBucketPolicy, ...).
 */
import type * as T from '../model/object-store.ts';
import type { BucketConfigStore } from '../model/bucket-config-store.ts';
import { parseStoredLogging, type BucketLogging } from '../model/bucket-logging.ts';
import { parseStoredNotification, type NotificationRule } from '../model/notification.ts';
import type { DefaultRetention, ObjectLockConfig } from '../model/object-lock.ts';
import { S3Error } from '../model/errors.ts';
import type { CorsRule } from '../model/cors.ts';
import { parseStoredPublicAccessBlock, storedPublicAccessBlock, type PublicAccessBlock } from '../model/public-access-block.ts';
import type { LifecycleRule } from '../model/lifecycle.ts';
import type { Tag } from '../model/tagging.ts';
import { parseStoredDefaultEncryption, type DefaultEncryption } from '../model/default-encryption.ts';
import type { ObjectCatalog } from '../catalog/ports.ts';
import { policyFor, policyForClass, type EngineSettings, type StoragePolicy } from './policy.ts';
import type { KmsKeys } from './kms-keys.ts';

export interface BucketConfigOptions {
  catalog: ObjectCatalog;
  settings: EngineSettings;
  /** Whether a policy's units are sealed under the gateway's keys (UnitStore.seals). */
  seals: (policy: StoragePolicy) => boolean;
  /** The named KMS keys; throws NotImplemented on a gateway without its own encryption. */
  kms: () => KmsKeys;
}

export class BucketConfig implements BucketConfigStore {
  private readonly catalog: ObjectCatalog;

  constructor(private readonly o: BucketConfigOptions) {
    this.catalog = o.catalog;
  }

  async bucketEncrypted(bucket: string): Promise<boolean> {
    await this.catalog.getBucket(bucket); // NoSuchBucket first
    return this.o.seals(policyFor(this.o.settings, bucket));
  }

  /** The bucket's default encryption as stored (null: none set), NoSuchBucket. */
  async getBucketEncryption(bucket: string): Promise<DefaultEncryption | null> {
    return parseStoredDefaultEncryption((await this.catalog.getBucketSettings(bucket)).rows.encryption);
  }

  /** Sets (null: removes) the default; an aws:kms key must be one the gateway has, enabled. */
  async putBucketEncryption(bucket: string, config: DefaultEncryption | null): Promise<void> {
    if (config?.algorithm === 'aws:kms') await this.o.kms().forWrite(config.kmsKeyId);
    await this.catalog.setBucketEncryption(bucket, config === null ? null : JSON.stringify(config));
  }

  async getBucketCors(bucket: string): Promise<CorsRule[]> {
    const rules = await this.catalog.getBucketCors(bucket);
    if (!rules) throw new S3Error('NoSuchCORSConfiguration', undefined, { BucketName: bucket });
    return rules;
  }
  findBucketCors = (bucket: string) => this.catalog.getBucketCors(bucket);
  putBucketCors = (bucket: string, rules: CorsRule[]) => this.catalog.setBucketCors(bucket, rules);
  deleteBucketCors = (bucket: string) => this.catalog.setBucketCors(bucket, null);

  async getBucketPolicy(bucket: string): Promise<string> {
    const policy = await this.catalog.getBucketPolicy(bucket);
    if (policy === null) throw new S3Error('NoSuchBucketPolicy', undefined, { BucketName: bucket });
    return policy;
  }
  bucketSettings = (bucket: string) => this.catalog.cachedBucketSettings(bucket);
  fetchBucketSettings = (bucket: string) => this.catalog.getBucketSettings(bucket);
  putBucketAccess = (bucket: string, change: { ownership?: string | null; acl?: string | null }) => this.catalog.setBucketAccess(bucket, change);
  putBucketPolicy = (bucket: string, policy: string, isPublic = false) => this.catalog.setBucketPolicy(bucket, policy, isPublic);
  deleteBucketPolicy = (bucket: string) => this.catalog.setBucketPolicy(bucket, null);
  async getPublicAccessBlock(bucket: string): Promise<PublicAccessBlock> {
    const config = parseStoredPublicAccessBlock(await this.catalog.getBucketPublicAccessBlock(bucket));
    if (!config) throw new S3Error('NoSuchPublicAccessBlockConfiguration', undefined, { BucketName: bucket });
    return config;
  }
  putPublicAccessBlock = (bucket: string, config: PublicAccessBlock | null) =>
    this.catalog.setBucketPublicAccessBlock(bucket, config === null ? null : storedPublicAccessBlock(config));

  getBucketLogging = async (bucket: string) => parseStoredLogging(await this.catalog.getBucketLogging(bucket));
  async putBucketLogging(bucket: string, config: BucketLogging | null): Promise<void> {
    if (config) {
      await this.catalog.getBucket(bucket); // NoSuchBucket for the source first
      try {
        await this.catalog.getBucket(config.targetBucket);
      } catch (err) {
        if (err instanceof S3Error && err.code === 'NoSuchBucket')
          throw new S3Error('InvalidTargetBucketForLogging', 'The target bucket for logging does not exist', { TargetBucket: config.targetBucket });
        throw err;
      }
    }
    await this.catalog.setBucketLogging(bucket, config === null ? null : JSON.stringify(config));
  }

  getBucketNotification = async (bucket: string) => parseStoredNotification(await this.catalog.getBucketNotification(bucket));
  putBucketNotification = (bucket: string, rules: NotificationRule[] | null) =>
    this.catalog.setBucketNotification(bucket, rules === null ? null : JSON.stringify(rules));

  async getBucketTagging(bucket: string): Promise<Tag[]> {
    const tags = await this.catalog.getBucketTagging(bucket);
    if (!tags) throw new S3Error('NoSuchTagSet', undefined, { BucketName: bucket });
    return tags;
  }
  putBucketTagging = (bucket: string, tags: Tag[]) => this.catalog.setBucketTagging(bucket, tags.length ? tags : null);

  async getBucketLifecycle(bucket: string): Promise<LifecycleRule[]> {
    const rules = await this.catalog.getBucketLifecycle(bucket);
    if (!rules) throw new S3Error('NoSuchLifecycleConfiguration', undefined, { BucketName: bucket });
    return rules;
  }
  /** A transition to a class not configured is InvalidStorageClass, as a write naming it is. */
  putBucketLifecycle = (bucket: string, rules: LifecycleRule[]) => {
    for (const r of rules) {
      for (const t of [...(r.transitions ?? []), ...(r.noncurrentVersionTransitions ?? [])]) policyForClass(this.o.settings, bucket, t.storageClass);
    }
    return this.catalog.setBucketLifecycle(bucket, rules);
  };
  deleteBucketLifecycle = (bucket: string) => this.catalog.setBucketLifecycle(bucket, null);

  async getObjectLockConfiguration(bucket: string): Promise<ObjectLockConfig> {
    const config = await this.catalog.getObjectLock(bucket);
    if (!config) throw new S3Error('ObjectLockConfigurationNotFoundError', undefined, { BucketName: bucket });
    return config;
  }
  putObjectLockConfiguration = (bucket: string, rule: DefaultRetention | null) => this.catalog.setObjectLock(bucket, rule);

  getBucketVersioning = (bucket: string) => this.catalog.getVersioning(bucket);
  putBucketVersioning = (bucket: string, status: T.VersioningStatus) => this.catalog.setVersioning(bucket, status);
}
