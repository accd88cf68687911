/**
 * Mixed S3 traffic for a soak of the coding budget (issue 19): `clients` loops of PUTs (64 KiB to
 * 8 MiB), whole and ranged GETs, CopyObject and DELETE, with a share of downloads abandoned at a
 * random point (abandon.ts), while the budget gauge is sampled every `sampleMs`. Traffic runs in
 * rounds of `roundMs`; between rounds every client pauses until the work it started has ended
 * and the budget is read at rest: a leak shows as held bytes at rest that grow round by round
 * (busy samples cannot show it: a busy gateway holds budget). The test suite runs it for seconds,
 * bench/soak-budget.ts for half an hour; both judge the same figures.
 */
import { CopyObjectCommand, CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { BudgetSnapshot } from '../../worker/engine/coding-budget.ts';
import { ABANDON_POINTS, abandonGet, codingBudget, presignedGet, settledBudget, type Credentials } from './abandon.ts';

export interface SoakOptions {
  client: S3Client;
  endpoint: string;
  /** An admin key, to read the budget from the signed status. */
  credentials: Credentials;
  bucket: string;
  durationMs: number;
  /** Length of a round of traffic; the budget is read at rest after each. */
  roundMs: number;
  clients: number;
  /** Share of downloads abandoned (0.1: one in ten). */
  abandonShare: number;
  sampleMs?: number;
  /** Called with each sample (progress lines of the long run). */
  onSample?: (atMs: number, b: BudgetSnapshot) => void;
  /** Called with each reading at rest, numbered from 1. */
  onRest?: (round: number, b: BudgetSnapshot) => void;
}

export interface SoakResult {
  requests: Record<string, number>;
  errors: string[];
  samples: { atMs: number; heldBytes: number; holders: number; waiters: number }[];
  /** The budget at rest after each round (the last one: once the traffic stopped). */
  atRest: BudgetSnapshot[];
}

const SIZES = [64 * 1024, 300 * 1024, 1024 * 1024, 3 * 1024 * 1024, 8 * 1024 * 1024];

/** A deterministic pseudo-random sequence (xorshift), so a soak can be repeated. */
function rng(seed: number) {
  let x = seed || 1;
  return () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>> 0) / 2 ** 32);
}

export async function soak(o: SoakOptions): Promise<SoakResult> {
  const { client, bucket } = o;
  await client.send(new CreateBucketCommand({ Bucket: bucket })).catch(() => {});
  const bodies = SIZES.map((n, i) => new Uint8Array(n).map((_, j) => (j * (i + 3)) & 0xff));
  for (let i = 0; i < SIZES.length; i++) await client.send(new PutObjectCommand({ Bucket: bucket, Key: `seed-${i}`, Body: bodies[i] }));
  const requests: Record<string, number> = {};
  const errors: string[] = [];
  const count = (op: string) => (requests[op] = (requests[op] ?? 0) + 1);
  const started = Date.now();
  const until = started + o.durationMs;
  const samples: SoakResult['samples'] = [];
  const sampler = setInterval(() => {
    void codingBudget(o.endpoint, o.credentials).then(
      (b) => {
        const atMs = Date.now() - started;
        samples.push({ atMs, heldBytes: b.heldBytes, holders: b.holders, waiters: b.waiters });
        o.onSample?.(atMs, b);
      },
      () => {},
    );
  }, o.sampleMs ?? 1000);

  const loop = async (id: number, random: () => number, roundEnd: number) => {
    while (Date.now() < roundEnd) {
      const pick = random();
      const size = Math.floor(random() * SIZES.length);
      const key = `k-${id}-${Math.floor(random() * 8)}`;
      try {
        if (pick < 0.25) {
          count('PutObject');
          await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bodies[size] }));
        } else if (pick < 0.8) {
          const url = await presignedGet(client, bucket, `seed-${size}`);
          if (random() < o.abandonShare) {
            count('GetObject abandoned');
            await abandonGet(url, ABANDON_POINTS[Math.floor(random() * 4)]!, { midBytes: Math.floor(random() * SIZES[size]!) });
          } else if (random() < 0.3) {
            count('GetObject ranged');
            const start = Math.floor((random() * SIZES[size]!) / 2);
            const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `seed-${size}`, Range: `bytes=${start}-${start + 65_535}` }));
            await r.Body!.transformToByteArray();
          } else {
            count('GetObject');
            const r = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `seed-${size}` }));
            const got = await r.Body!.transformToByteArray();
            if (got.length !== SIZES[size]) errors.push(`GetObject seed-${size}: ${got.length} bytes`);
          }
        } else if (pick < 0.9) {
          count('CopyObject');
          await client.send(new CopyObjectCommand({ Bucket: bucket, Key: `${key}-copy`, CopySource: `${bucket}/seed-${size}` }));
        } else {
          count('DeleteObject');
          await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
        }
      } catch (err) {
        errors.push(`${(err as Error).name}: ${(err as Error).message}`);
      }
    }
  };
  const randoms = Array.from({ length: o.clients }, (_, i) => rng(i * 7919 + 1));
  const atRest: BudgetSnapshot[] = [];
  try {
    while (Date.now() < until) {
      const roundEnd = Math.min(until, Date.now() + o.roundMs);
      await Promise.all(randoms.map((random, i) => loop(i, random, roundEnd)));
      atRest.push(await settledBudget(o.endpoint, o.credentials));
      o.onRest?.(atRest.length, atRest.at(-1)!);
    }
  } finally {
    clearInterval(sampler);
  }
  return { requests, errors, samples, atRest };
}
