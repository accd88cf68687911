/**
 * Byte helpers shared by the S3 layer and the stores: hex and base64 of digests, concatenation
 * of buffered chunks, a one-shot stream over bytes.
 */

export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

export function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/** Decodes base64, or null when it is not valid base64. */
export function fromBase64(value: string): Uint8Array | null {
  try {
    const bin = atob(value.trim());
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}

/** Two base64 strings encode the same bytes (padding and spacing aside). */
export function base64Equal(a: string, b: string): boolean {
  const x = fromBase64(a);
  const y = fromBase64(b);
  return x !== null && y !== null && x.length === y.length && x.every((v, i) => v === y[i]);
}

export function concat(chunks: Uint8Array[], size = chunks.reduce((n, c) => n + c.byteLength, 0)): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

export function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      if (bytes.byteLength > 0) controller.enqueue(bytes.slice());
      controller.close();
    },
  });
}
