/**
 * model/policy-eval.ts and policy-conditions.ts on their own: which Deny statements match a
 * request (principal, action, resource, NotX, conditions with IAM's rules for absent keys,
 * IfExists, Null and the set qualifiers), that Allow never refuses, and the public reading.
 */
import { describe, expect, it } from 'vitest';
import { parseBucketPolicy } from '../../worker/model/bucket-policy.ts';
import { conditionsHold, wildcardMatch } from '../../worker/model/policy-conditions.ts';
import { policyDenies, policyIsPublic, policyMentions, type PolicyRequest } from '../../worker/model/policy-eval.ts';

const B = 'pics';
const policy = (...statements: Record<string, unknown>[]) => parseBucketPolicy(JSON.stringify({ Version: '2012-10-17', Statement: statements }), B);
const deny = (extra: Record<string, unknown> = {}) => ({ Effect: 'Deny', Principal: '*', Action: 's3:PutObject', Resource: `arn:aws:s3:::${B}/*`, ...extra });
const request = (values: Record<string, string | string[]> = {}, extra: Partial<PolicyRequest> = {}): PolicyRequest => ({
  actions: ['s3:PutObject'],
  resource: `arn:aws:s3:::${B}/k`,
  accessKeyId: 'AKIDUSER',
  context: (key) => {
    const v = values[key];
    return v === undefined ? undefined : Array.isArray(v) ? v : [v];
  },
  ...extra,
});

describe('policyDenies: statements', () => {
  it('a Deny without conditions matches its action and resource, nothing else', () => {
    const p = policy(deny());
    expect(policyDenies(p, request())).toBe(true);
    expect(policyDenies(p, request({}, { actions: ['s3:GetObject'] }))).toBe(false);
    expect(policyDenies(p, request({}, { resource: `arn:aws:s3:::${B}` }))).toBe(false);
    expect(policyDenies(p, request({}, { resource: 'arn:aws:s3:::other/k' }))).toBe(false);
  });

  it('Allow statements never refuse, even when they do not match', () => {
    expect(policyDenies(policy({ ...deny(), Effect: 'Allow', Action: 's3:GetObject' }), request())).toBe(false);
  });

  it('actions: wildcards, any case; one of several actions denied is enough; NotAction', () => {
    expect(policyDenies(policy(deny({ Action: 's3:Put*' })), request())).toBe(true);
    expect(policyDenies(policy(deny({ Action: 'S3:PUTOBJECT' })), request())).toBe(true);
    expect(policyDenies(policy(deny({ Action: '*' })), request())).toBe(true);
    expect(policyDenies(policy(deny({ Action: 's3:GetObjectVersion' })), request({}, { actions: ['s3:GetObject', 's3:GetObjectVersion'] }))).toBe(true);
    const notGet = policy(deny({ Action: undefined, NotAction: 's3:Get*' }));
    expect(policyDenies(notGet, request())).toBe(true);
    expect(policyDenies(notGet, request({}, { actions: ['s3:GetObject'] }))).toBe(false);
  });

  it('resources: key patterns are case-sensitive; NotResource', () => {
    const secret = policy(deny({ Resource: `arn:aws:s3:::${B}/secret/*` }));
    expect(policyDenies(secret, request({}, { resource: `arn:aws:s3:::${B}/secret/a` }))).toBe(true);
    expect(policyDenies(secret, request({}, { resource: `arn:aws:s3:::${B}/Secret/a` }))).toBe(false);
    const outside = policy(deny({ Resource: undefined, NotResource: `arn:aws:s3:::${B}/public/*` }));
    expect(policyDenies(outside, request({}, { resource: `arn:aws:s3:::${B}/public/a` }))).toBe(false);
    expect(policyDenies(outside, request({}, { resource: `arn:aws:s3:::${B}/private/a` }))).toBe(true);
  });

  it('principals: "*" is everyone, anonymous included; an AWS principal names an access key; NotPrincipal', () => {
    const anonymous = request({}, { accessKeyId: null });
    expect(policyDenies(policy(deny({ Principal: { AWS: '*' } })), anonymous)).toBe(true);
    const one = policy(deny({ Principal: { AWS: ['arn:aws:iam::123456789012:user/AKIDUSER'] } }));
    expect(policyDenies(one, request())).toBe(true);
    expect(policyDenies(one, request({}, { accessKeyId: 'AKIDOTHER' }))).toBe(false);
    expect(policyDenies(one, anonymous)).toBe(false);
    expect(policyDenies(policy(deny({ Principal: { AWS: 'AKIDUSER' } })), request())).toBe(true);
    const allBut = policy(deny({ Principal: undefined, NotPrincipal: { AWS: 'AKIDADMIN' } }));
    expect(policyDenies(allBut, request())).toBe(true);
    expect(policyDenies(allBut, request({}, { accessKeyId: 'AKIDADMIN' }))).toBe(false);
    expect(policyDenies(policy(deny({ Principal: { CanonicalUser: 'abc' } })), request())).toBe(false);
  });
});

