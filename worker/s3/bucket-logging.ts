/**
 * PutBucketLogging and GetBucketLogging: a bucket's server access logging (model/bucket-logging.ts;
 * the records and their delivery: app/access-log.ts, upkeep/access-log.ts).
 * Spec: S3 PutBucketLogging (BucketLoggingStatus; an empty one turns logging off; LoggingEnabled
 * with TargetBucket and TargetPrefix, optional TargetGrants and TargetObjectKeyFormat with
 * SimplePrefix or PartitionedPrefix/PartitionDateSource EventTime|DeliveryTime; 200 with no
 * body), GetBucketLogging (the same document; an empty BucketLoggingStatus when off).
 * Choices (docs/COMPATIBILITY.md): the target must be a bucket of this gateway
 * (InvalidTargetBucketForLogging otherwise); it may be the source itself (the log objects'
 * writes are the gateway's own, never logged, so no loop). TargetGrants are accepted and not kept
 * (the log objects are the target owner's, as on a BucketOwnerEnforced target), as RGW does; GetBucketLogging
 * answers the key format SimplePrefix when none was put.
 * The target is checked as a write of the signer into it (issue 37: a key could make the gateway
 * write log objects where it may not write itself): the signer's scope must allow `write` on the
 * target bucket under TargetPrefix (every log key starts with it), the target's bucket policy must
 * not deny it s3:PutObject there (AccessDenied for either), and the target must not have a
 * default Object Lock retention (InvalidTargetBucketForLogging, as AWS requires: log objects a
 * default retention locks could never be removed by the target's owner). Delivery checks the
 * target's policy and lock again (upkeep/access-log.ts).
 */
import { DEFAULT_ACCOUNT } from '../model/account.ts';
import { ANONYMOUS_ACCESS } from '../model/access.ts';
import type { BucketLogging, PartitionDateSource } from '../model/bucket-logging.ts';
import { S3Error } from '../model/errors.ts';
import { accessDenied } from './authorize.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { otherBucketDenies, storedOwner } from './policy-gate.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml, type XmlElement } from './xml-parse.ts';

const ENABLED_CHILDREN = ['TargetBucket', 'TargetPrefix', 'TargetGrants', 'TargetObjectKeyFormat'];

/** The document's configuration; null: logging off. MalformedXML for anything else. */
export function parseBucketLoggingStatus(text: string): BucketLogging | null {
  const root = expectRoot(parseXml(text), 'BucketLoggingStatus');
  for (const c of root.children) if (c.name !== 'LoggingEnabled') throw malformedXml(`unexpected <${c.name}> in <BucketLoggingStatus>`);
  const enabled = childrenNamed(root, 'LoggingEnabled');
  if (enabled.length === 0) return null;
  if (enabled.length > 1) throw malformedXml('LoggingEnabled repeated');
  const e = enabled[0]!;
  for (const c of e.children) if (!ENABLED_CHILDREN.includes(c.name)) throw malformedXml(`unexpected <${c.name}> in <LoggingEnabled>`);
  const targetBucket = childText(e, 'TargetBucket');
  const targetPrefix = childText(e, 'TargetPrefix');
  if (!targetBucket) throw malformedXml('LoggingEnabled needs a TargetBucket');
  if (targetPrefix === undefined) throw malformedXml('LoggingEnabled needs a TargetPrefix');
  return { targetBucket, targetPrefix, partitioned: keyFormat(childrenNamed(e, 'TargetObjectKeyFormat')) };
}

