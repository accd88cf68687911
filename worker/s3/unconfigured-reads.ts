/**
 * The handlers of bucket-config-reads.ts's table: NoSuchBucket first, then the 404 error S3 sends
 * for an unconfigured bucket or the empty document it returns.
 */
import { S3Error } from '../model/errors.ts';
import { UNCONFIGURED_READS, type Answer, type UnconfiguredRead } from './bucket-config-reads.ts';
import type { S3Context, S3Handler } from './context.ts';
import { xmlResponse } from './xml.ts';

function handler(answer: Answer): S3Handler {
  return async (s3: S3Context) => {
    await s3.store.headBucket(s3.bucket!); // NoSuchBucket
    if ('error' in answer) throw new S3Error(answer.error, undefined, { BucketName: s3.bucket! });
    return xmlResponse(answer.document());
  };
}

export const UNCONFIGURED_READ_HANDLERS = Object.fromEntries(Object.entries(UNCONFIGURED_READS).map(([op, [, answer]]) => [op, handler(answer)])) as Record<
  UnconfiguredRead,
  S3Handler
>;
