/**
 * Evaluating a bucket policy (bucket-policy.ts) for one request: does an explicit Deny match?
 * A statement matches when its principal, action, resource and conditions all match; NotX
 * inverts X. Deny wins, as in IAM.
 * Allow statements grant nothing here: what a request may do is its access key's scope
 * (access.ts), checked first (s3/authorize.ts), and a bucket policy can only take away from it.
 * On AWS a same-account Allow in a bucket policy adds to the caller's IAM permissions; here that
 * would let a policy written by any key with write on a bucket widen every other key's scope,
 * and open the bucket to anonymous callers. Documented in docs/COMPATIBILITY.md.
 * Principals: "*" (or a "*" value of any type) is everyone, anonymous callers included; an AWS
 * principal naming the request's access key id (the id itself, or an ARN ending in `:user/<id>`)
 * is that key. Accounts, roles, canonical users and services never match: the gateway has none.
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
  context: ConditionContext;
  /** Counts the pattern matching steps (glob.ts), when given. */
  meter?: MatchMeter;
}

function principalMatches(p: Principal, accessKeyId: string | null): boolean {
  if (p === '*') return true;
  return Object.values(p).some((values) =>
    values.some((v) => v === '*' || (accessKeyId !== null && (v === accessKeyId || v.endsWith(`:user/${accessKeyId}`)))));
}

function statementMatches(s: PolicyStatement, req: PolicyRequest): boolean {
  if (principalMatches(s.principal.value, req.accessKeyId) === s.principal.not) return false;
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

/** Whether a Deny statement names a condition key starting with `prefix` (lower-case): the gate
 *  reads what such keys need (an object's tags) only then. */
export function policyMentions(policy: BucketPolicy, prefix: string): boolean {
  return policy.statements.some((s) => s.effect === 'Deny' && conditionKeys(s.condition).some((k) => k.startsWith(prefix)));
}

/** AWS's reading of "public" (GetBucketPolicyStatus): an Allow to everyone without conditions. */
export function policyIsPublic(policy: BucketPolicy): boolean {
  return policy.statements.some((s) => s.effect === 'Allow' && !s.principal.not && principalMatches(s.principal.value, null) && Object.keys(s.condition).length === 0);
}
