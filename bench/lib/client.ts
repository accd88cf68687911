/**
 * The S3 client side of the benchmark: one @aws-sdk/client-s3 client per target, bodies that
 * are streamed from one pre-filled random buffer (never a whole large object in this process),
 * and GETs that drain the body, optionally checking its CRC32 against what was sent.
 *
 * Client modes (what the gateway has to verify):
 *  - 'sdk-default': requestChecksumCalculation WHEN_SUPPORTED (the SDK default) with a stream
 *    body: aws-chunked, x-amz-content-sha256 STREAMING-UNSIGNED-PAYLOAD-TRAILER, CRC32 trailer.
 *  - 'unsigned': WHEN_REQUIRED with a stream body: plain body, UNSIGNED-PAYLOAD, no checksum.
 *  - 'signed-sha256': WHEN_SUPPORTED with a Buffer body: the SDK signs the body's SHA-256 and
 *    sends a CRC32 header, so the gateway hashes SHA-256 + CRC32 + MD5.
 */
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { randomFillSync } from 'node:crypto';
import { Agent } from 'node:http';
import { Readable } from 'node:stream';
import * as zlib from 'node:zlib';

export type ClientMode = 'sdk-default' | 'unsigned' | 'signed-sha256';

// The SDK warns once that Node 20 support ends in 2027: true, and noise in every bench run.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const text = typeof warning === 'string' ? warning : warning.name + warning.message;
  if (/NodeVersionSupportWarning|require node >=22/.test(text) || rest.includes('NodeVersionSupportWarning')) return;
  return (emitWarning as (...a: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;

const MiB = 1 << 20;
const PIECE = MiB;
/** The bytes every object is cut from: object bytes [o, o+n) are POOL[(o + seed) mod POOL]. */
const POOL = randomFillSync(Buffer.alloc(64 * MiB + PIECE));

const crc32 = (zlib as unknown as { crc32(d: Uint8Array, prev?: number): number }).crc32;

function* pieces(size: number, seed: number): Generator<Buffer> {
  const start = (seed * 4099) % (64 * MiB);
  for (let sent = 0; sent < size; ) {
    const at = (start + sent) % (64 * MiB);
    const n = Math.min(PIECE, size - sent);
    yield POOL.subarray(at, at + n);
    sent += n;
  }
}

/** CRC32 of the body `bodyOf(size, seed)` produces, without building it. */
export function expectedCrc32(size: number, seed: number): number {
  let c = 0;
  for (const p of pieces(size, seed)) c = crc32(p, c);
  return c >>> 0;
}

export function bodyOf(size: number, seed: number, mode: ClientMode): Readable | Buffer {
  if (mode === 'signed-sha256') {
    if (size > 64 * MiB) throw new Error('signed-sha256 mode holds the body in memory: at most 64 MiB');
    return Buffer.concat([...pieces(size, seed)]);
  }
  return Readable.from(pieces(size, seed), { objectMode: false, highWaterMark: 4 * MiB });
}

export interface Target {
  endpoint: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
}

/** `maxSockets`: connections the client may open at once (a concurrency burst needs one per request). */
export function makeClient(t: Target, mode: ClientMode, maxSockets = 8): S3Client {
  return new S3Client({
    endpoint: t.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { ...t.credentials },
    expectContinueHeader: false,
    maxAttempts: 1,
    requestChecksumCalculation: mode === 'unsigned' ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // Idle pooled sockets are closed after 2 s: workerd closes them after 5 s, and one reused as it
    // closes fails the request ("socket hang up", ECONNRESET), which is not the gateway's answer.
    requestHandler: { httpAgent: new Agent({ keepAlive: true, maxSockets, timeout: 2000 }) },
  });
}

export async function put(s3: S3Client, bucket: string, key: string, size: number, seed: number, mode: ClientMode): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bodyOf(size, seed, mode), ContentLength: size }));
}

/** Drains the object; returns its length and (with `check`) its CRC32. */
export async function get(s3: S3Client, bucket: string, key: string, check = false): Promise<{ bytes: number; crc: number }> {
  const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  let bytes = 0,
    crc = 0;
  for await (const chunk of res.Body as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    if (check) crc = crc32(chunk, crc);
  }
  return { bytes, crc: crc >>> 0 };
}
