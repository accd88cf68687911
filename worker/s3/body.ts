/**
 * Reading a small request document (XML) from the authenticated body: bounded by the configured
 * maximum (larger is MalformedXML, read no further), optionally verified against Content-MD5 /
 * x-amz-checksum-* (header or trailer), decoded as strict UTF-8.
 * Spec: S3 DeleteObjects (needs Content-MD5 or a flexible checksum), CompleteMultipartUpload.
 */
import { digestBody } from '../model/digest.ts';
import { concatBytes } from '../model/bytes.ts';
import { readContentMd5 } from '../model/checksums.ts';
import { readChecksumRequest } from './checksum-headers.ts';
import type { S3Context } from './context.ts';
import { S3Error } from '../model/errors.ts';
import { limitBody } from './request.ts';
import { malformedXml } from './xml-parse.ts';

export async function readXmlBody(s3: S3Context, options: { requireDigest: boolean }): Promise<string> {
  const { headers } = s3;
  const contentMD5 = options.requireDigest ? readContentMd5(headers) : null;
  const checksum = options.requireDigest ? readChecksumRequest(headers, s3.auth.checksum) : null;
  if (options.requireDigest && contentMD5 === null && checksum?.expected == null) {
    throw new S3Error('InvalidRequest', 'Missing required header for this request: Content-MD5');
  }
  const max = s3.settings.maxXmlSize;
  if ((s3.auth.decodedContentLength ?? 0) > max) throw malformedXml('document too large');
  const chunks: Uint8Array[] = [];
  try {
    // A copy: the gate's body reuses its buffer (a chunk is valid until the next read).
    await digestBody(limitBody(s3.auth.body, max), { contentMD5, checksum }, (c) => void chunks.push(c.slice()));
  } catch (err) {
    if (err instanceof S3Error && err.code === 'EntityTooLarge') throw malformedXml('document too large');
    throw err;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(concatBytes(chunks));
  } catch {
    throw malformedXml('not UTF-8');
  }
}
