/**
 * AWS Signature Version 4 for S3, one function per spec step, Web Crypto only (runs unchanged in
 * workerd and Node 20). The gate in verify.ts recomputes what the client computed and compares.
 *
 * Spec: "Signature Version 4 signing process" (canonical request, string to sign, signing key,
 * signature) with S3's rules from "Authenticating Requests (AWS Signature Version 4)":
 *   - the canonical URI is the path as sent, encoded once: S3 does not normalise `.`/`..`/`//`
 *     and does not double-encode (other services do both);
 *   - chunk and trailer strings to sign of "Signature Calculations for the Authorization Header:
 *     Transferring Payload in Multiple Chunks" (sigv4-streaming, sigv4-streaming-trailers).
 *
 * Known gaps: SigV4a (ECDSA, AWS4-ECDSA-P256-SHA256) is not implemented.
 */

import { percentDecodeBytes } from '../model/percent.ts';
import type { QueryParam } from '../model/request.ts';

/**
 * Steps 1 to 4 (all but the canonical URI, which needs the gate's percent decoder), written to be
 * self-contained: this function uses nothing but Web Crypto and TextEncoder and names nothing
 * outside itself, so the status page runs this very source in the browser to sign its reads
 * (ops/page-script.ts embeds `String(sigv4Steps)`). One signer: the gate verifies with these
 * steps, the page signs with them. Keep it so: no imports inside, no module-level names.
 */
export function sigv4Steps() {
  const ALGORITHM = 'AWS4-HMAC-SHA256';
  const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
  const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
  const utf8 = new TextEncoder();
  const hex = (buf: ArrayBuffer): string => Array.from(new Uint8Array(buf), (b) => (b + 256).toString(16).slice(1)).join('');

  // -------------------------------------------------------------------------------------------
  // Percent-encoding, as SigV4 defines it: every byte except the RFC 3986 unreserved characters
  // A-Z a-z 0-9 - . _ ~ becomes %XY with upper-case hex; '/' too, except between path segments.
  const UNRESERVED = new Uint8Array(128);
  for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~') UNRESERVED[c.charCodeAt(0)] = 1;
  const HEX_UPPER = '0123456789ABCDEF';

  /** Encodes bytes the SigV4 way. */
  function uriEncodeBytes(bytes: Uint8Array): string {
    let out = '';
    for (const b of bytes) out += b < 128 && UNRESERVED[b] ? String.fromCharCode(b) : '%' + HEX_UPPER[b >> 4] + HEX_UPPER[b & 15];
    return out;
  }

  /** Encodes a (decoded) string: its UTF-8 bytes, '/' included. */
  function uriEncode(s: string): string {
    return uriEncodeBytes(utf8.encode(s));
  }

  // -------------------------------------------------------------------------------------------
  // Step 1: the canonical request.

  /**
   * CanonicalQueryString: each name and value encoded, sorted by name then value (byte order of
   * the encoded strings), `name=value` joined by '&'; a value-less flag gives `name=`. `exclude`
   * drops a parameter by exact name (X-Amz-Signature, for presigned URLs). The parameters are the
   * request view's (model/request.ts), decoded once: the router reads exactly these.
   */
  function canonicalQuery(params: readonly QueryParam[], exclude?: string): string {
    return params
      .filter(([name]) => name !== exclude)
      .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
      .sort(([n1, v1], [n2, v2]) => (n1 < n2 ? -1 : n1 > n2 ? 1 : v1 < v2 ? -1 : v1 > v2 ? 1 : 0))
      .map(([name, value]) => `${name}=${value}`)
      .join('&');
  }

  /** A header value as SigV4 canonicalises it: trimmed, runs of whitespace made one space. */
  function canonicalHeaderValue(value: string): string {
    return value.trim().replace(/\s+/g, ' ');
  }

  /**
   * CanonicalHeaders: `name:value\n` for each signed header, in the order of SignedHeaders (which
   * clients sort). `lookup` returns a header's value or null; a signed header that is absent is
   * canonicalised as empty, so the signature simply fails to match.
   * Known gap: a header sent twice arrives joined by ", " (Fetch Headers), not "," as SigV4 joins.
   */
  function canonicalHeaders(signedHeaders: readonly string[], lookup: (name: string) => string | null): string {
    return signedHeaders.map((name) => `${name}:${canonicalHeaderValue(lookup(name) ?? '')}\n`).join('');
  }

  /** CanonicalRequest: the six parts joined by '\n' (canonicalHeaders ends with its own '\n'). */
  function canonicalRequest(method: string, uri: string, query: string, headers: string, signedHeaders: string, payloadHash: string): string {
    return [method, uri, query, headers, signedHeaders, payloadHash].join('\n');
  }

  // -------------------------------------------------------------------------------------------
  // Step 2: the string to sign.

  /** CredentialScope: `date/region/service/aws4_request`. */
  function credentialScope(date: string, region: string, service: string): string {
    return `${date}/${region}/${service}/aws4_request`;
  }

  async function sha256Hex(data: string | Uint8Array): Promise<string> {
    return hex(await crypto.subtle.digest('SHA-256', typeof data === 'string' ? utf8.encode(data) : data));
  }

  /** StringToSign: algorithm, request date-time (ISO 8601 basic), scope, hex SHA-256 of the request. */
  async function stringToSign(datetime: string, scope: string, canonical: string): Promise<string> {
    return [ALGORITHM, datetime, scope, await sha256Hex(canonical)].join('\n');
  }

  /** String to sign of one aws-chunked chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD). */
  function chunkStringToSign(datetime: string, scope: string, previousSignature: string, chunkSha256: string): string {
    return ['AWS4-HMAC-SHA256-PAYLOAD', datetime, scope, previousSignature, EMPTY_SHA256, chunkSha256].join('\n');
  }

  /**
   * The trailer as signed: `name:value\n` per trailing header, names lower-case, in the order sent,
   * values as parsed (surrounding spaces already removed by the decoder).
   */
  function canonicalTrailer(trailers: ReadonlyArray<readonly [name: string, value: string]>): string {
    return trailers.map(([name, value]) => `${name.toLowerCase()}:${value}\n`).join('');
  }

  /** String to sign of the trailer (STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER). */
  function trailerStringToSign(datetime: string, scope: string, previousSignature: string, trailerSha256: string): string {
    return ['AWS4-HMAC-SHA256-TRAILER', datetime, scope, previousSignature, trailerSha256].join('\n');
  }

  // -------------------------------------------------------------------------------------------
  // Step 3: the signing key. Step 4: the signature.

  async function hmac(key: Uint8Array | ArrayBuffer, data: string): Promise<ArrayBuffer> {
    const cryptoKey = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    return crypto.subtle.sign('HMAC', cryptoKey, utf8.encode(data));
  }

  /** kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request"). */
  async function deriveSigningKey(secret: string, date: string, region: string, service: string): Promise<ArrayBuffer> {
    let key: ArrayBuffer = await hmac(utf8.encode('AWS4' + secret), date);
    for (const part of [region, service, 'aws4_request']) key = await hmac(key, part);
    return key;
  }

  /** The signing key imported for HMAC-SHA256, not extractable. */
  async function importSigningKey(raw: ArrayBuffer): Promise<CryptoKey> {
    return crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  }

  /** Signature: lower-case hex HMAC-SHA256 of the string to sign under the signing key. */
  async function signature(key: CryptoKey, toSign: string): Promise<string> {
    return hex(await crypto.subtle.sign('HMAC', key, utf8.encode(toSign)));
  }

  return {
    ALGORITHM,
    UNSIGNED_PAYLOAD,
    EMPTY_SHA256,
    uriEncodeBytes,
    uriEncode,
    canonicalQuery,
    canonicalHeaderValue,
    canonicalHeaders,
    canonicalRequest,
    credentialScope,
    sha256Hex,
    stringToSign,
    chunkStringToSign,
    canonicalTrailer,
    trailerStringToSign,
    deriveSigningKey,
    importSigningKey,
    signature,
  };
}

