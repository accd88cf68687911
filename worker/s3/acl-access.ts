/**
 * Which grant of an ACL (model/acl.ts) lets a caller of another account, or an anonymous one, do
 * each operation, as AWS maps ACL permissions to actions (S3 User Guide, "Mapping of ACL
 * permissions and access policy permissions"): the bucket's ACL for listing it, for writing and
 * deleting any object in it (the multipart steps included) and for its own ACL; the object's ACL
 * for reading it and its ACL. Operations in neither table no ACL lets in (a bucket's other
 * settings are its owner's, or a policy's to grant). s3/policy-gate.ts asks, when neither the
 * caller's account nor the bucket's policy lets it in.
 */
import { STRANGER } from '../model/account.ts';
import { aclAllows, bucketAcl, objectAcl, ownershipOf, type Permission, type StoredObjectAcl } from '../model/acl.ts';
import type { BucketSettings } from '../model/bucket-settings.ts';
import { S3Error } from '../model/errors.ts';
import type { ObjectStore } from '../model/object-store.ts';
import type { SseRequest } from '../model/sse.ts';
import type { S3Operation } from './operations.ts';

/** Operations the bucket's ACL decides, and the permission each needs. */
const BUCKET_GRANTS: Partial<Record<S3Operation, Permission>> = {
  ListObjects: 'READ',
  ListObjectsV2: 'READ',
  ListObjectVersions: 'READ',
  ListMultipartUploads: 'READ',
  HeadBucket: 'READ',
  PutObject: 'WRITE',
  CopyObject: 'WRITE',
  DeleteObject: 'WRITE',
  DeleteObjects: 'WRITE',
  CreateMultipartUpload: 'WRITE',
  UploadPart: 'WRITE',
  UploadPartCopy: 'WRITE',
  CompleteMultipartUpload: 'WRITE',
  AbortMultipartUpload: 'WRITE',
  ListParts: 'WRITE',
  GetBucketAcl: 'READ_ACP',
  PutBucketAcl: 'WRITE_ACP',
};

/** Operations the object's ACL decides. */
const OBJECT_GRANTS: Partial<Record<S3Operation, Permission>> = {
  GetObject: 'READ',
  HeadObject: 'READ',
  GetObjectAttributes: 'READ',
  GetObjectAcl: 'READ_ACP',
  PutObjectAcl: 'WRITE_ACP',
};

export interface AclFacts {
  /** The bucket's request-path settings (its ownership and ACL rows). */
  settings: BucketSettings;
  /** The bucket's owning account. */
  owner: string;
  /** The caller's account; STRANGER (model/account.ts) for an anonymous request. */
  account: string | null;
  /** The bucket's public access block has IgnorePublicAcls. */
  ignorePublic: boolean;
}

/**
 * Whether the bucket's ACLs let the caller do `op`: false on a bucket whose Object Ownership
 * disables ACLs. `readObjectAcl` reads the addressed object's (null: no such object or version); it is
 * called only for an operation the object's ACL decides. A missing object lets in only a caller
 * the bucket's ACL lets list it (its 404 tells nothing a listing would not; others get 403, as S3).
 * An object's owner may always read and replace its ACL (S3: READ_ACP and WRITE_ACP are implicit).
 */
export async function aclLetsIn(f: AclFacts, op: S3Operation, readObjectAcl: () => Promise<StoredObjectAcl | undefined | null>): Promise<boolean> {
  if (!ownershipOf(f.settings.rows.ownership).aclsEnabled) return false;
  const who = f.account === STRANGER ? null : f.account;
  const onBucket = bucketAcl(f.settings.rows.acl, f.owner);
  const bucketNeed = BUCKET_GRANTS[op];
  if (bucketNeed) return aclAllows(onBucket, who, bucketNeed, f.ignorePublic);
  const objectNeed = OBJECT_GRANTS[op];
  if (!objectNeed) return false;
  const stored = await readObjectAcl();
  if (stored === null) return aclAllows(onBucket, who, 'READ', f.ignorePublic);
  const acl = objectAcl(stored, f.owner);
  if (who !== null && who === acl.owner && (objectNeed === 'READ_ACP' || objectNeed === 'WRITE_ACP')) return true;
  return aclAllows(acl, who, objectNeed, f.ignorePublic);
}

/**
 * The ACL the object (or version) keeps in its metadata (undefined: its bucket owner's alone); null
 * when there is no object to read (no such key or version, a delete marker: the handler answers).
 * `sse`: the request's SSE-C key, which an SSE-C object's head needs. Any other refusal (such an
 * object read without its key) is undefined, the bucket owner's alone: it fails closed, never
 * "missing" (which a bucket READ grant would let through to the handler).
 */
export async function objectAclOf(
  store: ObjectStore,
  bucket: string,
  key: string,
  versionId: string | undefined,
  sse: SseRequest | null = null,
): Promise<StoredObjectAcl | undefined | null> {
  try {
    const head = await store.headObject(bucket, key, { conditions: {}, sse, ...(versionId === undefined ? {} : { versionId }) });
    return head.metadata.acl;
  } catch (err) {
    if (!(err instanceof S3Error)) throw err;
    return ['NoSuchKey', 'NoSuchVersion', 'MethodNotAllowed'].includes(err.code) ? null : undefined;
  }
}