function keyFormat(formats: XmlElement[]): PartitionDateSource | null {
  if (formats.length === 0) return null;
  if (formats.length > 1) throw malformedXml('TargetObjectKeyFormat repeated');
  const kinds = formats[0]!.children;
  if (kinds.length !== 1 || !['SimplePrefix', 'PartitionedPrefix'].includes(kinds[0]!.name))
    throw malformedXml('TargetObjectKeyFormat holds one of SimplePrefix or PartitionedPrefix');
  const kind = kinds[0]!;
  if (kind.name === 'SimplePrefix') {
    if (kind.children.length) throw malformedXml('SimplePrefix is empty');
    return null;
  }
  for (const c of kind.children) if (c.name !== 'PartitionDateSource') throw malformedXml(`unexpected <${c.name}> in <PartitionedPrefix>`);
  const source = childText(kind, 'PartitionDateSource') ?? 'EventTime';
  if (source !== 'EventTime' && source !== 'DeliveryTime') throw malformedXml('PartitionDateSource is EventTime or DeliveryTime');
  return source;
}

export function bucketLoggingStatusXml(config: BucketLogging | null): string {
  if (!config) return xmlDocument('BucketLoggingStatus');
  const format = config.partitioned ? group('PartitionedPrefix', el('PartitionDateSource', config.partitioned)) : '<SimplePrefix></SimplePrefix>';
  return xmlDocument(
    'BucketLoggingStatus',
    group('LoggingEnabled', el('TargetBucket', config.targetBucket), el('TargetPrefix', config.targetPrefix), group('TargetObjectKeyFormat', format)),
  );
}

const invalidTarget = (config: BucketLogging, message: string) => new S3Error('InvalidTargetBucketForLogging', message, { TargetBucket: config.targetBucket });

/** The target as a write of the signer's into it (above); throws AccessDenied or InvalidTargetBucketForLogging. */
async function assertLoggingTarget(s3: S3Context, config: BucketLogging): Promise<void> {
  await s3.store.headBucket(s3.bucket!); // NoSuchBucket for the source first
  const access = s3.auth.access ?? ANONYMOUS_ACCESS;
  if (!access.allowsObject('write', config.targetBucket, config.targetPrefix)) throw accessDenied();
  const facts = {
    op: s3.op,
    addr: { bucket: s3.bucket, key: s3.key, query: s3.query, resource: `/${s3.bucket}` },
    headers: s3.headers,
    url: s3.request.url,
    auth: s3.auth,
  };
  if (await otherBucketDenies(s3.config, facts, config.targetBucket, ['s3:PutObject'], config.targetPrefix)) throw accessDenied();
  // The source's own account's buckets only, as AWS requires of a log target (model/account.ts).
  let targetOwner: string;
  try {
    targetOwner = await storedOwner(s3.config, config.targetBucket);
  } catch (err) {
    if (err instanceof S3Error && err.code === 'NoSuchBucket') throw invalidTarget(config, 'The target bucket for logging does not exist');
    throw err;
  }
  if (targetOwner !== (s3.bucketOwner ?? DEFAULT_ACCOUNT))
    throw invalidTarget(config, 'The owner for the bucket to be logged and the target bucket must be the same.'); // AWS's words
  let lock;
  try {
    lock = await s3.config.getObjectLockConfiguration(config.targetBucket);
  } catch (err) {
    if (!(err instanceof S3Error)) throw err;
    if (err.code === 'NoSuchBucket') throw invalidTarget(config, 'The target bucket for logging does not exist');
    return; // ObjectLockConfigurationNotFoundError: no lock
  }
  if (lock.rule) throw invalidTarget(config, 'The target bucket for logging must not have a default Object Lock retention period');
}

export async function PutBucketLogging(s3: S3Context): Promise<Response> {
  const config = parseBucketLoggingStatus(await readXmlBody(s3, { requireDigest: false }));
  if (config) await assertLoggingTarget(s3, config);
  const owner = s3.bucketOwner ?? DEFAULT_ACCOUNT;
  await s3.config.putBucketLogging(s3.bucket!, config && owner !== DEFAULT_ACCOUNT ? { ...config, owner } : config);
  return new Response(null, { status: 200 });
}

export async function GetBucketLogging(s3: S3Context): Promise<Response> {
  return xmlResponse(bucketLoggingStatusXml(await s3.config.getBucketLogging(s3.bucket!)));
}
