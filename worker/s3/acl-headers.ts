/**
 * The ACL headers every request may carry, checked when the operation is detected (before the
 * gate reads a body): `x-amz-acl` other than `private` / `bucket-owner-full-control`, or an
 * `x-amz-grant-*` granting anything but the bucket owner's (model/account.ts) FULL_CONTROL, is 400
 * AccessControlListNotSupported, as on an S3 bucket whose Object Ownership is "bucket owner
 * enforced". Headers asking for a public ACL (model/public-access-block.ts) are left to the check
 * app.ts makes after the gate, which first refuses them with 403 AccessDenied on a bucket whose
 * public access block has BlockPublicAcls (policy-gate.ts), as S3 does. The ACL operations
 * themselves are in acl.ts.
 * Spec: S3 "Controlling ownership of objects and disabling ACLs for your bucket".
 */
import { S3Error } from '../model/errors.ts';
import { GRANT_HEADERS, hasPublicAclHeaders } from '../model/public-access-block.ts';
import { DEFAULT_ACCOUNT } from '../model/account.ts';

const OWNER_ONLY_CANNED = ['private', 'bucket-owner-full-control'];
export { GRANT_HEADERS };

export const notSupported = () => new S3Error('AccessControlListNotSupported');

/** `id="..."` grantees of a grant header, all the owner's (FULL_CONTROL only); `owner` null: any id (the owner is not known yet). */
function ownerOnlyGrant(name: string, value: string, owner: string | null): boolean {
  if (name !== 'x-amz-grant-full-control') return false;
  const grantees = value
    .split(',')
    .map((g) => g.trim())
    .filter(Boolean);
  return (
    grantees.length > 0 &&
    grantees.every((g) => {
      const id = /^id\s*=\s*"?([^"]*)"?$/i.exec(g)?.[1];
      return id !== undefined && (owner === null || id === owner);
    })
  );
}

/**
 * Refuses `x-amz-acl` and `x-amz-grant-*` headers that grant anything beyond the owner's
 * FULL_CONTROL. `deferPublic`: headers asking for a public ACL pass (the gate judges them first).
 */
export function assertOwnerOnlyAclHeaders(headers: Headers, deferPublic = false, owner: string | null = DEFAULT_ACCOUNT): void {
  if (deferPublic && hasPublicAclHeaders(headers)) return;
  const acl = headers.get('x-amz-acl');
  if (acl !== null && !OWNER_ONLY_CANNED.includes(acl.trim())) throw notSupported();
  for (const name of GRANT_HEADERS) {
    const value = headers.get(name);
    if (value !== null && !ownerOnlyGrant(name, value, owner)) throw notSupported();
  }
}
