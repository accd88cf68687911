/**
 * PutBucketLifecycleConfiguration, GetBucketLifecycleConfiguration, DeleteBucketLifecycle: a
 * bucket's lifecycle rules (the document: lifecycle-xml.ts; what they do: model/lifecycle.ts,
 * run by upkeep/lifecycle.ts from the cron), and the x-amz-expiration header of an object a rule
 * will expire.
 * Spec: S3 PutBucketLifecycleConfiguration (Content-MD5 or a flexible checksum required; the new
 * configuration replaces the old), GetBucketLifecycleConfiguration (NoSuchLifecycleConfiguration
 * when none), DeleteBucketLifecycle (204, also when there was none).
 */
import { expirationHeader, type ObjectExpiration } from '../model/lifecycle.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { lifecycleConfigurationXml, parseLifecycleConfiguration } from './lifecycle-xml.ts';
import { xmlResponse } from './xml.ts';

export async function PutBucketLifecycleConfiguration(s3: S3Context): Promise<Response> {
  const rules = parseLifecycleConfiguration(await readXmlBody(s3, { requireDigest: true }));
  await s3.config.putBucketLifecycle(s3.bucket!, rules);
  return new Response(null);
}

export async function GetBucketLifecycleConfiguration(s3: S3Context): Promise<Response> {
  return xmlResponse(lifecycleConfigurationXml(await s3.config.getBucketLifecycle(s3.bucket!)));
}

export async function DeleteBucketLifecycle(s3: S3Context): Promise<Response> {
  await s3.config.deleteBucketLifecycle(s3.bucket!);
  return new Response(null, { status: 204 });
}

/**
 * x-amz-expiration of an object a rule will expire (none: no header), as the catalog judged it
 * (model/lifecycle.ts objectExpiration): on GET and HEAD of the current version, and on the
 * writes that make one (PutObject, CopyObject, CompleteMultipartUpload), as S3 sends it.
 */
export function expirationHeaders(e: ObjectExpiration | undefined): Record<string, string> {
  return e ? { 'x-amz-expiration': expirationHeader(e) } : {};
}
