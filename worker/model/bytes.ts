/**
 * Byte helpers shared by the S3 layer and the stores: hex and base64 of digests, concatenation
 * of buffered chunks, a one-shot stream over bytes. Hex, base64 encoding and concatenation are
 * the auth gate's own (auth/bytes.ts); decoding here is lenient (surrounding space, as checksum
 * headers may carry), where the gate's is strict.
 */
export { concatBytes as concat, toBase64, toHex } from '../auth/bytes.ts';

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

export function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      if (bytes.byteLength > 0) controller.enqueue(bytes.slice());
      controller.close();
    },
  });
}
