/**
 * Keys with `.` or `..` path segments, which no S3 request can carry intact here: workerd (like
 * Cloudflare's edge, and every WHATWG URL parser) resolves dot segments (`.`, `..`, `%2E`,
 * `%2E%2E`) before the Worker sees the URL, while S3 clients sign the path as it was, so the
 * signature over `/bucket/a/./b` is checked against `/bucket/a/b` and cannot match.
 *
 * What the platform allows us to say: a signature that fails over the received path is tried
 * again over the paths that one `.` segment would have been resolved from; if one matches, the
 * request is authentic and the answer says exactly what happened (InvalidURI, 400) instead of a
 * misleading SignatureDoesNotMatch. A `..` segment removes the segment before it, which cannot be
 * recovered: for those (and for several `.` segments) the SignatureDoesNotMatch message carries
 * the hint. Either way nothing is stored or read under another key. Keys whose `/` are sent as
 * `%2F` are not affected: a segment such as `..%2Fb` is not a dot segment.
 */

import { S3Error } from '../model/errors.ts';

/** Tried at most this many alternative paths (one per position) before giving up. */
const MAX_FORMS = 32;

/**
 * The raw paths that resolve to `rawPath` once one `.` segment is removed: `.` inserted before
 * each segment, and a trailing `.` in place of a trailing empty segment (`/b/a/.` gives `/b/a/`).
 */
export function dotSegmentForms(rawPath: string): string[] {
  const segments = rawPath.split('/');
  const forms: string[] = [];
  for (let i = 1; i < segments.length && forms.length < MAX_FORMS; i++) {
    forms.push([...segments.slice(0, i), '.', ...segments.slice(i)].join('/'));
  }
  if (segments.length > 1 && segments[segments.length - 1] === '' && forms.length < MAX_FORMS) {
    forms.push([...segments.slice(0, -1), '.'].join('/'));
  }
  return forms;
}

/** The answer when a signature matched only a dot-segment form of the path. */
export function dotSegmentError(signedPath: string): S3Error {
  return new S3Error(
    'InvalidURI',
    `The request was signed for the path ${signedPath}, which has a '.' segment; the platform resolves '.' and '..' path segments before the gateway sees the request, so this key cannot be addressed with plain slashes. Send the key's '/' characters as %2F.`,
  );
}

/**
 * SignatureDoesNotMatch of a request signature, with the causes a client cannot see: signed
 * headers that never reached the gateway (a proxy or the platform removed them: hop-by-hop
 * headers such as Keep-Alive, which s3cmd copies from a response into the request it signs), or,
 * when every signed header arrived, a key's `.`/`..` segments the platform resolved.
 */
export function signatureMismatch(fields: Record<string, string>, signedButAbsent: readonly string[] = []): S3Error {
  const hint = signedButAbsent.length
    ? ` The request signs ${signedButAbsent.length === 1 ? 'a header' : 'headers'} that did not reach the gateway: ${signedButAbsent.join(', ')}; a proxy on the way, or the platform, removed ${signedButAbsent.length === 1 ? 'it' : 'them'} (Connection, Keep-Alive, TE, Upgrade and the other hop-by-hop headers never reach it). Sign only headers sent end to end.`
    : " If the key has '.' or '..' path segments: the platform resolves them before the gateway sees the path, so the signed path is not the received one; send the key's '/' as %2F.";
  return new S3Error('SignatureDoesNotMatch', new S3Error('SignatureDoesNotMatch').message + hint, fields);
}