describe('conditions', () => {
  const holds = (block: Record<string, Record<string, string[]>>, values: Record<string, string | string[]> = {}) =>
    conditionsHold(block, request(values).context);

  it('Null: "true" when the key is absent, "false" when present', () => {
    const key = 's3:x-amz-server-side-encryption';
    expect(holds({ Null: { [key]: ['true'] } })).toBe(true);
    expect(holds({ Null: { [key]: ['true'] } }, { [key]: 'AES256' })).toBe(false);
    expect(holds({ Null: { [key]: ['false'] } }, { [key]: 'AES256' })).toBe(true);
    expect(holds({ Null: { [key]: ['false'] } })).toBe(false);
  });

  it('absent keys: positive operators false, negated true, IfExists true; unknown keys are absent', () => {
    expect(holds({ StringEquals: { 's3:x-amz-acl': ['private'] } })).toBe(false);
    expect(holds({ StringNotEquals: { 's3:x-amz-acl': ['private'] } })).toBe(true);
    expect(holds({ StringEqualsIfExists: { 's3:x-amz-acl': ['private'] } })).toBe(true);
    expect(holds({ StringNotEqualsIfExists: { 's3:x-amz-acl': ['private'] } }, { 's3:x-amz-acl': 'private' })).toBe(false);
    expect(holds({ StringNotEquals: { 'aws:NoSuchKey': ['x'] } })).toBe(true);
  });

  it('string operators: values are alternatives; keys and operators must all hold; key names any case', () => {
    const acl = { 's3:x-amz-acl': 'public-read' };
    expect(holds({ StringEquals: { 's3:x-amz-acl': ['private', 'public-read'] } }, acl)).toBe(true);
    expect(holds({ StringNotEquals: { 's3:x-amz-acl': ['private', 'public-read'] } }, acl)).toBe(false);
    expect(holds({ StringEquals: { 'S3:X-Amz-Acl': ['public-read'] } }, acl)).toBe(true);
    expect(holds({ StringEqualsIgnoreCase: { 's3:x-amz-acl': ['PUBLIC-READ'] } }, acl)).toBe(true);
    expect(holds({ StringEquals: { 's3:x-amz-acl': ['PUBLIC-READ'] } }, acl)).toBe(false);
    expect(holds({ StringLike: { 's3:prefix': ['home/*', 'tmp?'] } }, { 's3:prefix': 'home/ann/' })).toBe(true);
    expect(holds({ StringNotLike: { 's3:prefix': ['home/*'] } }, { 's3:prefix': 'etc/' })).toBe(true);
    expect(holds({ StringEquals: { 's3:x-amz-acl': ['public-read'] }, StringLike: { 's3:prefix': ['a*'] } }, { ...acl, 's3:prefix': 'b' })).toBe(false);
  });

  it('numeric, date and Bool operators; a value that is not a number never matches', () => {
    expect(holds({ NumericGreaterThan: { 's3:max-keys': ['100'] } }, { 's3:max-keys': '1000' })).toBe(true);
    expect(holds({ NumericLessThanEquals: { 's3:max-keys': ['100'] } }, { 's3:max-keys': '100' })).toBe(true);
    expect(holds({ NumericEquals: { 's3:max-keys': ['10'] } }, { 's3:max-keys': 'ten' })).toBe(false);
    expect(holds({ NumericNotEquals: { 's3:max-keys': ['10'] } }, { 's3:max-keys': '11' })).toBe(true);
    expect(holds({ DateLessThan: { 'aws:CurrentTime': ['2030-01-01T00:00:00Z'] } }, { 'aws:currenttime': '2026-12-02T00:00:00Z' })).toBe(true);
    expect(holds({ DateGreaterThan: { 'aws:EpochTime': ['1700000000'] } }, { 'aws:epochtime': '1600000000' })).toBe(false);
    expect(holds({ Bool: { 'aws:SecureTransport': ['false'] } }, { 'aws:securetransport': 'false' })).toBe(true);
    expect(holds({ Bool: { 'aws:SecureTransport': ['false'] } }, { 'aws:securetransport': 'true' })).toBe(false);
  });

  it('IpAddress / NotIpAddress: IPv4 and IPv6 CIDRs', () => {
    const ip = (a: string) => ({ 'aws:sourceip': a });
    expect(holds({ IpAddress: { 'aws:SourceIp': ['192.0.2.0/24'] } }, ip('192.0.2.77'))).toBe(true);
    expect(holds({ IpAddress: { 'aws:SourceIp': ['192.0.2.0/24'] } }, ip('192.0.3.1'))).toBe(false);
    expect(holds({ IpAddress: { 'aws:SourceIp': ['203.0.113.9'] } }, ip('203.0.113.9'))).toBe(true);
    expect(holds({ NotIpAddress: { 'aws:SourceIp': ['10.0.0.0/8'] } }, ip('192.0.2.1'))).toBe(true);
    expect(holds({ IpAddress: { 'aws:SourceIp': ['2001:db8::/32'] } }, ip('2001:db8:1::5'))).toBe(true);
    expect(holds({ IpAddress: { 'aws:SourceIp': ['2001:db8::/32'] } }, ip('2001:db9::5'))).toBe(false);
    expect(holds({ IpAddress: { 'aws:SourceIp': ['2001:db8::/32'] } }, ip('192.0.2.1'))).toBe(false);
  });

  it('ForAllValues holds for an absent key and when every value matches; ForAnyValue needs one', () => {
    const keys = 's3:requestobjecttagkeys';
    expect(holds({ 'ForAllValues:StringEquals': { [keys]: ['a', 'b'] } })).toBe(true);
    expect(holds({ 'ForAllValues:StringEquals': { [keys]: ['a', 'b'] } }, { [keys]: ['a', 'b'] })).toBe(true);
    expect(holds({ 'ForAllValues:StringEquals': { [keys]: ['a', 'b'] } }, { [keys]: ['a', 'c'] })).toBe(false);
    expect(holds({ 'ForAnyValue:StringEquals': { [keys]: ['c'] } }, { [keys]: ['a', 'c'] })).toBe(true);
    expect(holds({ 'ForAnyValue:StringEquals': { [keys]: ['c'] } })).toBe(false);
    expect(holds({ 'ForAnyValue:StringNotEquals': { [keys]: ['a'] } }, { [keys]: ['a', 'c'] })).toBe(true);
  });
});

