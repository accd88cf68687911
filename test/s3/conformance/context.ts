/**
 * Shared state and helpers of the conformance suite (@aws-sdk/client-s3 against a running
 * worker). The suite is a set of case functions run once per SDK checksum mode; each mode gets
 * its own buckets (suffix -d / -w) so the two runs cannot see each other's objects.
 */
import { createHash } from 'node:crypto';
import * as zlib from 'node:zlib';
import type { S3Client } from '@aws-sdk/client-s3';
import { expect } from 'vitest';

export type ChecksumMode = 'defaults' | 'when-required';

export interface SuiteContext {
  mode: ChecksumMode;
  url: URL;
  client: S3Client;
}

/** Filled in by the test file's beforeAll; case functions read it lazily inside tests. */
export type Suite = () => SuiteContext;

export const bucketName = (mode: ChecksumMode, name: string) => `${name}-${mode === 'defaults' ? 'd' : 'w'}`;

export const md5Hex = (data: Uint8Array | string) => createHash('md5').update(data).digest('hex');
export const md5B64 = (data: Uint8Array | string) => createHash('md5').update(data).digest('base64');
export const sha256B64 = (data: Uint8Array) => createHash('sha256').update(data).digest('base64');

/** CRC32 (node:zlib, an oracle independent of the gateway's tables), base64 big-endian. */
export function crc32B64(data: Uint8Array): string {
  const v = (zlib as unknown as { crc32(d: Uint8Array): number }).crc32(data) >>> 0;
  return Buffer.from([v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff]).toString('base64');
}

export function randomBytes(size: number, seed = 1): Uint8Array {
  const out = new Uint8Array(size);
  let x = seed * 2654435761;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

interface SdkError {
  name: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number; requestId?: string };
}

/** Awaits a rejected SDK call and checks its S3 error code and HTTP status. `code` null: a
 *  bodyless response (304) for which the SDK has no code to report, only the status. */
export async function expectS3Error(promise: Promise<unknown>, code: string | null, status: number): Promise<SdkError> {
  const err = (await promise.then(
    () => {
      throw new Error(`expected ${code}, but the call succeeded`);
    },
    (e: unknown) => e,
  )) as SdkError;
  expect({ code: code === null ? null : (err.Code ?? err.name), status: err.$metadata?.httpStatusCode }).toEqual({ code, status });
  return err;
}

export async function bytesOf(body: { transformToByteArray(): Promise<Uint8Array> } | undefined): Promise<Uint8Array> {
  if (!body) throw new Error('no body');
  return body.transformToByteArray();
}
