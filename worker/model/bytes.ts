/**
 * Byte helpers every layer of worker/ shares: hex and base64 codecs, UTF-8, concatenation, and a
 * comparison that does not stop at the first differing character (signatures are compared with
 * it, so that response time says nothing about how many leading characters of a guess were right).
 * Plain JS on purpose: the same code runs in workerd and Node 20 without `Buffer`.
 */

export const utf8 = new TextEncoder();

const HEX = '0123456789abcdef';

/** Lower-case hex, as SigV4 spells digests and signatures. */
export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let out = '';
  for (let i = 0; i < view.length; i++) out += HEX[view[i] >> 4] + HEX[view[i] & 15];
  return out;
}

/** True when `s` is exactly `len` lower- or upper-case hex digits. */
export function isHex(s: string, len: number): boolean {
  return s.length === len && /^[0-9a-fA-F]*$/.test(s);
}

/**
 * Strict base64 decode (standard alphabet, padding optional); null when `s` is not base64.
 * Header values may carry surrounding space: callers trim them first.
 */
export function fromBase64(s: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return null;
  const clean = s.replace(/=+$/, '');
  if (clean.length % 4 === 1) return null;
  try {
    const bin = atob(clean + '==='.slice((clean.length + 3) % 4));
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}

export function toBase64(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let bin = '';
  for (let i = 0; i < view.length; i++) bin += String.fromCharCode(view[i]);
  return btoa(bin);
}

/** Two base64 strings encode the same bytes (optional padding aside). */
export function base64Equal(a: string, b: string): boolean {
  const x = fromBase64(a);
  const y = fromBase64(b);
  return x !== null && y !== null && bytesEqual(x, y);
}

/** Compares two strings in time that depends only on their lengths. */
export function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** Joins pieces into one buffer (a single piece is returned as it is). */
export function concatBytes(pieces: Uint8Array[], len = pieces.reduce((n, p) => n + p.length, 0)): Uint8Array {
  if (pieces.length === 1) return pieces[0];
  const out = new Uint8Array(len);
  let off = 0;
  for (const p of pieces) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
