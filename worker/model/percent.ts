/**
 * Percent-decoding (RFC 3986 §2.1) of request-target pieces into bytes, the one decoder that both
 * the signature check (worker/auth) and the router (worker/s3, through model/request.ts) read
 * query names and values with, so the two cannot disagree on what a parameter is called.
 * Lenient about a '%' not followed by two hex digits: it stays a literal '%' (a client that sent
 * it raw also signed it as a literal, which SigV4 re-encodes as %25; WHATWG URL parsing keeps it
 * too). Strict about UTF-8: the caller decides what invalid UTF-8 means.
 */

import { utf8 } from './bytes.ts';

const HEX_PAIR = /^[0-9a-fA-F]{2}$/;

/** Percent-decodes to bytes; characters that are not escapes contribute their UTF-8 bytes. */
export function percentDecodeBytes(s: string): Uint8Array {
  if (!s.includes('%')) return utf8.encode(s);
  const out: number[] = [];
  for (let i = 0; i < s.length; ) {
    if (s[i] === '%' && HEX_PAIR.test(s.slice(i + 1, i + 3))) {
      out.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 3;
    } else {
      // One code point (a surrogate pair stays together) and its UTF-8 bytes.
      const ch = String.fromCodePoint(s.codePointAt(i)!);
      for (const b of utf8.encode(ch)) out.push(b);
      i += ch.length;
    }
  }
  return new Uint8Array(out);
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as UTF-8 text, or null when they are not valid UTF-8. */
export function utf8OrNull(bytes: Uint8Array): string | null {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return null;
  }
}
