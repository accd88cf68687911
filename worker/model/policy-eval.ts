/**
 * Evaluating a bucket policy (bucket-policy.ts) for one request: does an explicit Deny match, and
 * (for a key of another account than the bucket's: model/account.ts) does an Allow?
 * A statement matches when its principal, action, resource and conditions all match; NotX
 * inverts X. Deny wins, as in IAM.
 * Within the bucket's own account Allow statements grant nothing here: what a request may do is
 * its access key's scope (access.ts), checked first (s3/authorize.ts), and a bucket policy can
 * only take away from it. On AWS a same-account Allow in a bucket policy adds to the caller's IAM
 * permissions; here that would let a policy written by any key with write on a bucket widen
 * every other key's scope, and open the bucket to anonymous callers. Documented in
 * docs/COMPATIBILITY.md. A key of another account needs an Allow (policyAllows) besides its own
 * scope, as a cross-account request on AWS needs both.
 * Principals: "*" (or a "*" value of any type) is everyone, anonymous callers included; an AWS
 * principal naming the request's access key id (the id itself, or an ARN ending in `:user/<id>`)
 * is that key; an AWS or CanonicalUser principal naming its account (the id, or
 * `arn:aws:iam::<id>:root`) is every key of that account, and `arn:aws:iam::<id>:user/<key id>`
 * that one key. A Service principal matches only the gateway's own work done as that service (the
 * access-log delivery writes as S3 server access logging's `logging.s3.amazonaws.com`, as on AWS);
 * roles and federated users never match: the gateway has none.
 */
import type { BucketPolicy, Principal, PolicyStatement } from './bucket-policy.ts';
import type { MatchMeter } from './glob.ts';
import { conditionKeys, conditionsHold, wildcardMatch, type ConditionContext } from './policy-conditions.ts';

export interface PolicyRequest {
  /** The IAM actions the operation needs (`s3:GetObject`); a Deny of any of them refuses it. */
  actions: readonly string[];
  /** `arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`. */
  resource: string;
  /** The signing access key; null for an anonymous request. */
  accessKeyId: string | null;
  /** The signing key's account (model/account.ts); null or absent for an anonymous request. */
  account?: string | null;
  /** The AWS service principal the gateway acts as (LOGGING_SERVICE); absent for a client's request. */
  service?: string;
  context: ConditionContext;
  /** Counts the pattern matching steps (glob.ts), when given. */
  meter?: MatchMeter;
}

/** Whether principal value `v` names the signer: its key (bare, or any ARN ending `:user/<id>`), or its account. */
function namesSigner(v: string, accessKeyId: string | null, account: string | null): boolean {
  if (v === '*') return true;
  if (accessKeyId === null) return false;
  if (v === accessKeyId || v.endsWith(`:user/${accessKeyId}`)) return true;
  return account !== null && (v === account || v === `arn:aws:iam::${account}:root`);
}

/** The service principal of S3 server access logging, as whom the gateway delivers log objects. */
export const LOGGING_SERVICE = 'logging.s3.amazonaws.com';

function principalMatches(p: Principal, req: PolicyRequest): boolean {
  if (p === '*') return true;
  return Object.entries(p).some(([type, values]) =>
    values.some((v) => {
      if (type === 'AWS' || type === 'CanonicalUser') return namesSigner(v, req.accessKeyId, req.account ?? null);
      if (type === 'Service') return v === '*' || (req.service !== undefined && v === req.service);
      return v === '*';
    }),
  );
}

function statementMatches(s: PolicyStatement, req: PolicyRequest): boolean {
  if (principalMatches(s.principal.value, req) === s.principal.not) return false;
  const actionMatches = (action: string) => s.action.patterns.some((p) => wildcardMatch(p, action, true, req.meter));
  const action = s.action.not ? req.actions.some((a) => !actionMatches(a)) : req.actions.some(actionMatches);
  if (!action) return false;
  if (s.resource.patterns.some((p) => wildcardMatch(p, req.resource, false, req.meter)) === s.resource.not) return false;
  return conditionsHold(s.condition, req.context, req.meter);
}

