/**
 * PutBucketOwnershipControls: every bucket here is "bucket owner enforced" (acl.ts), the only
 * Object Ownership setting the gateway has, so a request that asks for exactly that succeeds and
 * changes nothing (Terraform's `aws_s3_bucket_ownership_controls` with BucketOwnerEnforced, the
 * AWS default, applies cleanly). BucketOwnerPreferred and ObjectWriter would turn ACLs on: they
 * are NotImplemented, naming the setting. DeleteBucketOwnershipControls stays NotImplemented
 * (unsupported-subresources.ts): on AWS it makes the bucket ObjectWriter, ACLs enabled.
 * Spec: S3 API reference, PutBucketOwnershipControls (an `<OwnershipControls><Rule>
 * <ObjectOwnership>` document with exactly one rule); "Controlling ownership of objects".
 */
import { S3Error } from '../model/errors.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml } from './xml-parse.ts';

const SETTINGS = ['BucketOwnerEnforced', 'BucketOwnerPreferred', 'ObjectWriter'];

export async function PutBucketOwnershipControls(s3: S3Context): Promise<Response> {
  await s3.store.headBucket(s3.bucket!); // NoSuchBucket first
  const xml = await readXmlBody(s3, { requireDigest: false });
  const rules = childrenNamed(expectRoot(parseXml(xml), 'OwnershipControls'), 'Rule');
  if (rules.length !== 1) throw malformedXml('an OwnershipControls document with exactly one Rule');
  const setting = childText(rules[0]!, 'ObjectOwnership')?.trim();
  if (!setting || !SETTINGS.includes(setting)) throw malformedXml('ObjectOwnership BucketOwnerEnforced, BucketOwnerPreferred or ObjectWriter');
  if (setting !== 'BucketOwnerEnforced') {
    throw new S3Error(
      'NotImplemented',
      `Object Ownership ${setting} is not implemented: buckets here are BucketOwnerEnforced (ACLs disabled), the only setting.`,
    );
  }
  return new Response(null);
}