describe('the helpers', () => {
  it('policyMentions sees a condition key of a Deny statement only', () => {
    const tagDeny = policy(deny({ Condition: { StringEquals: { 's3:ExistingObjectTag/Team': 'red' } } }));
    expect(policyMentions(tagDeny, 's3:existingobjecttag/')).toBe(true);
    expect(
      policyMentions(policy({ ...deny({ Condition: { StringEquals: { 's3:ExistingObjectTag/Team': 'red' } } }), Effect: 'Allow' }), 's3:existingobjecttag/'),
    ).toBe(false);
  });

  it('policyIsPublic: an Allow to everyone without conditions', () => {
    expect(policyIsPublic(policy({ ...deny(), Effect: 'Allow' }))).toBe(true);
    expect(policyIsPublic(policy({ ...deny(), Effect: 'Allow', Condition: { IpAddress: { 'aws:SourceIp': '10.0.0.0/8' } } }))).toBe(false);
    expect(policyIsPublic(policy({ ...deny(), Effect: 'Allow', Principal: { AWS: 'AKIDUSER' } }))).toBe(false);
    expect(policyIsPublic(policy(deny()))).toBe(false);
  });

  it("policyIsPublic: AWS's fixed values (a wildcard principal is public unless a condition pins a listed key to fixed values)", () => {
    const allow = (extra: Record<string, unknown>) => policy({ ...deny(), Effect: 'Allow', ...extra });
    // A wildcard anywhere in the principal is not a fixed principal; a named account is (s3-tests' s3tenant1).
    expect(policyIsPublic(allow({ Principal: { AWS: '*' } }))).toBe(true);
    expect(policyIsPublic(allow({ Principal: { AWS: 'arn:aws:iam::*:root' } }))).toBe(true);
    expect(policyIsPublic(allow({ Principal: { AWS: 'arn:aws:iam::s3tenant1:root' } }))).toBe(false);
    // Conditions on keys AWS does not list, or not pinning (IfExists, negated, wildcard values, /0), leave it public.
    expect(policyIsPublic(allow({ Condition: { StringLike: { 's3:prefix': 'home/' } } }))).toBe(true);
    expect(policyIsPublic(allow({ Condition: { StringEqualsIfExists: { 'aws:SourceAccount': '111122223333' } } }))).toBe(true);
    expect(policyIsPublic(allow({ Condition: { StringNotEquals: { 'aws:SourceAccount': '111122223333' } } }))).toBe(true);
    expect(policyIsPublic(allow({ Condition: { StringLike: { 'aws:SourceArn': 'arn:aws:sns:*' } } }))).toBe(true);
    expect(policyIsPublic(allow({ Condition: { IpAddress: { 'aws:SourceIp': '0.0.0.0/0' } } }))).toBe(true);
    // Fixed values of a listed key make it non-public.
    expect(policyIsPublic(allow({ Condition: { StringEquals: { 'aws:SourceVpce': 'vpce-1a2b3c4d' } } }))).toBe(false);
    expect(policyIsPublic(allow({ Condition: { ArnEquals: { 'aws:SourceArn': 'arn:aws:sns:us-east-1:111122223333:t' } } }))).toBe(false);
    expect(policyIsPublic(allow({ Condition: { IpAddress: { 'aws:SourceIp': ['192.0.2.0/24', '2001:db8::/32'] } } }))).toBe(false);
  });
});

