/**
 * PutBucketPolicy, GetBucketPolicy, DeleteBucketPolicy, GetBucketPolicyStatus: a bucket's policy,
 * stored in the catalog as the JSON document that was put (state row 'policy') once
 * model/bucket-policy.ts has accepted it. What it does to requests: s3/policy-gate.ts.
 * Spec: S3 PutBucketPolicy (the JSON document as the body, at most 20 KB; 204; a bad document is
 * 400 MalformedPolicy; Content-MD5 optional, verified when sent), GetBucketPolicy (the document,
 * NoSuchBucketPolicy when none), DeleteBucketPolicy (204, also when there was none),
 * GetBucketPolicyStatus (IsPublic: the policy's own publicness, policy-eval.ts, the same judgment
 * BlockPublicPolicy makes; NoSuchBucketPolicy when none). A public access block does not change it.
 * `x-amz-confirm-remove-self-bucket-access` is accepted and has no effect: a policy here can never
 * lock out a key allowed to manage it (policy-gate.ts exempts the three policy operations).
 */
import { MAX_POLICY_BYTES, malformedPolicy, parseBucketPolicy } from '../model/bucket-policy.ts';
import { policyIsPublic } from '../model/policy-eval.ts';
import { readSmallBody } from './body.ts';
import type { S3Context } from './context.ts';
import { el, xmlDocument, xmlResponse } from './xml.ts';

export async function PutBucketPolicy(s3: S3Context): Promise<Response> {
  const text = await readSmallBody(s3, {
    digest: 'if-present',
    max: MAX_POLICY_BYTES,
    tooLarge: () => malformedPolicy('Policies must be less than 20 KB'),
    notUtf8: () => malformedPolicy('This policy contains invalid Json'),
  });
  const policy = parseBucketPolicy(text, s3.bucket!);
  // A public policy on a bucket whose public access block has BlockPublicPolicy: 403 AccessDenied,
  // judged by the catalog as it stores the policy.
  await s3.config.putBucketPolicy(s3.bucket!, text, policyIsPublic(policy));
  return new Response(null, { status: 204 });
}

export async function GetBucketPolicy(s3: S3Context): Promise<Response> {
  const text = await s3.config.getBucketPolicy(s3.bucket!);
  return new Response(text, { status: 200, headers: { 'Content-Type': 'application/json' } });
}

export async function DeleteBucketPolicy(s3: S3Context): Promise<Response> {
  await s3.config.deleteBucketPolicy(s3.bucket!);
  return new Response(null, { status: 204 });
}

export async function GetBucketPolicyStatus(s3: S3Context): Promise<Response> {
  const policy = parseBucketPolicy(await s3.config.getBucketPolicy(s3.bucket!), s3.bucket!);
  return xmlResponse(xmlDocument('PolicyStatus', el('IsPublic', String(policyIsPublic(policy)))));
}
