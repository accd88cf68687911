/**
 * DeleteObjects: `POST /bucket?delete` with `<Delete><Quiet/><Object><Key/></Object>...</Delete>`.
 * Spec: S3 DeleteObjects. At most 1000 keys (else MalformedXML); the body must carry
 * Content-MD5 or a flexible checksum (botocore >= 1.36 and the JS SDK send only a CRC); keys that
 * break the key rules get a per-key <Error>, the rest are deleted; Quiet lists errors only.
 * An entry outside the signer's scope (model/access.ts), or one the bucket policy denies
 * (s3:DeleteObject, policy-gate.ts), gets a per-key AccessDenied and is left alone, as S3 answers it.
 * An entry's <ETag>, <LastModifiedTime> and <Size> make its delete conditional (delete-conditions.ts;
 * it then needs read on the key too): a mismatch is that key's <Error> PreconditionFailed (no
 * current object, NoSuchKey), a bad value its InvalidArgument, and the other entries proceed.
 * `<VersionId>` removes that version; a result says what each delete did as DeleteObject's
 * headers do: <VersionId> (the version named), <DeleteMarker> and <DeleteMarkerVersionId> (the
 * marker added, or the version removed when it was a marker).
 * Each entry's outcome is noted for the access log (model/request-notes.ts).
 */
import { ANONYMOUS_ACCESS } from '../model/access.ts';
import { accessDenied } from './authorize.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { S3Error } from '../model/errors.ts';
import { noteDeleted } from '../model/request-notes.ts';
import { validateKey } from './request.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { checkVersionId } from './versioning.ts';
import { readBypass } from './object-lock.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml } from './xml-parse.ts';
import { entryDeleteConditions } from './delete-conditions.ts';
import { hasDeleteConditions } from '../model/conditions.ts';
import type { DeleteObjectsRequestEntry } from '../model/object-store.ts';

const MAX_KEYS = 1000;

export async function DeleteObjects(s3: S3Context): Promise<Response> {
  const root = expectRoot(parseXml(await readXmlBody(s3, { requireDigest: true })), 'Delete');
  const quiet = childText(root, 'Quiet')?.trim().toLowerCase() === 'true';
  const objects = childrenNamed(root, 'Object');
  if (objects.length === 0 || objects.length > MAX_KEYS) throw malformedXml(`1 to ${MAX_KEYS} objects`);

  const errors: string[] = [];
  const entries: DeleteObjectsRequestEntry[] = [];
  for (const obj of objects) {
    const key = childText(obj, 'Key');
    if (key === undefined) throw malformedXml('<Object> without <Key>');
    try {
      if (key === '') throw new S3Error('InvalidArgument', 'The key must not be empty.');
      const named = childText(obj, 'VersionId');
      const versionId = named === undefined ? undefined : checkVersionId(named.trim(), 'VersionId');
      const valid = validateKey(key);
      const conditions = entryDeleteConditions(childText(obj, 'ETag'), childText(obj, 'LastModifiedTime'), childText(obj, 'Size'));
      const access = s3.auth.access ?? ANONYMOUS_ACCESS;
      if (!access.allowsObject('delete', s3.bucket!, valid)) throw accessDenied();
      if (hasDeleteConditions(conditions) && !access.allowsObject('read', s3.bucket!, valid)) throw accessDenied();
      entries.push({ key: valid, ...(versionId === undefined ? {} : { versionId }), ...(hasDeleteConditions(conditions) ? { conditions } : {}) });
    } catch (err) {
      if (!(err instanceof S3Error)) throw err;
      errors.push(group('Error', el('Key', key), el('Code', err.code), el('Message', err.message)));
    }
  }
  // The policy is asked of each entry once, by the store, after its first catalog call has
  // confirmed the policy is current (issue 37: it was also asked here, twice the work).
  const policy = s3.policy;
  const refused = policy
    ? (key: string, versionId?: string) =>
        policy.deniesObject(versionId === undefined ? ['s3:DeleteObject'] : ['s3:DeleteObject', 's3:DeleteObjectVersion'], key)
    : undefined;
  const results = entries.length
    ? await s3.store.deleteObjects(s3.bucket!, entries, {
        bypassGovernance: readBypass(
          s3,
          entries.map((e) => e.key),
        ),
        ...(refused ? { refused } : {}),
      })
    : [];
  const deleted: string[] = [];
  results.forEach((r, i) => {
    const versionId = entries[i]!.versionId;
    // One access log record per entry (app/access-log.ts), when the bucket logs.
    noteDeleted({ key: r.key, versionId: versionId ?? r.versionId ?? null, status: r.error ? 200 : 204, error: r.error?.code ?? null });
    if (r.error) errors.push(group('Error', el('Key', r.key), el('VersionId', versionId), el('Code', r.error.code), el('Message', r.error.message)));
    else if (!quiet) {
      const marker = r.deleteMarker ? el('DeleteMarker', true) + el('DeleteMarkerVersionId', r.versionId) : '';
      deleted.push(group('Deleted', el('Key', r.key), el('VersionId', versionId), marker));
    }
  });
  return xmlResponse(xmlDocument('DeleteResult', ...deleted, ...errors));
}
