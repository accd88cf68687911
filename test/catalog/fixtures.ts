// Fixtures of the catalog contract: manifests and units that only need to be distinct, an
// S3Error matcher, and a garbage drain that looks at one bucket (the catalog is shared by tests).

import { expect } from 'vitest';
import type { CodedUnit, ObjectManifest } from '../../worker/format/manifest.ts';
import type { Catalog } from '../../worker/catalog/ports.ts';
import { S3Error, type S3ErrorCode } from '../../worker/model/errors.ts';

let seq = 0;
const rnd = () => Math.random().toString(36).slice(2, 10);

export function unit(partNumber?: number): CodedUnit {
  return {
    unitId: `unit-${++seq}-${rnd()}`,
    codec: 'rs-cauchy-gf8',
    size: 100,
    k: 2,
    m: 1,
    blockSize: 64,
    placement: ['b0', 'b1', 'b2'],
    headerLens: [90, 90, 90],
    shardDigests: ['00', '11', '22'],
    missing: [],
    md5: 'd41d8cd98f00b204e9800998ecf8427e',
    ...(partNumber === undefined ? {} : { partNumber }),
  };
}

export function manifest(bucket: string, key: string, units: CodedUnit[] = [unit()], etag = `"${rnd()}${rnd()}"`): ObjectManifest {
  return {
    format: 1,
    bucket,
    key,
    versionId: `v-${rnd()}`,
    size: units.reduce((n, u) => n + u.size, 0),
    etag,
    lastModified: new Date(Date.UTC(2025, 0, 2, 3, 4, 5)).toISOString(),
    metadata: { contentType: 'text/plain', user: { owner: 'test' } },
    checksum: { algorithm: 'CRC32', type: 'FULL_OBJECT', value: 'AAAAAA==' },
    storage: { kind: 'coded', units },
  };
}

export function inlineManifest(bucket: string, key: string): ObjectManifest {
  return { ...manifest(bucket, key, []), size: 2, storage: { kind: 'inline', data: 'aGk=' } };
}

/** Awaits `p` and expects an S3Error with `code`. */
export async function expectS3(p: Promise<unknown>, code: S3ErrorCode): Promise<S3Error> {
  const err = await p.then(
    () => new Error(`expected ${code}, but it succeeded`),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(S3Error);
  expect((err as S3Error).code).toBe(code);
  return err as S3Error;
}

/** Takes every entry due at `now` and returns the unit ids queued for `bucket`, sorted. */
export async function takeUnitIds(c: Catalog, bucket: string, now: Date): Promise<string[]> {
  const taken = await c.takeDueGarbage(now, 100_000);
  return taken
    .filter((g) => g.bucket === bucket)
    .flatMap((g) => g.units.map((u) => u.unitId))
    .sort();
}

/** Takes due garbage and returns the expired reservations (unit ids) of `bucket`. */
export async function takeReservedIds(c: Catalog, bucket: string, now: Date): Promise<string[]> {
  const taken = await c.takeDueGarbage(now, 100_000);
  return taken
    .filter((g) => g.bucket === bucket)
    .flatMap((g) => g.unitIds ?? [])
    .sort();
}

export const ids = (units: CodedUnit[]) => units.map((u) => u.unitId).sort();

/** UTF-8 byte order, computed independently of the code under test. */
export function byUtf8(a: string, b: string): number {
  const [x, y] = [new TextEncoder().encode(a), new TextEncoder().encode(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** The full listing S3 specifies, as 'key' and 'prefix/' entries: the model paging is held to. */
export function modelListing(keys: string[], prefix: string, delimiter: string | null): { kind: 'key' | 'prefix'; name: string }[] {
  const out: { kind: 'key' | 'prefix'; name: string }[] = [];
  for (const key of [...keys].sort(byUtf8)) {
    if (!key.startsWith(prefix)) continue;
    const at = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
    const cp = at < 0 ? null : key.slice(0, at + delimiter!.length);
    if (cp === null) out.push({ kind: 'key', name: key });
    else if (out.at(-1)?.name !== cp) out.push({ kind: 'prefix', name: cp });
  }
  return out;
}
