/**
 * Splits the raw request URL into path and query without parsing it: `new URL()` (and Hono)
 * resolve `.`/`..` segments, percent-encode some characters and decode others, which would change
 * what the client signed. Accepts an absolute URL (`http://host/p?q`) or a request target (`/p?q`).
 */

export interface RawTarget {
  /** Host from an absolute URL, '' for a bare request target. */
  host: string;
  /** Path exactly as sent ('/' when empty). */
  rawPath: string;
  /** Query exactly as sent, without the '?' ('' when absent). */
  rawQuery: string;
}

export function splitRawUrl(rawUrl: string): RawTarget {
  let rest = rawUrl;
  let host = '';
  const scheme = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.exec(rest);
  if (scheme) {
    rest = rest.slice(scheme[0].length);
    const end = rest.search(/[/?#]/);
    host = end < 0 ? rest : rest.slice(0, end);
    rest = end < 0 ? '' : rest.slice(end);
  }
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const q = rest.indexOf('?');
  const rawPath = q < 0 ? rest : rest.slice(0, q);
  const rawQuery = q < 0 ? '' : rest.slice(q + 1);
  return { host, rawPath: rawPath === '' ? '/' : rawPath, rawQuery };
}
