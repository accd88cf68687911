/**
 * What an access key may do (issue 21): its scope, a list of grants, each naming buckets (names,
 * or patterns with `*` and `?`), optionally key prefixes, and actions:
 *   read    GetObject, HeadObject; the source of CopyObject and UploadPartCopy
 *   list    ListObjects(V2), ListMultipartUploads (the listing prefix must lie inside the
 *           grant's prefixes); HeadBucket, GetBucketLocation, GetBucketVersioning, GetBucketCors
 *   write   PutObject, CopyObject (target), the multipart operations; CreateBucket and bucket
 *           CORS only with a grant that has no prefixes
 *   delete  DeleteObject, DeleteObjects (entry by entry); DeleteBucket without prefixes
 *   admin   the operator API (/_shardgate/admin/), metrics and the signed status: gateway-wide,
 *           so only in a grant for every bucket ("*") without prefixes
 *   legal-hold  PutObjectLegalHold, and the x-amz-object-lock-legal-hold header of a write
 *               (AWS's s3:PutObjectLegalHold)
 *   retention   PutObjectRetention, and the x-amz-object-lock-mode / -retain-until-date headers
 *               of a write (s3:PutObjectRetention)
 *   bypass-governance  x-amz-bypass-governance-retention is honoured on that key
 *               (s3:BypassGovernanceRetention)
 * Object Lock (issue 37): these three are granted only explicitly, never implied by write (a key
 * with write could remove a legal hold and delete the version, or set COMPLIANCE retention for
 * millennia on versions others wrote). GetObjectRetention and GetObjectLegalHold need read,
 * PutObjectLockConfiguration write on the whole bucket; a bucket's default retention applies to
 * any write, as on AWS.
 * A key sees, in ListBuckets, only the buckets one of its grants names. A key configured without
 * a scope may do everything (FULL_ACCESS; the deployment review warns about each such key).
 * Pure logic: the config (config.ts) builds it, the gate attaches it to the request, s3/authorize.ts
 * and the operator routes ask it. Known gaps: no deny rules, no conditions (IP, time), no
 * per-operation granularity finer than the five actions; a bucket policy (bucket-policy.ts,
 * s3/policy-gate.ts) adds those per bucket, as Deny statements that narrow a scope, never widen it.
 */

import { DEFAULT_ACCOUNT, STRANGER } from './account.ts';
import { glob } from './glob.ts';

export const ACTIONS = ['read', 'list', 'write', 'delete', 'admin', 'legal-hold', 'retention', 'bypass-governance'] as const;
export type Action = (typeof ACTIONS)[number];

export interface Grant {
  /** Bucket names or patterns (`*` any run of characters, `?` one). */
  buckets: readonly string[];
  /** Object key prefixes; absent or empty: every key of the buckets. */
  prefixes?: readonly string[];
  actions: readonly Action[];
}

/** `*` and `?` wildcards, everything else literal, anchored at both ends (glob.ts: no backtracking). */
function patternMatcher(pattern: string): (name: string) => boolean {
  if (!/[*?]/.test(pattern)) return (name) => name === pattern;
  const g = glob(pattern);
  return (name) => g.matches(name);
}

interface CompiledGrant {
  bucket: (name: string) => boolean;
  prefixes: readonly string[];
  actions: ReadonlySet<Action>;
}

export class Access {
  private readonly compiled: CompiledGrant[];
  /** The grants as configured (the console shows a key its own scope: app/console.ts). */
  readonly grants: readonly Grant[];
  /** Whether the key may use the operator API, metrics and the signed status. */
  readonly admin: boolean;
  /** The account the key belongs to (model/account.ts); null for anonymous requests. A scope
   *  reaches another account's buckets only where their policy Allows it (s3/policy-gate.ts). */
  readonly account: string | null;

  constructor(grants: readonly Grant[], account: string | null = DEFAULT_ACCOUNT) {
    this.grants = grants;
    this.account = account;
    this.compiled = grants.map((g) => {
      const matchers = g.buckets.map(patternMatcher);
      return { bucket: (name) => matchers.some((m) => m(name)), prefixes: g.prefixes ?? [], actions: new Set(g.actions) };
    });
    this.admin = grants.some((g) => g.actions.includes('admin') && g.buckets.includes('*') && !g.prefixes?.length);
  }

  /** `action` on object `key` of `bucket`. */
  allowsObject(action: Action, bucket: string, key: string): boolean {
    return this.compiled.some((g) => g.actions.has(action) && g.bucket(bucket) && (g.prefixes.length === 0 || g.prefixes.some((p) => key.startsWith(p))));
  }

  /** `action` on the whole bucket (a grant without prefixes). */
  allowsBucket(action: Action, bucket: string): boolean {
    return this.compiled.some((g) => g.actions.has(action) && g.bucket(bucket) && g.prefixes.length === 0);
  }

  /** `action` on some keys of the bucket at least (prefixes or not). */
  allowsSomeOf(action: Action, bucket: string): boolean {
    return this.compiled.some((g) => g.actions.has(action) && g.bucket(bucket));
  }

  /** Listing `bucket` under `prefix`: every key it can show must lie inside one grant's prefixes. */
  allowsListing(bucket: string, prefix: string): boolean {
    return this.compiled.some((g) => g.actions.has('list') && g.bucket(bucket) && (g.prefixes.length === 0 || g.prefixes.some((p) => prefix.startsWith(p))));
  }

  /** Whether ListBuckets shows `bucket` to this key. */
  seesBucket(bucket: string): boolean {
    return this.compiled.some((g) => [...g.actions].some((a) => a !== 'admin') && g.bucket(bucket));
  }
}

/** Every S3 action on every bucket, none of the operator's: a key of another account without a scope (model/account.ts). */
export const S3_ACCESS_GRANTS: readonly Grant[] = [{ buckets: ['*'], actions: ACTIONS.filter((a) => a !== 'admin') }];

/** Every action on every bucket: a key without a scope, and the development key. */
export const FULL_ACCESS = new Access([{ buckets: ['*'], actions: ACTIONS }]);

/** Anonymous requests (allowAnonymous): every S3 action, never the operator's, and never a
 *  governance bypass (as before issue 37). */
export const ANONYMOUS_ACCESS = new Access([{ buckets: ['*'], actions: ['read', 'list', 'write', 'delete', 'legal-hold', 'retention'] }], null);

/**
 * Anonymous requests of `allowAnonymous: "policy"`: the scope of ANONYMOUS_ACCESS, in no account a
 * bucket can have (model/account.ts STRANGER), so every bucket's policy must Allow each request.
 */
export const POLICY_ANONYMOUS_ACCESS = new Access(ANONYMOUS_ACCESS.grants, STRANGER);

/** Nothing at all (fails closed where a scope is missing). */
export const NO_ACCESS = new Access([], null);
