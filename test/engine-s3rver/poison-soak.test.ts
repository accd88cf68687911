/**
 * Buffer ownership under load (issue 47), in workerd with poison mode on (worker/model/lent-chunks.ts):
 * the gateway over six s3rver processes serving two buckets each (12 backends: a 4+2 striped
 * policy, and 8+3, whose column units read through the isolate's READ_POOL), sealed.
 * - An engine consumer (the fixture worker's /__test/hold) holds every chunk of a 64 MiB object's
 *   read until the stream ends and then reads them, while concurrent GETs take the pool's
 *   recycled buffers: with keep() the bytes are the object's; holding the lent chunks themselves
 *   fails, and the failure names the stream that lent them.
 * - Mixed traffic, a bounded number of requests (not a duration): PUT, whole and ranged GET,
 *   CopyObject, UploadPartCopy, an older version restored by a copy, and downloads abandoned
 *   mid-body (their cancellation recycles buffers while others read). Every body's MD5 is right,
 *   no body holds a run of poison, and the isolate's poison tally caught nothing.
 */
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCopyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3rverProcess } from '../backends/s3rver-harness.ts';
import { ABANDON_POINTS, abandonGet, presignedGet } from '../support/abandon.ts';
import { prng, randomBytes } from '../support/random.ts';
import { countPoisonRuns } from '../../worker/model/lent-chunks.ts';
import { DEV_CREDENTIALS, disposeServers, startGateway, TEST_ENCRYPTION, type Gateway } from './gateway-harness.ts';

const MiB = 1024 * 1024;
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

let servers: S3rverProcess[] = [];
let gateway: Gateway | undefined;
let s3: S3Client;
let origin: string;

