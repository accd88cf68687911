/**
 * RestoreObject (issue 44). Every storage class of this gateway is a storage policy whose versions
 * read at once: none is archived, so none needs or takes a restore. S3 answers a restore of an
 * object that is not archived (STANDARD, STANDARD_IA, GLACIER_IR, ...) 403 InvalidObjectState,
 * "Restore is not allowed for the object's current storage class"; so does this gateway, for
 * every class, once the version is found (NoSuchKey, NoSuchVersion first). The request body is
 * not read: whatever it asks, there is nothing to restore. docs/COMPATIBILITY.md "Storage classes".
 */
import { S3Error } from '../model/errors.ts';
import type { S3Context } from './context.ts';
import { readVersionId } from './versioning.ts';

export async function RestoreObject(s3: S3Context): Promise<Response> {
  const versionId = readVersionId(s3.query);
  const head = await s3.store.headObject(s3.bucket!, s3.key!, { conditions: {}, ...(versionId === undefined ? {} : { versionId }) });
  throw new S3Error('InvalidObjectState', "Restore is not allowed for the object's current storage class.", {
    StorageClass: head.metadata.storageClass ?? 'STANDARD',
  });
}
