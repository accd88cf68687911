/**
 * A bucket's public access block (PutPublicAccessBlock): four flags, stored as JSON in the
 * bucket's state row PUBLIC_ACCESS_BLOCK_ROW, one of the request-path settings
 * (bucket-settings.ts), and what "public" means for an ACL, as AWS decides it.
 * What each flag does here (docs/COMPATIBILITY.md, "Public access block"):
 *   BlockPublicAcls       a request carrying a public ACL (header or AccessControlPolicy body) is
 *                         403 AccessDenied (s3/policy-gate.ts, s3/acl.ts), before anything else
 *                         is said of it (400 AccessControlListNotSupported on a bucket whose
 *                         ACLs are disabled); ACLs already stored stay, and still count;
 *   IgnorePublicAcls      grants to AllUsers and AuthenticatedUsers let no one in (model/acl.ts
 *                         aclAllows; they stay stored and shown), grants to accounts still do;
 *   BlockPublicPolicy     PutBucketPolicy of a public policy (policy-eval.ts policyIsPublic) is 403
 *                         AccessDenied, checked in the catalog's transaction that stores it;
 *   RestrictPublicBuckets anonymous requests (allowAnonymous) are 403 AccessDenied on the
 *                         bucket, and a public policy lets no other account's key in
 *                         (model/account.ts); the owner's account's keys pass.
 * Spec: S3 API reference, PublicAccessBlockConfiguration; S3 User Guide, "Blocking public access
 * to your Amazon S3 storage", "The meaning of public" (an ACL is public when it grants anything to
 * the AllUsers or AuthenticatedUsers group).
 */

export interface PublicAccessBlock {
  blockPublicAcls: boolean;
  ignorePublicAcls: boolean;
  blockPublicPolicy: boolean;
  restrictPublicBuckets: boolean;
}

/** The catalog state row that holds it (JSON of PublicAccessBlock). */
export const PUBLIC_ACCESS_BLOCK_ROW = 'public-access-block';

/** The XML element names, in AWS's order, with their field. */
export const PUBLIC_ACCESS_BLOCK_FIELDS = [
  ['BlockPublicAcls', 'blockPublicAcls'],
  ['IgnorePublicAcls', 'ignorePublicAcls'],
  ['BlockPublicPolicy', 'blockPublicPolicy'],
  ['RestrictPublicBuckets', 'restrictPublicBuckets'],
] as const satisfies readonly (readonly [string, keyof PublicAccessBlock])[];

/** The stored row's configuration; null when absent. A row that does not parse blocks everything (fails closed). */
export function parseStoredPublicAccessBlock(text: string | null): PublicAccessBlock | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as Partial<Record<keyof PublicAccessBlock, unknown>>;
    return {
      blockPublicAcls: v.blockPublicAcls === true,
      ignorePublicAcls: v.ignorePublicAcls === true,
      blockPublicPolicy: v.blockPublicPolicy === true,
      restrictPublicBuckets: v.restrictPublicBuckets === true,
    };
  } catch {
    return { blockPublicAcls: true, ignorePublicAcls: true, blockPublicPolicy: true, restrictPublicBuckets: true };
  }
}

export const storedPublicAccessBlock = (p: PublicAccessBlock): string => JSON.stringify(p);

/** The groups whose grants make an ACL public. */
const PUBLIC_GROUPS = ['http://acs.amazonaws.com/groups/global/AllUsers', 'http://acs.amazonaws.com/groups/global/AuthenticatedUsers'];

/** Canned ACLs that grant to AllUsers or AuthenticatedUsers. */
const PUBLIC_CANNED = ['public-read', 'public-read-write', 'authenticated-read'];

export const GRANT_HEADERS = ['x-amz-grant-read', 'x-amz-grant-write', 'x-amz-grant-read-acp', 'x-amz-grant-write-acp', 'x-amz-grant-full-control'];

/** Whether a grantee URI (an `uri="..."` of a grant header, or a Grantee's `<URI>`) names a public group. */
export function isPublicGroup(uri: string): boolean {
  const u = uri
    .trim()
    .replace(/^"|"$/g, '')
    .replace(/^https:/i, 'http:');
  return PUBLIC_GROUPS.includes(u);
}

/** Whether the request's `x-amz-acl` or `x-amz-grant-*` headers ask for a public ACL. */
export function hasPublicAclHeaders(headers: Headers): boolean {
  const acl = headers.get('x-amz-acl');
  if (acl !== null && PUBLIC_CANNED.includes(acl.trim().toLowerCase())) return true;
  for (const name of GRANT_HEADERS) {
    const value = headers.get(name);
    if (value === null) continue;
    for (const grantee of value.split(',')) {
      const m = /^\s*uri\s*=\s*(.*)$/i.exec(grantee);
      if (m && isPublicGroup(m[1]!)) return true;
    }
  }
  return false;
}
