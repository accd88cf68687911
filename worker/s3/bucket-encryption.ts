/**
 * GetBucketEncryption, PutBucketEncryption, DeleteBucketEncryption. A bucket's default encryption
 * (model/default-encryption.ts) is what new objects get when a write names none:
 * - none set: the bucket's storage policy decides; one that seals answers the SSE-S3 default
 *   (AES256), as every AWS bucket has since 2023; one that does not answers
 *   ServerSideEncryptionConfigurationNotFoundError.
 * - PutBucketEncryption with AES256: recorded (and echoed with its BucketKeyEnabled); refused
 *   NotImplemented on a bucket whose policy stores in the clear (encryption is set per policy).
 * - aws:kms: new objects are SSE-KMS under KMSMasterKeyID (a bare id or an ARN, echoed as given;
 *   absent: the gateway's default key, as AWS's aws/s3 key), which must exist and be enabled
 *   (KMS.NotFoundException / KMS.DisabledException). BucketKeyEnabled is recorded and echoed: every
 *   object's data keys are wrapped by the gateway itself, so there is no per-object KMS call to save.
 * - aws:kms:dsse: NotImplemented (as on PutObject). A KMSMasterKeyID without aws:kms: InvalidArgument.
 * DeleteBucketEncryption: 204; the bucket goes back to its policy's default, as AWS resets to SSE-S3.
 */
import type { DefaultEncryption } from '../model/default-encryption.ts';
import { S3Error } from '../model/errors.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml } from './xml-parse.ts';

export async function GetBucketEncryption(s3: S3Context): Promise<Response> {
  const set = await s3.config.getBucketEncryption(s3.bucket!);
  const config: DefaultEncryption | null = set ?? ((await s3.config.bucketEncrypted(s3.bucket!)) ? { algorithm: 'AES256', bucketKey: false } : null);
  if (!config) throw new S3Error('ServerSideEncryptionConfigurationNotFoundError', undefined, { BucketName: s3.bucket! });
  const apply = el('SSEAlgorithm', config.algorithm) + (config.kmsKeyId !== undefined ? el('KMSMasterKeyID', config.kmsKeyId) : '');
  return xmlResponse(
    xmlDocument(
      'ServerSideEncryptionConfiguration',
      group('Rule', group('ApplyServerSideEncryptionByDefault', apply) + el('BucketKeyEnabled', String(config.bucketKey))),
    ),
  );
}

export async function PutBucketEncryption(s3: S3Context): Promise<Response> {
  const rules = childrenNamed(expectRoot(parseXml(await readXmlBody(s3, { requireDigest: false })), 'ServerSideEncryptionConfiguration'), 'Rule');
  if (rules.length !== 1) throw malformedXml('one Rule');
  const apply = childrenNamed(rules[0]!, 'ApplyServerSideEncryptionByDefault')[0];
  const algorithm = apply ? childText(apply, 'SSEAlgorithm') : undefined;
  if (algorithm === undefined) throw malformedXml('ApplyServerSideEncryptionByDefault with an SSEAlgorithm');
  const keyId = childText(apply!, 'KMSMasterKeyID')?.trim();
  const bucketKeyText = childText(rules[0]!, 'BucketKeyEnabled')?.trim().toLowerCase();
  if (bucketKeyText !== undefined && bucketKeyText !== 'true' && bucketKeyText !== 'false') throw malformedXml('BucketKeyEnabled true or false');
  const bucketKey = bucketKeyText === 'true';
  if (algorithm === 'aws:kms:dsse')
    throw new S3Error('NotImplemented', 'Default encryption with aws:kms:dsse (dual-layer) is not implemented: use aws:kms or AES256.');
  if (algorithm !== 'AES256' && algorithm !== 'aws:kms') throw malformedXml('SSEAlgorithm AES256, aws:kms or aws:kms:dsse');
  if (algorithm === 'AES256') {
    if (keyId)
      throw new S3Error('InvalidArgument', 'a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms', {
        ArgumentName: 'KMSMasterKeyID',
      });
    if (!(await s3.config.bucketEncrypted(s3.bucket!))) {
      throw new S3Error(
        'NotImplemented',
        'This bucket\'s storage policy stores objects in the clear; encryption is set per policy in the gateway\'s config ("encrypt": true, with an encryption key).',
      );
    }
    await s3.config.putBucketEncryption(s3.bucket!, { algorithm, bucketKey });
  } else {
    await s3.store.headBucket(s3.bucket!); // NoSuchBucket first
    await s3.config.putBucketEncryption(s3.bucket!, { algorithm, ...(keyId ? { kmsKeyId: keyId } : {}), bucketKey });
  }
  return new Response(null, { status: 200 });
}

export async function DeleteBucketEncryption(s3: S3Context): Promise<Response> {
  await s3.config.putBucketEncryption(s3.bucket!, null);
  return new Response(null, { status: 204 });
}
