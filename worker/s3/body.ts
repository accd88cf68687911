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
  return readSmallBody(s3, {
    digest: options.requireDigest ? 'required' : 'never',
    max: s3.settings.maxXmlSize,
    tooLarge: () => malformedXml('document too large'),
    notUtf8: () => malformedXml('not UTF-8'),
  });
}

/**
 * A small request document of at most `max` bytes, as strict UTF-8. `digest`: Content-MD5 or a
 * flexible checksum required and verified, verified when present, or not read at all.
 */
export async function readSmallBody(
  s3: S3Context,
  options: { digest: 'required' | 'if-present' | 'never'; max: number; tooLarge: () => S3Error; notUtf8: () => S3Error },
): Promise<string> {
  const { headers } = s3;
  const verify = options.digest !== 'never';
  const contentMD5 = verify ? readContentMd5(headers) : null;
  const checksum = verify ? readChecksumRequest(headers, s3.auth.checksum) : null;
  if (options.digest === 'required' && contentMD5 === null && checksum?.expected == null) {
    throw new S3Error('InvalidRequest', 'Missing required header for this request: Content-MD5');
  }
  const { max } = options;
  if ((s3.auth.decodedContentLength ?? 0) > max) throw options.tooLarge();
  const chunks: Uint8Array[] = [];
  try {
    // A copy: the gate's body reuses its buffer (a chunk is valid until the next read).
    await digestBody(limitBody(s3.auth.body, max), { contentMD5, checksum }, (c) => void chunks.push(c.slice()));
  } catch (err) {
    if (err instanceof S3Error && err.code === 'EntityTooLarge') throw options.tooLarge();
    throw err;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(concatBytes(chunks));
  } catch {
    throw options.notUtf8();
  }
}
