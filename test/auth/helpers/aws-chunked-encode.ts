/**
 * Test-side aws-chunked ENCODER and a simple, non-streaming reference DECODER, written apart
 * from worker/auth (node:crypto, no shared code) so the two can check each other. The encoder's
 * signatures are pinned to AWS's published examples in aws-chunked.test.ts.
 */

import { createHash, createHmac } from 'node:crypto';
import { concat, enc } from './streams.ts';

export const sha256hex = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex');

/** kSigning with node:crypto (independent of worker/auth/sigv4.ts). */
export function nodeSigningKey(secret: string, date: string, region: string, service = 's3'): Uint8Array {
  let key: Uint8Array = createHmac('sha256', 'AWS4' + secret)
    .update(date)
    .digest();
  for (const part of [region, service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  return key;
}

export interface ChunkSigner {
  secret: string;
  datetime: string;
  region: string;
  seedSignature: string;
}

/** Cuts `data` into chunks of the given sizes (the last size repeats until the data ends). */
function cut(data: Uint8Array, sizes: number[]): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  let off = 0;
  let i = 0;
  while (off < data.length) {
    const n = sizes[Math.min(i++, sizes.length - 1)];
    chunks.push(data.subarray(off, off + n));
    off += n;
  }
  return chunks;
}

export interface EncodeOptions {
  /** Chunk sizes in order; the last one repeats. */
  sizes: number[];
  /** Trailer lines `[name, value]` (written `name:value\r\n`). */
  trailers?: Array<[string, string]>;
  /** Signs chunks (and, with trailers, the trailer). */
  signer?: ChunkSigner;
  /** Whether to write a trailer section at all (the -TRAILER modes). Default: when trailers given. */
  trailerMode?: boolean;
}

export interface Encoded {
  body: Uint8Array;
  chunkSignatures: string[];
  trailerSignature?: string;
}

export function encodeAwsChunked(data: Uint8Array, opts: EncodeOptions): Encoded {
  const parts: Uint8Array[] = [];
  const signer = opts.signer;
  const scope = signer ? `${signer.datetime.slice(0, 8)}/${signer.region}/s3/aws4_request` : '';
  const key = signer ? nodeSigningKey(signer.secret, signer.datetime.slice(0, 8), signer.region) : null;
  let previous = signer?.seedSignature ?? '';
  const chunkSignatures: string[] = [];
  const sign = (toSign: string) => createHmac('sha256', key!).update(toSign).digest('hex');
  const signChunk = (chunk: Uint8Array) => {
    const toSign = ['AWS4-HMAC-SHA256-PAYLOAD', signer!.datetime, scope, previous, sha256hex(''), sha256hex(chunk)].join('\n');
    previous = sign(toSign);
    chunkSignatures.push(previous);
    return previous;
  };
  for (const chunk of [...cut(data, opts.sizes), new Uint8Array(0)]) {
    const ext = signer ? `;chunk-signature=${signChunk(chunk)}` : '';
    parts.push(enc(`${chunk.length.toString(16)}${ext}\r\n`));
    if (chunk.length > 0) parts.push(chunk, enc('\r\n'));
  }
  const trailers = opts.trailers ?? [];
  const trailerMode = opts.trailerMode ?? trailers.length > 0;
  let trailerSignature: string | undefined;
  if (trailerMode) {
    for (const [name, value] of trailers) parts.push(enc(`${name}:${value}\r\n`));
    if (signer) {
      const canonical = trailers.map(([n, v]) => `${n}:${v}\n`).join('');
      trailerSignature = sign(['AWS4-HMAC-SHA256-TRAILER', signer.datetime, scope, previous, sha256hex(canonical)].join('\n'));
      parts.push(enc(`x-amz-trailer-signature:${trailerSignature}\r\n`));
    }
  }
  parts.push(enc('\r\n'));
  return { body: concat(parts), chunkSignatures, trailerSignature };
}

/** Reference decoder: whole body in memory, CRLF framing only. Returns data and trailer lines. */
export function decodeAwsChunkedSimple(body: Uint8Array): { data: Uint8Array; trailers: string[] } {
  const text = (from: number, to: number) => new TextDecoder().decode(body.subarray(from, to));
  const chunks: Uint8Array[] = [];
  let off = 0;
  for (;;) {
    const eol = body.indexOf(0x0a, off);
    if (eol < 0 || body[eol - 1] !== 0x0d) throw new Error('bad chunk header');
    const size = parseInt(text(off, eol - 1).split(';')[0], 16);
    off = eol + 1;
    if (size === 0) break;
    chunks.push(body.subarray(off, off + size));
    off += size + 2;
  }
  const rest = text(off, body.length);
  if (!rest.endsWith('\r\n')) throw new Error('no final CRLF');
  return { data: concat(chunks), trailers: rest.split('\r\n').filter((l) => l !== '') };
}
