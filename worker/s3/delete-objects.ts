/**
 * DeleteObjects: `POST /bucket?delete` with `<Delete><Quiet/><Object><Key/></Object>...</Delete>`.
 * Spec: S3 DeleteObjects. At most 1000 keys (else MalformedXML); the body must carry
 * Content-MD5 or a flexible checksum (botocore >= 1.36 and the JS SDK send only a CRC); keys that
 * break the key rules get a per-key <Error>, the rest are deleted; Quiet lists errors only.
 * An entry outside the signer's scope (model/access.ts) gets a per-key AccessDenied and is
 * left alone, as S3 answers it.
 * Known gap: VersionId entries are reported as per-key NotImplemented errors.
 */
import { ANONYMOUS_ACCESS } from '../model/access.ts';
import { accessDenied } from './authorize.ts';
import { readXmlBody } from './body.ts';
import type { S3Context } from './context.ts';
import { S3Error } from '../model/errors.ts';
import { validateKey } from './request.ts';
import { el, group, xmlDocument, xmlResponse } from './xml.ts';
import { childText, childrenNamed, expectRoot, malformedXml, parseXml } from './xml-parse.ts';

const MAX_KEYS = 1000;

export async function DeleteObjects(s3: S3Context): Promise<Response> {
  const root = expectRoot(parseXml(await readXmlBody(s3, { requireDigest: true })), 'Delete');
  const quiet = childText(root, 'Quiet')?.trim().toLowerCase() === 'true';
  const objects = childrenNamed(root, 'Object');
  if (objects.length === 0 || objects.length > MAX_KEYS) throw malformedXml(`1 to ${MAX_KEYS} objects`);

  const errors: string[] = [];
  const keys: string[] = [];
  for (const obj of objects) {
    const key = childText(obj, 'Key');
    if (key === undefined) throw malformedXml('<Object> without <Key>');
    try {
      if (key === '') throw new S3Error('InvalidArgument', 'The key must not be empty.');
      if (childText(obj, 'VersionId') !== undefined) throw new S3Error('NotImplemented', 'Deleting a version is not implemented.');
      const valid = validateKey(key);
      if (!(s3.auth.access ?? ANONYMOUS_ACCESS).allowsObject('delete', s3.bucket!, valid)) throw accessDenied();
      keys.push(valid);
    } catch (err) {
      if (!(err instanceof S3Error)) throw err;
      errors.push(group('Error', el('Key', key), el('Code', err.code), el('Message', err.message)));
    }
  }
  const results = keys.length ? await s3.store.deleteObjects(s3.bucket!, keys) : [];
  const deleted: string[] = [];
  for (const r of results) {
    if (r.error) errors.push(group('Error', el('Key', r.key), el('Code', r.error.code), el('Message', r.error.message)));
    else if (!quiet) deleted.push(group('Deleted', el('Key', r.key)));
  }
  return xmlResponse(xmlDocument('DeleteResult', ...deleted, ...errors));
}