/** Whether an explicit Deny statement of `policy` matches `req`. */
export function policyDenies(policy: BucketPolicy, req: PolicyRequest): boolean {
  return policy.statements.some((s) => s.effect === 'Deny' && statementMatches(s, req));
}

/** Whether an Allow statement of `policy` matches `req` (every one of its actions: an operation
 *  needing two, such as a versioned read, needs both allowed). Only asked for another account's key. */
export function policyAllows(policy: BucketPolicy, req: PolicyRequest): boolean {
  return req.actions.every((action) => policy.statements.some((s) => s.effect === 'Allow' && statementMatches(s, { ...req, actions: [action] })));
}

/** Whether a statement of `effect` (Deny, or any) names a condition key starting with `prefix`
 *  (lower-case): the gate reads what such keys need (an object's tags) only then. */
export function policyMentions(policy: BucketPolicy, prefix: string, effect: 'Deny' | 'any' = 'Deny'): boolean {
  return policy.statements.some((s) => (effect === 'any' || s.effect === effect) && conditionKeys(s.condition).some((k) => k.startsWith(prefix)));
}

/** Condition keys whose fixed value makes a statement to everyone non-public (AWS, "The meaning of public"). */
const PINNING_KEYS = new Set([
  'aws:sourceip',
  'aws:sourcearn',
  'aws:sourcevpc',
  'aws:sourcevpce',
  'aws:sourceowner',
  'aws:sourceaccount',
  's3:x-amz-server-side-encryption-aws-kms-key-id',
  'aws:userid',
]);

/** Operators that hold only for the values they name (no IfExists, no negation, no ForAllValues, which holds for an absent key). */
const PINNING_OPERATOR = /^(ForAnyValue:)?(StringEquals|StringEqualsIgnoreCase|StringLike|ArnEquals|ArnLike|IpAddress)$/;

/** A value with no wildcard and no policy variable; for aws:SourceIp, a CIDR narrower than everything. */
function fixedValue(key: string, value: string): boolean {
  if (/[*?]|\$\{/.test(value)) return false;
  if (key === 'aws:sourceip') return !/\/0+$/.test(value.trim());
  return value !== '';
}

/** Whether a condition block limits a statement to fixed values of one of the pinning keys. */
function pinned(condition: PolicyStatement['condition']): boolean {
  return Object.entries(condition).some(
    ([operator, keys]) =>
      PINNING_OPERATOR.test(operator) &&
      Object.entries(keys).some(([key, values]) => PINNING_KEYS.has(key.toLowerCase()) && values.every((v) => fixedValue(key.toLowerCase(), v))),
  );
}

/** A principal with a wildcard anywhere ("*", {"AWS": "*"}, "arn:aws:iam::*:root") is not a fixed one. */
function principalIsOpen(p: Principal): boolean {
  return p === '*' || Object.values(p).some((values) => values.some((v) => v.includes('*')));
}

/**
 * AWS's reading of "public" (GetBucketPolicyStatus, BlockPublicPolicy; S3 User Guide, "The
 * meaning of public"): an Allow whose principal is not fixed (a wildcard in it), unless a
 * condition limits it to fixed values of aws:SourceIp (a CIDR), aws:SourceArn, aws:SourceVpc,
 * aws:SourceVpce, aws:SourceOwner, aws:SourceAccount, s3:x-amz-server-side-encryption-aws-kms-key-id
 * or aws:userid. Not modelled: AWS's "bad actions" distinction (any action counts here).
 */
export function policyIsPublic(policy: BucketPolicy): boolean {
  return policy.statements.some((s) => s.effect === 'Allow' && !s.principal.not && principalIsOpen(s.principal.value) && !pinned(s.condition));
}
