/**
 * GetBucketEncryption, PutBucketEncryption, DeleteBucketEncryption. Encryption here is the
 * gateway's (format/seal.ts), set per storage policy in its config, not per bucket: a bucket whose
 * policy seals answers the SSE-S3 default (AES256), as every AWS bucket has since 2023; one whose
 * policy does not answers ServerSideEncryptionConfigurationNotFoundError.
 * PutBucketEncryption: AES256 is accepted where it is already the default (nothing changes);
 * aws:kms is NotImplemented (no KMS); AES256 on a bucket whose policy stores in the clear is
 * NotImplemented too (turn encryption on in the policy). DeleteBucketEncryption: 204, and the
 * bucket keeps its policy's default, as AWS keeps SSE-S3 after a delete.
 */
import { S3Error } from '../model/errors.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml } from './xml-parse.ts';

export async function GetBucketEncryption(s3: S3Context): Promise<Response> {
  if (!(await s3.store.bucketEncrypted(s3.bucket!))) throw new S3Error('ServerSideEncryptionConfigurationNotFoundError', undefined, { BucketName: s3.bucket! });
  return xmlResponse(
    xmlDocument(
      'ServerSideEncryptionConfiguration',
      group('Rule', group('ApplyServerSideEncryptionByDefault', el('SSEAlgorithm', 'AES256')) + el('BucketKeyEnabled', 'false')),
    ),
  );
}

export async function PutBucketEncryption(s3: S3Context): Promise<Response> {
  const rules = childrenNamed(expectRoot(parseXml(await readXmlBody(s3, { requireDigest: false })), 'ServerSideEncryptionConfiguration'), 'Rule');
  if (rules.length !== 1) throw malformedXml('one Rule');
  const apply = childrenNamed(rules[0]!, 'ApplyServerSideEncryptionByDefault')[0];
  const algorithm = apply ? childText(apply, 'SSEAlgorithm') : undefined;
  if (algorithm === undefined) throw malformedXml('ApplyServerSideEncryptionByDefault with an SSEAlgorithm');
  if (algorithm === 'aws:kms' || algorithm === 'aws:kms:dsse')
    throw new S3Error('NotImplemented', `Default encryption with ${algorithm} is not implemented: this gateway has no KMS (AES256 is its default).`);
  if (algorithm !== 'AES256') throw malformedXml('SSEAlgorithm AES256, aws:kms or aws:kms:dsse');
  if (!(await s3.store.bucketEncrypted(s3.bucket!))) {
    throw new S3Error(
      'NotImplemented',
      'This bucket\'s storage policy stores objects in the clear; encryption is set per policy in the gateway\'s config ("encrypt": true, with an encryption key).',
    );
  }
  return new Response(null, { status: 200 });
}

export async function DeleteBucketEncryption(s3: S3Context): Promise<Response> {
  await s3.store.bucketEncrypted(s3.bucket!); // NoSuchBucket first
  return new Response(null, { status: 204 });
}
