/**
 * Accounts (issue 43): who owns a bucket. Every access key belongs to one account (config
 * `credentials[].account`; absent: the gateway's own, DEFAULT_ACCOUNT), and a bucket belongs to
 * the account of the key that created it. Within its account a key does what its scope says
 * (model/access.ts), as before accounts existed; a key of another account reaches a bucket only
 * where the bucket's policy Allows its account (or the key) the action, as on AWS, where a
 * cross-account request needs the resource's policy to grant it besides the caller's own
 * permissions (IAM User Guide, "Cross-account policy evaluation logic"), or where an ACL of a
 * bucket with ACLs enabled grants it (model/acl.ts); s3/policy-gate.ts enforces both. ListBuckets shows a key only its own account's buckets; re-creating another
 * account's bucket is 409 BucketAlreadyExists.
 * An account id is what listings and ACLs report as the owner's canonical id and display name,
 * and what a policy names as a principal: the id itself, `arn:aws:iam::<id>:root`, or a key of it
 * as `arn:aws:iam::<id>:user/<access key id>`.
 * Stored: a bucket's owner is its `owner` state row (model/bucket-settings.ts, so the gate has it
 * with the policy, at no call of its own), absent for the default account: every bucket created
 * before accounts existed is the default account's, with no migration.
 */

/** The bucket's state row naming its owner (model/bucket-settings.ts REQUEST_SETTINGS). */
export const OWNER_ROW = 'owner';

/** The gateway's own account: keys configured without one, buckets without an owner row. */
export const DEFAULT_ACCOUNT = 'shardgate';

/**
 * The account of anonymous requests let in by bucket policies (config `allowAnonymous: "policy"`):
 * not an id ACCOUNT_ID accepts, so no bucket is ever its own and no principal but "*" names it.
 */
export const STRANGER = '-anonymous';

/** What an account id may be: letters, digits, `.`, `_`, `-`; 1-64, starting with a letter or digit. */
export const ACCOUNT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The owner a bucket's `owner` row names (null: the default account). */
export function bucketOwner(row: string | null): string {
  return row ?? DEFAULT_ACCOUNT;
}

/** The `owner` row a bucket created by `account` stores (null for the default account, named or absent: no row). */
export function ownerRow(account: string | undefined): string | null {
  return account === undefined || account === DEFAULT_ACCOUNT ? null : account;
}
