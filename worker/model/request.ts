/**
 * RequestView: the one canonical view of an S3 request, built once per request (worker/app/app.ts)
 * and read by BOTH the signature check (worker/auth) and the router and handlers (worker/s3), so
 * that what was signed and what acts cannot be two different parses of the same bytes.
 *
 * - method and headers as received (Accept-Encoding as the client sent it: Cloudflare replaces it
 *   before the Worker runs, and SigV4 clients sign the original);
 * - the raw path and query exactly as sent (model/raw-url.ts): SigV4 signs the path bytes, and S3
 *   keys are byte strings in which `//`, `%2F` and `+` are significant;
 * - the query parameters decoded ONCE (percent-escapes, '+' as space, strict UTF-8), names
 *   included: SigV4 and SigV2 canonicalise the decoded names, the router dispatches on them, and
 *   `%75ploadId` is `uploadId` to both;
 * - the bucket named by the Host header (virtual-hosted style), which SigV2 must put into the
 *   string it verifies because SigV2 does not sign the host.
 *
 * Refused here, before anything reads the query: invalid UTF-8 in a name or value (InvalidURI), and
 * a parameter name given twice (InvalidArgument): SigV4 sorts parameters before signing, so the
 * order of two values is unsigned, and "the first one" would be the bearer's choice.
 * Known gap: none of the spellings of a header (case, duplicates joined by ", ") are normalised
 * beyond what Fetch Headers does.
 */

import { S3Error } from './errors.ts';
import { percentDecodeBytes, utf8OrNull } from './percent.ts';
import { splitRawUrl, type RawTarget } from './raw-url.ts';

/** One query parameter, decoded. `bare`: sent without '=' (`?uploads`, which SigV2 signs as such). */
export type QueryParam = readonly [name: string, value: string, bare?: boolean];

export interface RequestView {
  readonly method: string;
  /** The request headers as the client sent them. */
  readonly headers: Headers;
  /** The host as sent (Host header, else the URL's authority): what SigV4 signs as `host`. */
  readonly authority: string;
  /** The raw path and query, exactly as received. */
  readonly target: RawTarget;
  /** Every query parameter, decoded, in the order sent; no name twice. */
  readonly params: readonly QueryParam[];
  /** The same parameters, to read by name. */
  readonly query: URLSearchParams;
  /** The bucket named by the host (`<bucket>.<baseDomain>`), or null for path-style requests. */
  readonly hostBucket: string | null;
}

/**
 * Builds the view of `request`. `rawUrl` is the URL as received (default `request.url`; workerd
 * has already resolved dot segments in it, which nothing here can undo); `baseDomains` are the
 * virtual-hosted-style domains of the configuration.
 */
export function requestView(request: Request, baseDomains: readonly string[] = [], rawUrl = request.url): RequestView {
  const target = splitRawUrl(rawUrl);
  const params = parseQuery(target.rawQuery);
  const headers = clientHeaders(request);
  const authority = headers.get('host') ?? (target.host || hostOf(request.url));
  return {
    method: request.method,
    headers,
    authority,
    target,
    params,
    query: new URLSearchParams(params.map(([name, value]): [string, string] => [name, value])),
    hostBucket: bucketOfHost(authority, baseDomains),
  };
}

/**
 * Parses a raw query string (without '?'): '+' is a space (form encoding, as AWS and Go's
 * url.ParseQuery read it; SDKs send a literal plus as %2B); empty pieces (`a&&b`) are skipped.
 */
export function parseQuery(rawQuery: string): QueryParam[] {
  const params: QueryParam[] = [];
  const seen = new Set<string>();
  for (const piece of rawQuery.split('&')) {
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    const name = decodeComponent(eq < 0 ? piece : piece.slice(0, eq));
    const value = eq < 0 ? '' : decodeComponent(piece.slice(eq + 1));
    if (seen.has(name.toLowerCase())) {
      throw new S3Error('InvalidArgument', `The query parameter '${name}' is given more than once.`, { ArgumentName: name });
    }
    seen.add(name.toLowerCase());
    params.push(eq < 0 ? [name, value, true] : [name, value]);
  }
  return params;
}

function decodeComponent(raw: string): string {
  const text = utf8OrNull(percentDecodeBytes(raw.replace(/\+/g, ' ')));
  if (text === null) throw new S3Error('InvalidURI', "Couldn't parse the specified URI: a query parameter is not valid UTF-8.");
  return text;
}

/** The bucket of a virtual-hosted-style host, or null (the host is lower-cased, its port dropped). */
export function bucketOfHost(authority: string, baseDomains: readonly string[]): string | null {
  const host = authority.replace(/:\d+$/, '').toLowerCase();
  const base = baseDomains.find((d) => host.endsWith('.' + d.toLowerCase()));
  return base ? host.slice(0, -(base.length + 1)) : null;
}

/** Cloudflare (and wrangler dev) replace Accept-Encoding before the Worker runs; the client's
 *  own value is in `request.cf.clientAcceptEncoding`, and clients such as rclone sign it. */
function clientHeaders(request: Request): Headers {
  const sent = (request as { cf?: { clientAcceptEncoding?: unknown } }).cf?.clientAcceptEncoding;
  if (typeof sent !== 'string' || request.headers.get('accept-encoding') === sent) return request.headers;
  const headers = new Headers(request.headers);
  if (sent === '') headers.delete('accept-encoding');
  else headers.set('accept-encoding', sent);
  return headers;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}