async function control(path: string): Promise<Record<string, unknown>> {
  const r = await fetch(origin + path, { method: 'POST' });
  const text = await r.text();
  if (!r.ok) throw new Error(`${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

beforeAll(async () => {
  servers = Array.from({ length: 6 }, () => new S3rverProcess(['b', 'c']));
  await Promise.all(servers.map((s) => s.start()));
  const backends = servers.flatMap((s, i) =>
    ['b', 'c'].map((bucket) => ({
      id: `s3rver-${i}${bucket}`,
      kind: 's3',
      domain: `local/s3rver-${i}${bucket}`,
      endpoint: s.endpoint,
      bucket,
      region: 'us-east-1',
      pathStyle: true,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      timeoutMs: 30_000,
      retries: 0,
    })),
  );
  const config = {
    region: 'us-east-1',
    backends,
    credentials: [{ ...DEV_CREDENTIALS }],
    garbageGraceSeconds: 3600,
    encryption: TEST_ENCRYPTION,
    policies: { 'ec-4-2': { k: 4, m: 2 }, 'ec-8-3': { k: 8, m: 3 } },
    defaultPolicy: 'ec-4-2',
    buckets: { wide: 'ec-8-3' },
  };
  gateway = await startGateway(config, { entry: 'test/engine/fixtures/worker.ts' });
  origin = (await gateway.directUrl()).origin;
  s3 = gateway.client({ endpoint: origin });
  for (const b of ['plain', 'wide']) {
    await s3.send(new CreateBucketCommand({ Bucket: b }));
    await s3.send(new PutBucketVersioningCommand({ Bucket: b, VersioningConfiguration: { Status: 'Enabled' } }));
  }
}, 180_000);

afterAll(async () => {
  await gateway?.dispose().catch(() => {});
  await disposeServers(servers);
}, 120_000);

describe('poison mode in workerd', { timeout: 300_000 }, () => {
  it('is on in the gateway under test', async () => {
    expect(await control('/__test/poison')).toMatchObject({ on: true });
  });

  it("a consumer holding every chunk of a 64 MiB read: keep() gives the object's bytes while other reads recycle the pool; lent chunks held fail, naming their lender", async () => {
    const big = randomBytes(prng(47), 64 * MiB);
    await s3.send(new PutObjectCommand({ Bucket: 'wide', Key: 'big', Body: big }));
    const small = randomBytes(prng(48), 3 * MiB + 5);
    await s3.send(new PutObjectCommand({ Bucket: 'wide', Key: 'small', Body: small }));
    // Concurrent readers of the same pool (column units of the same block size) while the holder reads.
    const readers = async () => {
      const got: string[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await s3.send(new GetObjectCommand({ Bucket: 'wide', Key: 'small' }));
        got.push(md5(await r.Body!.transformToByteArray()));
      }
      return got;
    };
    const [held, ...others] = await Promise.all([control('/__test/hold?bucket=wide&key=big&mode=keep'), readers(), readers()]);
    expect(held).toMatchObject({ md5: md5(big) });
    expect(held.chunks as number).toBeGreaterThan(100);
    for (const got of others) expect(new Set(got)).toEqual(new Set([md5(small)]));

    const raw = await control('/__test/hold?bucket=wide&key=big&mode=raw');
    expect(raw.md5).toBeUndefined();
    expect(raw.error).toMatch(
      /^ChunkOwnershipError: the holding consumer, reading what it held: a chunk was used after .+ \(chunk \d+, taken back at the consumer's next read\) let it go/,
    );
  });

  it('mixed PUT, GET, ranged GET, copy, part copy, restore and abandoned downloads: every body right, no poison served, nothing caught', async () => {
    const random = prng(4747);
    const caughtBefore = (await control('/__test/poison')).caught as number; // the deliberate catch above
    const sizes = [0, 1, 3000, 100_000, 700_000, 3 * MiB + 11, 9 * MiB];
    /** bucket/key -> the bytes it holds now; bucket/key -> its versions' ids and bytes, oldest first. */
    const current = new Map<string, Uint8Array>();
    const versions = new Map<string, { id: string; bytes: Uint8Array }[]>();
    const failures: string[] = [];
    let poisonRuns = 0;
    const counts: Record<string, number> = {};
    const count = (op: string) => (counts[op] = (counts[op] ?? 0) + 1);
    const check = (what: string, got: Uint8Array, want: Uint8Array) => {
      poisonRuns += countPoisonRuns(got);
      if (got.length !== want.length || md5(got) !== md5(want))
        failures.push(`${what}: ${got.length} bytes, md5 ${md5(got)}; want ${want.length}, ${md5(want)}`);
    };
    const put = async (bucket: string, key: string, bytes: Uint8Array) => {
      const { VersionId } = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }));
      current.set(`${bucket}/${key}`, bytes);
      versions.set(`${bucket}/${key}`, [...(versions.get(`${bucket}/${key}`) ?? []), { id: VersionId!, bytes }]);
    };
    for (const bucket of ['plain', 'wide']) for (let i = 0; i < 4; i++) await put(bucket, `seed-${i}`, randomBytes(random, sizes[3 + i]!));

    const client = async (id: number) => {
      const random = prng(4748 + id); // one sequence per client: a run repeats whatever the interleaving
      // Two versions of a key of its own, so that every client restores at least once (at n = 9).
      const restoreBucket = id % 2 ? 'wide' : 'plain';
      for (let v = 0; v < 2; v++) await put(restoreBucket, `c${id}-r`, randomBytes(random, sizes[3 + v + (id % 3)]!));
      for (let n = 0; n < 18; n++) {
        const bucket = n === 9 ? restoreBucket : random() < 0.5 ? 'plain' : 'wide';
        // The seeds (never written again) and this client's own keys: no other client changes what it reads.
        const own = (k: string) => /\/seed-\d$/.test(k) || new RegExp(`/(c|copy-|parts-)${id}(-|$)`).test(k);
        const names = [...current.keys()].filter((k) => k.startsWith(`${bucket}/`) && own(k));
        const name = n === 9 ? `${restoreBucket}/c${id}-r` : names[Math.floor(random() * names.length)]!;
        const key = name.slice(bucket.length + 1);
        const pick = n === 9 ? 0.8 : random();
        try {
          if (pick < 0.2) {
            count('PutObject');
            await put(bucket, `c${id}-${n % 3}`, randomBytes(random, sizes[Math.floor(random() * sizes.length)]!));
          } else if (pick < 0.45) {
            count('GetObject');
            const want = current.get(name)!;
            const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
            check(`GET ${name}`, await r.Body!.transformToByteArray(), want);
          } else if (pick < 0.6) {
            const want = current.get(name)!;
            if (want.length < 2) continue;
            count('GetObject ranged');
            const start = Math.floor(random() * (want.length - 1));
            const end = Math.min(want.length - 1, start + Math.floor(random() * 2 * MiB));
            const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, Range: `bytes=${start}-${end}` }));
            check(`GET ${name} ${start}-${end}`, await r.Body!.transformToByteArray(), want.subarray(start, end + 1));
          } else if (pick < 0.7) {
            const to = `copy-${id}`;
            if (key === to) continue; // S3 refuses a copy onto itself that changes nothing
            count('CopyObject');
            const source = current.get(name)!;
            const { VersionId } = (await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: to, CopySource: `${bucket}/${encodeURIComponent(key)}` }))) as {
              VersionId?: string;
            };
            current.set(`${bucket}/${to}`, source);
            versions.set(`${bucket}/${to}`, [...(versions.get(`${bucket}/${to}`) ?? []), { id: VersionId!, bytes: source }]);
          } else if (pick < 0.78) {
            const source = current.get(name)!;
            if (source.length < 10) continue;
            count('UploadPartCopy');
            const to = `parts-${id}`;
            const half = Math.floor(source.length / 2);
            const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: to }));
            const ranges = [
              [0, half - 1],
              [half, source.length - 1],
            ] as const;
            const parts = [];
            // Every part but the last must be 5 MiB or more: one part copies the whole source, one a range of it.
            for (const [i, range] of [[0, source.length - 1], ranges[1]].entries()) {
              const r = await s3.send(
                new UploadPartCopyCommand({
                  Bucket: bucket,
                  Key: to,
                  UploadId,
                  PartNumber: i + 1,
                  CopySource: `${bucket}/${encodeURIComponent(key)}`,
                  CopySourceRange: `bytes=${range[0]}-${range[1]}`,
                }),
              );
              parts.push({ PartNumber: i + 1, ETag: r.CopyPartResult!.ETag! });
            }
            if (source.length < 5 * MiB) {
              await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: to, UploadId, MultipartUpload: { Parts: parts } })).then(
                () => failures.push(`UploadPartCopy ${name}: a first part under 5 MiB was accepted`),
                (e: Error) => void (e.name === 'EntityTooSmall' || failures.push(`UploadPartCopy ${name}: ${e.name}`)),
              );
              continue;
            }
            const { VersionId } = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: to, UploadId, MultipartUpload: { Parts: parts } }));
            const joined = new Uint8Array(source.length + source.length - half);
            joined.set(source);
            joined.set(source.subarray(half), source.length);
            current.set(`${bucket}/${to}`, joined);
            versions.set(`${bucket}/${to}`, [...(versions.get(`${bucket}/${to}`) ?? []), { id: VersionId!, bytes: joined }]);
          } else if (pick < 0.86) {
            const history = versions.get(name)!;
            if (history.length < 2 || name.includes('/seed-')) continue;
            count('restore');
            const old = history[Math.floor(random() * (history.length - 1))]!;
            const { VersionId } = await s3.send(
              new CopyObjectCommand({ Bucket: bucket, Key: key, CopySource: `${bucket}/${encodeURIComponent(key)}?versionId=${old.id}` }),
            );
            current.set(name, old.bytes);
            history.push({ id: VersionId!, bytes: old.bytes });
            const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
            check(`GET ${name} restored`, await r.Body!.transformToByteArray(), old.bytes);
          } else {
            count('GetObject abandoned');
            const size = current.get(name)!.length;
            await abandonGet(await presignedGet(s3, bucket, key), ABANDON_POINTS[Math.floor(random() * ABANDON_POINTS.length)]!, {
              midBytes: Math.floor(random() * size),
            });
          }
        } catch (err) {
          failures.push(`client ${id} op ${n}: ${(err as Error).name}: ${(err as Error).message}`);
        }
      }
    };
    await Promise.all([0, 1, 2, 3].map(client));
    // Every version of every key, read back at the end.
    for (const [name, history] of versions) {
      const [bucket, ...rest] = name.split('/');
      for (const v of history) {
        const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: rest.join('/'), VersionId: v.id }));
        check(`GET ${name}?versionId=${v.id}`, await r.Body!.transformToByteArray(), v.bytes);
      }
    }
    expect(failures).toEqual([]);
    expect(poisonRuns, 'runs of poison in bodies served').toBe(0);
    for (const op of ['PutObject', 'GetObject', 'GetObject ranged', 'CopyObject', 'restore', 'GetObject abandoned'])
      expect(counts[op] ?? 0, op).toBeGreaterThan(0);
    const tally = await control('/__test/poison');
    expect(tally).toMatchObject({ on: true, caught: caughtBefore });
    expect(tally.loans as number, 'chunks lent and taken back').toBeGreaterThan(1000);
    expect(tally.poisonedBuffers as number, 'buffers given back to the pools, poisoned').toBeGreaterThan(10);
  });
});
