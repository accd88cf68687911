/**
 * model/bucket-policy.ts on its own: the documents AWS accepts (Statement as an object or an
 * array, Principal "*" or by type, NotX fields, conditions with qualifiers and IfExists) and each
 * way a document is refused with MalformedPolicy and AWS's message.
 */
import { describe, expect, it } from 'vitest';
import { MAX_POLICY_BYTES, parseBucketPolicy } from '../../worker/model/bucket-policy.ts';

const B = 'pics';
const doc = (statement: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ Version: '2012-10-17', ...extra, Statement: statement });
const deny = (extra: Record<string, unknown> = {}) => ({ Effect: 'Deny', Principal: '*', Action: 's3:PutObject', Resource: `arn:aws:s3:::${B}/*`, ...extra });

function refused(text: string, message: RegExp | string) {
  let caught: unknown;
  try {
    parseBucketPolicy(text, B);
  } catch (err) {
    caught = err;
  }
  expect(caught, text).toMatchObject({ code: 'MalformedPolicy', status: 400 });
  expect((caught as Error).message).toMatch(message);
}

describe('parseBucketPolicy: accepted documents', () => {
  it('a Statement object or array; Principal "*" or by type; NotPrincipal, NotAction, NotResource; Sid', () => {
    expect(parseBucketPolicy(doc(deny()), B).statements).toHaveLength(1);
    const p = parseBucketPolicy(
      doc([
        deny({ Sid: 'one', Principal: { AWS: ['*', 'AKIDEXAMPLE'] } }),
        {
          Sid: 'two',
          Effect: 'Deny',
          NotPrincipal: { AWS: 'arn:aws:iam::1:user/x' },
          NotAction: ['s3:Get*', 's3:List?ucket'],
          NotResource: [`arn:aws:s3:::${B}`, '*'],
        },
      ]),
      B,
    );
    expect(p.statements.map((s) => [s.sid, s.effect, s.principal.not, s.action.not, s.resource.not])).toEqual([
      ['one', 'Deny', false, false, false],
      ['two', 'Deny', true, true, true],
    ]);
    expect(p.statements[0]!.principal.value).toEqual({ AWS: ['*', 'AKIDEXAMPLE'] });
  });

  it('no Version, Version 2008-10-17, an Id; action names in any case and "*"; bucket patterns in resources', () => {
    expect(() => parseBucketPolicy(JSON.stringify({ Statement: deny() }), B)).not.toThrow();
    expect(() => parseBucketPolicy(doc(deny(), { Version: '2008-10-17', Id: 'x' }), B)).not.toThrow();
    // A repeated Sid is a label, not an error (bucket-policy.ts says why); both statements count.
    expect(parseBucketPolicy(doc([deny({ Sid: 'same' }), deny({ Sid: 'same', Action: 's3:GetObject' })]), B).statements).toHaveLength(2);
    expect(() => parseBucketPolicy(doc(deny({ Action: ['S3:putobject', '*', 's3:*'] })), B)).not.toThrow();
    expect(() => parseBucketPolicy(doc(deny({ Resource: ['arn:aws:s3:::pi*/*', 'arn:aws:s3:::p?cs'] })), B)).not.toThrow();
  });

  it('conditions: operators with IfExists, ForAnyValue / ForAllValues, numbers and booleans as values', () => {
    const p = parseBucketPolicy(
      doc(
        deny({
          Condition: {
            StringNotEqualsIfExists: { 's3:x-amz-acl': ['private'] },
            'ForAllValues:StringLike': { 's3:RequestObjectTagKeys': 'a*' },
            NumericGreaterThan: { 's3:max-keys': 10 },
            Bool: { 'aws:SecureTransport': false },
            Null: { 's3:x-amz-server-side-encryption': 'true' },
          },
        }),
      ),
      B,
    );
    expect(p.statements[0]!.condition).toEqual({
      StringNotEqualsIfExists: { 's3:x-amz-acl': ['private'] },
      'ForAllValues:StringLike': { 's3:RequestObjectTagKeys': ['a*'] },
      NumericGreaterThan: { 's3:max-keys': ['10'] },
      Bool: { 'aws:SecureTransport': ['false'] },
      Null: { 's3:x-amz-server-side-encryption': ['true'] },
    });
  });
});

describe('parseBucketPolicy: MalformedPolicy', () => {
  it.each([
    ['', /first byte must be '\{'/],
    ['[1]', /first byte must be '\{'/],
    ['{"Statement": [', /invalid Json/],
    [JSON.stringify({ Version: '2012-10-17' }), /Missing required field Statement/],
    [doc([]), /Statement is empty/],
    [doc(deny(), { Version: '2020-01-01' }), /valid version/],
    [doc(deny(), { Extra: 1 }), /Unknown field Extra/],
    [doc(deny({ Color: 'blue' })), /Unknown field Color/],
    [doc(deny({ Effect: undefined })), /Missing required field Effect/],
    [doc(deny({ Effect: 'Maybe' })), /Invalid effect/],
    [doc(deny({ Principal: undefined })), /Missing required field Principal/],
    [doc(deny({ NotPrincipal: '*' })), /both Principal and NotPrincipal/],
    [doc(deny({ Principal: { Robot: '*' } })), /Invalid principal/],
    [doc(deny({ Effect: 'Allow', Principal: undefined, NotPrincipal: { AWS: 'arn:aws:iam::1:root' } })), /NotPrincipal can only be used with "Effect": "Deny"/],
    [doc(deny({ Principal: 'everyone' })), /Invalid principal/],
    [doc(deny({ Action: undefined })), /Missing required field Action/],
    [doc(deny({ NotAction: 's3:GetObject' })), /both Action and NotAction/],
    [doc(deny({ Action: 's3:FlyAway' })), /invalid action/],
    [doc(deny({ Action: 'ec2:RunInstances' })), /invalid action/],
    [doc(deny({ Action: [] })), /Invalid Action/],
    [doc(deny({ Action: 7 })), /Invalid Action/],
    [doc(deny({ Resource: undefined })), /Missing required field Resource/],
    [doc(deny({ Resource: 'arn:aws:s3:::other/*' })), /invalid resource/],
    [doc(deny({ Resource: 'arn:aws:sqs:::pics' })), /invalid resource/],
    [doc(deny({ Condition: { StringSortOf: { 's3:prefix': 'a' } } })), /Invalid Condition type/],
    [doc(deny({ Condition: { 'ForAnyValue:Null': { 's3:prefix': 'true' } } })), /Invalid Condition type/],
    [doc(deny({ Condition: { StringEquals: {} } })), /Invalid Condition block/],
    [doc(deny({ Condition: { StringEquals: { prefix: 'a' } } })), /invalid condition key/],
    [doc(deny({ Condition: { StringEquals: { 's3:prefix': [] } } })), /Invalid Condition value/],
    [doc(deny({ Condition: { StringEquals: { 's3:prefix': { a: 1 } } } })), /Invalid Condition value/],
  ])('%s', (text, message) => refused(text, message));

  it('a document over 20 KB', () => {
    const big = doc(deny({ Sid: 'x'.repeat(MAX_POLICY_BYTES) }));
    refused(big, /less than 20 KB/);
  });
});
