/**
 * Bucket policies (PutBucketPolicy): the IAM policy grammar a bucket policy is written in, parsed
 * and checked as AWS checks it, refusing a bad document with 400 MalformedPolicy and AWS's message.
 * Evaluation is policy-eval.ts's, the condition operators policy-conditions.ts's.
 * Grammar (IAM JSON policy reference): an object with optional Version ("2012-10-17" or
 * "2008-10-17"), optional Id and a Statement (one object or a non-empty array). Each statement:
 * optional Sid (a label; repeated Sids are accepted, below), Effect Allow or Deny, exactly one of Principal /
 * NotPrincipal (NotPrincipal with Deny only, as IAM requires; "*" or an object of "AWS", "CanonicalUser", "Service", "Federated" to a string or
 * strings), exactly one of Action / NotAction (a string or strings: "*" or "s3:<name>" with `*`
 * and `?`), exactly one of Resource / NotResource (ARNs of this bucket: `arn:aws:s3:::bucket` or
 * `arn:aws:s3:::bucket/<key pattern>`, or "*"), optional Condition (operator -> key -> value or
 * values). Any other field is "Unknown field".
 * Not checked, though AWS checks it: that each action applies to a resource of the statement
 * (AWS refuses s3:GetObject on `arn:aws:s3:::bucket` alone); such a statement is stored and
 * simply never matches.
 */
import { S3Error } from './errors.ts';
import { isConditionOperator, wildcardMatch } from './policy-conditions.ts';
import { S3_POLICY_ACTIONS } from './policy-actions.ts';

/** AWS's limit on a bucket policy's size. */
export const MAX_POLICY_BYTES = 20 * 1024;

export type Effect = 'Allow' | 'Deny';

/** "*" (everyone), or principal type -> values ("*", account ids, ARNs, access key ids). */
export type Principal = '*' | Readonly<Record<string, readonly string[]>>;

/** Operator (with its ForAnyValue:/ForAllValues: qualifier and IfExists suffix) -> key -> values. */
export type ConditionBlock = Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;

export interface PolicyStatement {
  sid?: string;
  effect: Effect;
  principal: { not: boolean; value: Principal };
  action: { not: boolean; patterns: readonly string[] };
  resource: { not: boolean; patterns: readonly string[] };
  condition: ConditionBlock;
}

export interface BucketPolicy {
  statements: readonly PolicyStatement[];
}

export function malformedPolicy(message: string): S3Error {
  return new S3Error('MalformedPolicy', message);
}

const POLICY_FIELDS = new Set(['Version', 'Id', 'Statement']);
const STATEMENT_FIELDS = new Set(['Sid', 'Effect', 'Principal', 'NotPrincipal', 'Action', 'NotAction', 'Resource', 'NotResource', 'Condition']);
const PRINCIPAL_TYPES = new Set(['AWS', 'CanonicalUser', 'Service', 'Federated']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A string or a non-empty array of strings (IAM's "string or list"). */
function strings(value: unknown, field: string): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string')) return value as string[];
  throw malformedPolicy(`Invalid ${field}: expected a string or a list of strings`);
}

/** Condition values may be strings, numbers or booleans (IAM writes them as strings). */
function conditionValues(value: unknown, field: string): string[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0 || !list.every((v) => ['string', 'number', 'boolean'].includes(typeof v)))
    throw malformedPolicy(`Invalid Condition value for ${field}`);
  return list.map(String);
}

/** One of a pair of exclusive fields (Action / NotAction, ...): exactly one must be there. */
function onePair(s: Record<string, unknown>, name: string): { not: boolean; value: unknown } {
  const has = Object.hasOwn(s, name);
  const hasNot = Object.hasOwn(s, `Not${name}`);
  if (has && hasNot) throw malformedPolicy(`Statement can not have both ${name} and Not${name}`);
  if (!has && !hasNot) throw malformedPolicy(`Missing required field ${name}`);
  return { not: hasNot, value: has ? s[name] : s[`Not${name}`] };
}

function parsePrincipal(value: unknown): Principal {
  if (value === '*') return '*';
  if (!isObject(value) || Object.keys(value).length === 0) throw malformedPolicy('Invalid principal in policy');
  const out: Record<string, string[]> = {};
  for (const [type, v] of Object.entries(value)) {
    if (!PRINCIPAL_TYPES.has(type)) throw malformedPolicy('Invalid principal in policy');
    out[type] = strings(v, 'principal');
  }
  return out;
}

function parseActions(value: unknown): string[] {
  const actions = strings(value, 'Action');
  for (const a of actions) {
    if (a === '*') continue;
    const [service, name, ...rest] = a.split(':');
    if (rest.length || service?.toLowerCase() !== 's3' || !name) throw malformedPolicy('Policy has invalid action');
    // A name without wildcards must be an S3 action AWS knows; a pattern may match none.
    if (!/[*?]/.test(name) && !S3_POLICY_ACTIONS.has(name.toLowerCase())) throw malformedPolicy('Policy has invalid action');
  }
  return actions;
}