export const {
  ALGORITHM,
  UNSIGNED_PAYLOAD,
  EMPTY_SHA256,
  uriEncodeBytes,
  uriEncode,
  canonicalQuery,
  canonicalHeaderValue,
  canonicalHeaders,
  canonicalRequest,
  credentialScope,
  sha256Hex,
  stringToSign,
  chunkStringToSign,
  canonicalTrailer,
  trailerStringToSign,
  deriveSigningKey,
  importSigningKey,
  signature,
} = sigv4Steps();

/**
 * CanonicalURI from the raw request path (as sent on the wire, never a decoded or normalised
 * one). Each segment is decoded and re-encoded, so `%7e`, `~` and `%7E` all give `~` and `!`
 * gives `%21`, as every SDK encodes them; an encoded slash (`%2F`) stays inside its segment and
 * `//`, `.` and `..` are kept as they are, because S3 keys may contain them.
 */
export function canonicalUri(rawPath: string): string {
  if (rawPath === '') return '/';
  return rawPath
    .split('/')
    .map((segment) => uriEncodeBytes(percentDecodeBytes(segment)))
    .join('/');
}

// The key changes once a day per secret/region; deriving it costs four HMACs and an importKey.
// A small map is enough (a gateway has few keys); it is emptied when full rather than LRU'd.
const SIGNING_KEY_CACHE_SIZE = 64;
const signingKeyCache = new Map<string, Promise<CryptoKey>>();

/** The signing key, imported for HMAC-SHA256 and cached by secret/date/region/service. */
export function signingKey(secret: string, date: string, region: string, service: string): Promise<CryptoKey> {
  const cacheKey = [secret, date, region, service].join('\n');
  let key = signingKeyCache.get(cacheKey);
  if (!key) {
    if (signingKeyCache.size >= SIGNING_KEY_CACHE_SIZE) signingKeyCache.clear();
    key = deriveSigningKey(secret, date, region, service).then(importSigningKey);
    // A failed derivation must not stay cached.
    key.catch(() => signingKeyCache.delete(cacheKey));
    signingKeyCache.set(cacheKey, key);
  }
  return key;
}
