/**
 * Authentication of an S3 POST Object (a browser form upload): the request itself is not signed;
 * its form carries a policy document (base64 JSON: an expiration and a list of conditions) and a
 * signature of that base64 text, and S3 accepts the form when the signature is good, the policy
 * has not expired and every condition holds for the form's fields.
 *
 *   SigV4: x-amz-algorithm AWS4-HMAC-SHA256, x-amz-credential AKID/date/region/s3/aws4_request,
 *          x-amz-date, x-amz-signature = hex(HMAC-SHA256(signing key, policy))
 *   SigV2: AWSAccessKeyId, signature = base64(HMAC-SHA1(secret, policy))
 *   none:  no policy and no signature: an anonymous upload (only with allowAnonymous)
 *
 * Conditions: `{"field": "value"}` and `["eq", "$field", "value"]` (exact), `["starts-with",
 * "$field", "prefix"]` ("" allows any value), `["content-length-range", min, max]` (the file's
 * size, checked by the caller before and while it streams). Field names and operators are
 * case-insensitive, values case-sensitive; a field the form lacks is "". Every field of the form
 * must be named by a condition, as S3 requires ("Extra input fields"), except policy, signature,
 * x-amz-signature, AWSAccessKeyId, file and x-ignore-*; the bucket counts as a field. Our one
 * choice beyond S3's documentation: x-amz-checksum-* need no condition (a checksum can only make
 * the upload fail; ceph/s3-tests posts one unconditioned).
 * Errors as S3 answers them: a malformed policy is InvalidPolicyDocument (400), a missing field
 * InvalidArgument (400), a bad key InvalidAccessKeyId and a bad signature SignatureDoesNotMatch
 * (403), an expired policy or a failed condition AccessDenied "Invalid according to Policy: ...".
 * Spec: S3 "Browser-based uploads using POST (AWS Signature Version 4)": "Creating a POST policy",
 * "POST Object"; the SigV2 form of the legacy "Browser-Based Uploads Using POST".
 */
import { fromBase64, timingSafeEqual, toBase64, toHex, utf8 } from '../model/bytes.ts';
import { S3Error } from '../model/errors.ts';
import { parseAmzDate } from './amz-date.ts';
import { parseCredential, secretFor } from './credential.ts';
import { ALGORITHM, signingKey } from './sigv4.ts';

/** The file's allowed size, from the policy's content-length-range conditions. */
export interface LengthRange {
  min: number;
  max: number;
}

export interface VerifiedPostForm {
  /** Who signed the policy; null for an anonymous form. */
  accessKeyId: string | null;
  authType: 'sigv4-post' | 'sigv2-post' | 'anonymous';
  /** The size the policy allows the file; null when it says nothing. */
  lengthRange: LengthRange | null;
}

export interface PostPolicyOptions {
  credentials: ReadonlyMap<string, string>;
  /** The only region a SigV4 credential may name (when set). */
  region?: string;
  allowAnonymous?: boolean;
  now?: Date;
}

type Condition = { op: 'eq' | 'starts-with'; field: string; value: string; text: string } | { op: 'content-length-range'; min: number; max: number };

/** Fields that need no condition (S3's list, and our x-amz-checksum-* choice). */
const UNCONDITIONED = /^(policy|signature|x-amz-signature|awsaccesskeyid|file|x-ignore-.*|x-amz-checksum-.*)$/;

const invalidPolicy = (why: string) => new S3Error('InvalidPolicyDocument', `Invalid Policy: ${why}`);
const notAllowed = (why: string) => new S3Error('AccessDenied', `Invalid according to Policy: ${why}`);
const missingField = (name: string) =>
  new S3Error('InvalidArgument', `Bucket POST must contain a field named '${name}'.  If it is specified, please check the order of the fields.`, {
    ArgumentName: name,
    ArgumentValue: '',
  });

/** `2026-12-01T20:00:00Z` or `2026-12-01T20:00:00.000Z` (ISO 8601, UTC), as S3 accepts; null otherwise. */
export function parseExpiration(text: unknown): Date | null {
  if (typeof text !== 'string') return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,3})?Z$/.exec(text);
  if (!m) return null;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 19) !== text.slice(0, 19) ? null : date;
}

