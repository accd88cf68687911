/**
 * Files the client smoke tests upload: 1 KiB, 7 MiB (below every client's multipart threshold)
 * and 40 MiB (multipart with awscli's defaults, with s3cmd's defaults, and with rclone given an
 * explicit cutoff), random bytes kept in memory so ranges and downloads can be compared exactly.
 * Also the ETag each upload must produce: the hex MD5 of the body for a single PUT, and
 * `md5(concat(part md5s))-N` for a multipart upload in parts of a known size.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const MiB = 1024 * 1024;

export interface FixtureFile {
  name: string;
  path: string;
  bytes: Buffer;
  sha256: string;
}

export const FIXTURE_SIZES = { small: 1024, medium: 7 * MiB, large: 40 * MiB } as const;
export type FixtureName = keyof typeof FIXTURE_SIZES;

/** Writes the three fixture files into `dir` (names `small.bin`, `medium.bin`, `large.bin`). */
export async function writeFixtures(dir: string): Promise<Record<FixtureName, FixtureFile>> {
  const out = {} as Record<FixtureName, FixtureFile>;
  for (const [name, size] of Object.entries(FIXTURE_SIZES) as [FixtureName, number][]) {
    const bytes = randomBytes(size);
    const path = join(dir, `${name}.bin`);
    await writeFile(path, bytes);
    out[name] = { name: `${name}.bin`, path, bytes, sha256: sha256Hex(bytes) };
  }
  return out;
}

export const sha256Hex = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');
export const md5Hex = (data: Uint8Array) => createHash('md5').update(data).digest('hex');

/** SHA-256 of a file on disk (a downloaded copy). */
export async function sha256OfFile(path: string): Promise<string> {
  return sha256Hex(await readFile(path));
}

/** The quoted ETag S3 gives `bytes` stored by one PUT (`partSize` undefined) or by a multipart
 *  upload in parts of `partSize` bytes (the last part shorter). */
export function expectedEtag(bytes: Uint8Array, partSize?: number): string {
  if (partSize === undefined) return `"${md5Hex(bytes)}"`;
  const partDigests: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; offset += partSize) {
    partDigests.push(
      createHash('md5')
        .update(bytes.subarray(offset, offset + partSize))
        .digest(),
    );
  }
  return `"${md5Hex(Buffer.concat(partDigests))}-${partDigests.length}"`;
}