describe('wildcardMatch', () => {
  it('* any run (empty too), ? exactly one character, the rest literal, anchored at both ends', () => {
    const cases: [string, string, boolean][] = [
      ['a*', 'a', true],
      ['a*', 'abc', true],
      ['*c', 'abc', true],
      ['a*c', 'ac', true],
      ['a*c', 'abxc', true],
      ['a*c', 'abcd', false],
      ['a?c', 'abc', true],
      ['a?c', 'ac', false],
      ['*', '', true],
      ['', '', true],
      ['', 'a', false],
      ['a.c', 'abc', false],
      ['*a*b', 'xaxxb', true],
      ['*a*b', 'xaxxbx', false],
      ['a**b', 'ab', true],
      ['home/*/x', 'home/ann/x', true],
      ['home/*/x', 'home/ann/y', false],
    ];
    for (const [pattern, value, expected] of cases) expect(wildcardMatch(pattern, value), `${pattern} ~ ${value}`).toBe(expected);
    expect(wildcardMatch('S3:Get*', 's3:getobject', true)).toBe(true);
    expect(wildcardMatch('S3:Get*', 's3:getobject')).toBe(false);
  });

  it('a pattern of many stars against a long value that almost matches answers at once', () => {
    const started = Date.now();
    expect(wildcardMatch(`${'*a'.repeat(30)}*b`, 'a'.repeat(1024))).toBe(false);
    expect(Date.now() - started).toBeLessThan(500);
  });
});