function lengthBound(v: unknown): number | null {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  if (typeof v === 'string' && /^\d{1,15}$/.test(v)) return Number(v);
  return null;
}

/** The policy document: its expiration and conditions, or InvalidPolicyDocument. */
export function parsePolicy(policyBase64: string): { expiration: Date; conditions: Condition[] } {
  const bytes = fromBase64(policyBase64.replace(/\s+/g, ''));
  let doc: unknown;
  try {
    if (!bytes) throw new Error('not base64');
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes));
  } catch {
    throw invalidPolicy('Invalid JSON.');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw invalidPolicy('Invalid JSON.');
  const { expiration: expText, conditions: list } = doc as Record<string, unknown>;
  if (expText === undefined) throw invalidPolicy('Policy missing expiration.');
  const expiration = parseExpiration(expText);
  if (!expiration) throw invalidPolicy(`Invalid 'expiration' value: '${String(expText)}'`);
  if (list === undefined) throw invalidPolicy('Policy missing conditions.');
  if (!Array.isArray(list)) throw invalidPolicy("Invalid 'conditions' value: must be a list.");
  const conditions = list.map((c): Condition => {
    if (Array.isArray(c)) {
      const op = typeof c[0] === 'string' ? c[0].toLowerCase() : '';
      if (op === 'content-length-range') {
        const min = lengthBound(c[1]);
        const max = lengthBound(c[2]);
        if (c.length !== 3 || min === null || max === null || min > max) throw invalidPolicy(`Invalid content-length-range condition: ${JSON.stringify(c)}`);
        return { op, min, max };
      }
      if (op !== 'eq' && op !== 'starts-with') throw invalidPolicy(`Invalid condition operator: ${JSON.stringify(c[0])}`);
      if (c.length !== 3 || typeof c[1] !== 'string' || !c[1].startsWith('$') || typeof c[2] !== 'string') {
        throw invalidPolicy(`Invalid ${op} condition: ${JSON.stringify(c)}`);
      }
      return { op, field: c[1].slice(1).toLowerCase(), value: c[2], text: JSON.stringify(c) };
    }
    if (typeof c === 'object' && c !== null) {
      const entries = Object.entries(c);
      if (entries.length !== 1 || typeof entries[0]![1] !== 'string')
        throw invalidPolicy('Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.');
      const [field, value] = entries[0] as [string, string];
      return { op: 'eq', field: field.replace(/^\$/, '').toLowerCase(), value, text: JSON.stringify(['eq', '$' + field, value]) };
    }
    throw invalidPolicy(`Invalid condition: ${JSON.stringify(c)}`);
  });
  return { expiration, conditions };
}

/**
 * Checks the conditions against `fields` (lower-case names; `key` with `${filename}` already
 * replaced; `bucket` the bucket the form was posted to). Returns the allowed file size.
 */
export function checkConditions(conditions: Condition[], fields: ReadonlyMap<string, string>): LengthRange | null {
  let range = null as LengthRange | null;
  const covered = new Set<string>();
  for (const c of conditions) {
    if (c.op === 'content-length-range') {
      range = { min: Math.max(range?.min ?? 0, c.min), max: Math.min(range?.max ?? Infinity, c.max) };
      continue;
    }
    covered.add(c.field);
    const value = fields.get(c.field) ?? '';
    if (c.op === 'eq' ? value !== c.value : !value.startsWith(c.value)) throw notAllowed(`Policy Condition failed: ${c.text}`);
  }
  for (const name of fields.keys()) {
    if (!covered.has(name) && !UNCONDITIONED.test(name)) throw notAllowed(`Extra input fields: ${name}`);
  }
  return range;
}

async function hmacSha1Base64(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', utf8.encode(secret), { name: 'HMAC', hash: 'SHA-1' }, false, ['sign']);
  return toBase64(await crypto.subtle.sign('HMAC', key, utf8.encode(text)));
}

/**
 * Verifies the form's signature and policy. `fields` are the form's fields by lower-case name,
 * with `bucket` set to the bucket posted to and `key` after `${filename}`.
 */
