/**
 * The mutation suite's view of a request: the bytes a client puts on the wire (method, raw target,
 * header lines, body), how to hand them to the app as the platform would (WHATWG URL parsing
 * included: dot segments resolved, `\` made `/`), and the FINGERPRINT of what a request asks
 * for, computed here independently of worker/ (WHATWG URLSearchParams, decodeURIComponent,
 * node:crypto, the test's own aws-chunked decoder). Two requests with the same fingerprint ask
 * the gateway for exactly the same thing; the suite's oracle is that a mutated request the gate
 * lets act has the fingerprint of the request that was signed.
 *
 * What the fingerprint leaves out, on purpose (each is what AWS does too; SECURITY.md):
 * - the signature itself, and for SigV2 the query parameters SigV2 does not sign but which cannot
 *   widen what the URL grants (listing options, x-id, botocore's header copies);
 * - integrity-only headers (x-amz-content-sha256, x-amz-checksum-*, x-amz-trailer, x-amz-date,
 *   ...), which only add checks over the body;
 * - an unsigned body (UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, SigV2);
 * - runs of whitespace inside a signed header value, which SigV4 canonicalises to one space;
 * - for SigV2, the host beyond the bucket it names: SigV2 does not sign the host, only the
 *   resource, so any host that names the same bucket (or none, path-style) asks for the same.
 */
import { createHash } from 'node:crypto';
import { decodeAwsChunkedSimple } from '../helpers/aws-chunked-encode.ts';

export interface Wire {
  method: string;
  /** Raw path and query, as on the request line. */
  target: string;
  /** Header lines as sent, `host` included. */
  headers: Array<[string, string]>;
  body: Uint8Array | null;
}

/** What the signature of a base request covers. */
export interface Scheme {
  kind: 'v4-header' | 'v4-query' | 'v2-query' | 'v2-header';
  /** 'whole': a SHA-256 of the body is signed; 'chunked' / 'chunked-trailer': signed aws-chunked. */
  body: 'unsigned' | 'whole' | 'chunked' | 'chunked-trailer';
}

/** The virtual-hosted base domain of test/support/gate-app.ts. */
const BASE_DOMAIN = 's3.gw.test';

const INTEGRITY_ONLY = /^x-amz-(content-sha256|date|decoded-content-length|trailer|sdk-checksum-algorithm|checksum-.*|user-agent)$/;
const V2_INERT =
  /^(prefix|delimiter|marker|max-keys|encoding-type|list-type|continuation-token|start-after|fetch-owner|max-buckets|bucket-region|key-marker|upload-id-marker|max-uploads|max-parts|part-number-marker|x-id|content-type|content-md5|x-amz-.*)$/i;

export const header = (w: Wire, name: string) => w.headers.find(([n]) => n.toLowerCase() === name)?.[1];

/** The request the app receives for these wire bytes; null when no client could send them. */
export function toRequest(w: Wire): Request | null {
  const host = header(w, 'host') ?? 'gw.test';
  try {
    const body = w.method === 'GET' || w.method === 'HEAD' ? null : w.body;
    return new Request(`http://${host}${w.target}`, { method: w.method, headers: w.headers, body, duplex: 'half' } as RequestInit);
  } catch {
    return null;
  }
}

/** The headers whose values the signature of `base` covers (beyond x-amz-*). */
export function signedHeaderNames(base: Wire, scheme: Scheme): string[] {
  if (scheme.kind === 'v2-query') return ['content-md5', 'content-type'];
  if (scheme.kind === 'v2-header') return ['content-md5', 'content-type', 'date'];
  const list =
    scheme.kind === 'v4-header'
      ? /SignedHeaders=([^,\s]+)/.exec(header(base, 'authorization') ?? '')?.[1]
      : new URLSearchParams(base.target.split('?')[1] ?? '').get('X-Amz-SignedHeaders');
  return (list ?? '').split(';').map((h) => h.toLowerCase());
}

/** What `request` (with `body` on the wire) asks for, as far as the signature of its base covers. */
export function fingerprint(request: Request, body: Uint8Array | null, scheme: Scheme, signed: string[]): string {
  const url = new URL(request.url);
  const path = url.pathname.split('/').map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return `\u0000undecodable:${s}`;
    }
  });
  // Path-style `/bucket/` and `/bucket` name the same bucket (no key), as the router reads them: SigV2 accepts
  // either signed form (botocore signs `/bucket/`).
  const virtualHosted = (request.headers.get('host') ?? url.host)
    .toLowerCase()
    .replace(/:\d+$/, '')
    .endsWith('.' + BASE_DOMAIN);
  if (!virtualHosted && path.length === 3 && path[2] === '') path.pop();
  const query = [...new URLSearchParams(url.search)]
    .filter(
      ([n]) =>
        !(scheme.kind === 'v4-query'
          ? n === 'X-Amz-Signature'
          : scheme.kind === 'v2-query'
            ? n === 'Signature' || V2_INERT.test(n)
            : scheme.kind === 'v2-header'
              ? V2_INERT.test(n)
              : false),
    )
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  const headers: Array<[string, string]> = [];
  request.headers.forEach((value, name) => {
    if (name === 'authorization' || name === 'host') return;
    const covered = signed.includes(name) || (name.startsWith('x-amz-') && !INTEGRITY_ONLY.test(name));
    if (covered) headers.push([name, value.trim().replace(/\s+/g, ' ')]);
  });
  let host = (request.headers.get('host') ?? url.host).toLowerCase();
  if (scheme.kind === 'v2-query' || scheme.kind === 'v2-header')
    host = host.replace(/:\d+$/, '').endsWith('.' + BASE_DOMAIN) ? `bucket ${host.replace(/:\d+$/, '').slice(0, -BASE_DOMAIN.length - 1)}` : 'path-style';
  return JSON.stringify({ method: request.method, host, path, query, headers: headers.sort(), body: signedBody(body, scheme) });
}

function signedBody(body: Uint8Array | null, scheme: Scheme): string | null {
  if (scheme.body === 'unsigned') return null;
  const bytes = body ?? new Uint8Array();
  if (scheme.body === 'whole') return createHash('sha256').update(bytes).digest('hex');
  try {
    const { data, trailers } = decodeAwsChunkedSimple(bytes);
    const signedTrailers = scheme.body === 'chunked-trailer' ? trailers.filter((t) => !t.startsWith('x-amz-trailer-signature:')) : [];
    return createHash('sha256').update(data).digest('hex') + JSON.stringify(signedTrailers);
  } catch {
    return 'undecodable aws-chunked body';
  }
}