/** Resources must name this bucket (AWS: "Policy has invalid resource"). */
function parseResources(value: unknown, bucket: string): string[] {
  const resources = strings(value, 'Resource');
  for (const r of resources) {
    if (r === '*') continue;
    const m = /^arn:aws:s3:::([^/]*)(\/.*)?$/.exec(r);
    if (!m) throw malformedPolicy('Policy has invalid resource');
    if (!wildcardMatch(m[1]!, bucket)) throw malformedPolicy('Policy has invalid resource');
  }
  return resources;
}

function parseCondition(value: unknown): ConditionBlock {
  if (value === undefined) return {};
  if (!isObject(value)) throw malformedPolicy('Invalid Condition: expected an object');
  const out: Record<string, Record<string, string[]>> = {};
  for (const [operator, keys] of Object.entries(value)) {
    if (!isConditionOperator(operator)) throw malformedPolicy(`Invalid Condition type : ${operator}.`);
    if (!isObject(keys) || Object.keys(keys).length === 0) throw malformedPolicy(`Invalid Condition block for ${operator}`);
    const block: Record<string, string[]> = {};
    for (const [key, v] of Object.entries(keys)) {
      if (!/^[A-Za-z0-9]+:[^\s]+$/.test(key)) throw malformedPolicy(`Policy has an invalid condition key: ${key}`);
      block[key] = conditionValues(v, key);
    }
    out[operator] = block;
  }
  return out;
}

function parseStatement(raw: unknown, bucket: string): PolicyStatement {
  if (!isObject(raw)) throw malformedPolicy('Statement is not an object');
  for (const field of Object.keys(raw)) if (!STATEMENT_FIELDS.has(field)) throw malformedPolicy(`Unknown field ${field}`);
  const effect = raw.Effect;
  if (effect === undefined) throw malformedPolicy('Missing required field Effect');
  if (effect !== 'Allow' && effect !== 'Deny') throw malformedPolicy(`Invalid effect: ${String(effect)}`);
  if (raw.Sid !== undefined && typeof raw.Sid !== 'string') throw malformedPolicy('Invalid Sid: expected a string');
  const principal = onePair(raw, 'Principal');
  // IAM: "NotPrincipal must be used with Effect Deny; using it with Allow is not supported."
  if (principal.not && effect === 'Allow') throw malformedPolicy('Invalid principal in policy: NotPrincipal can only be used with "Effect": "Deny"');
  const action = onePair(raw, 'Action');
  const resource = onePair(raw, 'Resource');
  return {
    ...(raw.Sid === undefined ? {} : { sid: raw.Sid as string }),
    effect,
    principal: { not: principal.not, value: parsePrincipal(principal.value) },
    action: { not: action.not, patterns: parseActions(action.value) },
    resource: { not: resource.not, patterns: parseResources(resource.value, bucket) },
    condition: parseCondition(raw.Condition),
  };
}

/** Parses and checks the policy document `text` for `bucket`; MalformedPolicy when it is bad. */
export function parseBucketPolicy(text: string, bucket: string): BucketPolicy {
  if (new TextEncoder().encode(text).length > MAX_POLICY_BYTES) throw malformedPolicy('Policies must be less than 20 KB');
  if (!text.trimStart().startsWith('{')) throw malformedPolicy("Policies must be valid JSON and the first byte must be '{'");
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw malformedPolicy('This policy contains invalid Json');
  }
  if (!isObject(doc)) throw malformedPolicy("Policies must be valid JSON and the first byte must be '{'");
  for (const field of Object.keys(doc)) if (!POLICY_FIELDS.has(field)) throw malformedPolicy(`Unknown field ${field}`);
  if (doc.Version !== undefined && doc.Version !== '2012-10-17' && doc.Version !== '2008-10-17')
    throw malformedPolicy('The policy must contain a valid version string');
  if (doc.Id !== undefined && typeof doc.Id !== 'string') throw malformedPolicy('Invalid Id: expected a string');
  const raw = doc.Statement;
  if (raw === undefined) throw malformedPolicy('Missing required field Statement');
  const list = Array.isArray(raw) ? raw : [raw];
  if (list.length === 0) throw malformedPolicy('Could not parse the policy: Statement is empty!');
  const statements = list.map((s) => parseStatement(s, bucket));
  // Repeated Sids are accepted: IAM requires them unique in its own policies, but S3 bucket
  // policies holding repeated Sids exist (cloud-custodian/cloud-custodian#3609), a Sid plays no
  // part in evaluation, and tools that write them (ceph/s3-tests' log bucket policies) would be
  // refused for a label.
  return { statements };
}
