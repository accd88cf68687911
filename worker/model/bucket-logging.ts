/**
 * S3 server access logging: a bucket's logging configuration (PutBucketLogging's LoggingEnabled)
 * and the key of a delivered log object.
 * Spec: S3 PutBucketLogging (TargetBucket, TargetPrefix, TargetObjectKeyFormat with SimplePrefix
 * or PartitionedPrefix and its PartitionDateSource EventTime or DeliveryTime), and the user
 * guide's "Amazon S3 server access log format" / "log object key format":
 *   SimplePrefix       [TargetPrefix]YYYY-mm-DD-HH-MM-SS-UniqueString
 *   PartitionedPrefix  [TargetPrefix][SourceAccountId]/[SourceRegion]/[SourceBucket]/YYYY/mm/DD/YYYY-mm-DD-HH-MM-SS-UniqueString
 * Stored as the source bucket's 'logging' state row (JSON of BucketLogging), journaled with the
 * bucket's other settings.
 */

export type PartitionDateSource = 'EventTime' | 'DeliveryTime';

export interface BucketLogging {
  targetBucket: string;
  targetPrefix: string;
  /** null: SimplePrefix (the default). */
  partitioned: PartitionDateSource | null;
  /**
   * The account owning the source and the target when logging was set (model/account.ts; absent:
   * the default account, as in every configuration stored before accounts). A record reaches the
   * target only while the target still belongs to it (catalog appendAccessLog), so a target
   * deleted and created again by another account receives nothing.
   */
  owner?: string;
}

/** The account id in partitioned keys of a logging configuration without an owner: the default account (model/account.ts). */
export const LOG_ACCOUNT = 'shardgate';

/**
 * Records of one log object share a group: the part of the key before its dates. Sources logging
 * to the same target bucket and prefix share one object (SimplePrefix); PartitionedPrefix keys
 * name the source bucket, so each source has its own.
 */
export interface LogGroup {
  stem: string;
  partitioned: PartitionDateSource | null;
}

export function logGroup(config: BucketLogging, sourceBucket: string, region: string): LogGroup {
  const stem = config.partitioned ? `${config.targetPrefix}${config.owner ?? LOG_ACCOUNT}/${region}/${sourceBucket}/` : config.targetPrefix;
  return { stem, partitioned: config.partitioned };
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/**
 * The log object's key: `delivered` names it (UTC), `eventAt` dates a partitioned EventTime
 * folder, `unique` is the batch's own id, so a retried delivery of the same batch writes the same key.
 */
export function logObjectKey(group: LogGroup, delivered: number, eventAt: number, unique: string): string {
  const d = new Date(delivered);
  const stamp = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}-${pad(d.getUTCHours())}-${pad(d.getUTCMinutes())}-${pad(d.getUTCSeconds())}-${unique}`;
  if (!group.partitioned) return group.stem + stamp;
  const f = new Date(group.partitioned === 'EventTime' ? eventAt : delivered);
  return `${group.stem}${f.getUTCFullYear()}/${pad(f.getUTCMonth() + 1)}/${pad(f.getUTCDate())}/${stamp}`;
}

export function parseStoredLogging(value: string | null): BucketLogging | null {
  return value === null ? null : (JSON.parse(value) as BucketLogging);
}