export async function verifyPostForm(fields: ReadonlyMap<string, string>, opts: PostPolicyOptions): Promise<VerifiedPostForm> {
  const get = (name: string) => fields.get(name);
  const policy = get('policy');
  const v4 = ['x-amz-algorithm', 'x-amz-credential', 'x-amz-date', 'x-amz-signature'].some((n) => fields.has(n));
  const v2 = fields.has('awsaccesskeyid') || fields.has('signature');
  if (v4 && v2)
    throw new S3Error('InvalidArgument', 'Only one auth mechanism allowed; only the X-Amz-Algorithm or the AWSAccessKeyId form field should be specified', {
      ArgumentName: 'x-amz-algorithm',
    });
  if (!v4 && !v2) {
    if (policy !== undefined) throw missingField(fields.has('x-amz-signature') ? 'x-amz-algorithm' : 'AWSAccessKeyId');
    if (!opts.allowAnonymous) throw new S3Error('AccessDenied');
    return { accessKeyId: null, authType: 'anonymous', lengthRange: null };
  }
  let accessKeyId: string;
  let secret: string;
  let expected: () => Promise<string>;
  let provided: string;
  if (v4) {
    for (const name of ['x-amz-algorithm', 'x-amz-credential', 'x-amz-date', 'x-amz-signature', 'policy']) if (!fields.has(name)) throw missingField(name);
    if (get('x-amz-algorithm') !== ALGORITHM)
      throw new S3Error('InvalidArgument', `Invalid algorithm: ${get('x-amz-algorithm')}; expecting ${ALGORITHM}`, {
        ArgumentName: 'x-amz-algorithm',
        ArgumentValue: get('x-amz-algorithm')!,
      });
    const credential = (() => {
      try {
        return parseCredential(get('x-amz-credential')!, 'AuthorizationQueryParametersError');
      } catch (err) {
        throw new S3Error('InvalidArgument', (err as Error).message, { ArgumentName: 'x-amz-credential', ArgumentValue: get('x-amz-credential')! });
      }
    })();
    const date = get('x-amz-date')!;
    if (!parseAmzDate(date)) throw new S3Error('InvalidArgument', `Invalid x-amz-date: ${date}`, { ArgumentName: 'x-amz-date', ArgumentValue: date });
    if (opts.region !== undefined && credential.region !== opts.region) {
      throw new S3Error('InvalidArgument', `The region '${credential.region}' is wrong; expecting '${opts.region}'`, {
        ArgumentName: 'x-amz-credential',
        Region: opts.region,
      });
    }
    if (credential.date !== date.slice(0, 8))
      throw new S3Error('InvalidArgument', 'Invalid credential date. Date is not the same as x-amz-date.', { ArgumentName: 'x-amz-credential' });
    accessKeyId = credential.accessKeyId;
    secret = secretFor(opts.credentials, accessKeyId);
    provided = get('x-amz-signature')!.trim().toLowerCase();
    expected = async () => toHex(await crypto.subtle.sign('HMAC', await signingKey(secret, credential.date, credential.region, 's3'), utf8.encode(policy!)));
  } else {
    for (const name of ['AWSAccessKeyId', 'signature', 'policy']) if (!fields.has(name.toLowerCase())) throw missingField(name);
    accessKeyId = get('awsaccesskeyid')!;
    secret = secretFor(opts.credentials, accessKeyId);
    // base64 has no spaces: a '+' that became one on the way is a plus.
    provided = get('signature')!.trim().replace(/ /g, '+');
    expected = () => hmacSha1Base64(secret, policy!);
  }
  const parsed = parsePolicy(policy!);
  if (!timingSafeEqual(await expected(), provided)) {
    throw new S3Error('SignatureDoesNotMatch', undefined, { AWSAccessKeyId: accessKeyId, StringToSign: policy!, SignatureProvided: provided });
  }
  if ((opts.now ?? new Date()).getTime() > parsed.expiration.getTime()) throw notAllowed('Policy expired.');
  const lengthRange = checkConditions(parsed.conditions, fields);
  return { accessKeyId, authType: v4 ? 'sigv4-post' : 'sigv2-post', lengthRange };
}
