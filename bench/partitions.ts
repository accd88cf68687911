/**
 * npm run bench:partitions [-- --seconds S] [--rounds R] [--clients C] [--size BYTES]
 *
 * One bucket over 1, 4 and 16 catalog partitions (issue 39, docs/PARTITIONS.md), through one local
 * gateway (workerd, six memory backends, EC 4+2, small objects inline): C concurrent clients
 * (default 64) PUT objects of SIZE bytes (default 4 KiB) to random keys for S seconds, then GET
 * them for S seconds; rounds alternate the buckets (their order rotating), so drift in the
 * machine's load falls on all three. Prints requests a second, p50/p99 latency and workerd CPU
 * per request per partition count, and the ratio to one partition.
 * What it can show here: locally every Durable Object runs in the same workerd process, so the
 * partitions share its one thread, and the figures bound what the machine does, not the design.
 * On Cloudflare each partition is its own object (about 400 write transactions or 1,000 requests
 * a second each: docs/ARCHITECTURE.md); this bench then shows the cost of the routing, not the gain.
 * What bounds the gain there is how evenly the calls spread: after each bucket's phases it reads
 * each partition's calls a second (the instances' own count, as the status shows it) and prints
 * the busiest partition's share of its bucket's calls, and so the bucket's rate when that
 * partition reaches one object's limit, relative to a bucket of one partition (1 / share: the
 * projected gain, from measured shares and the platform's published per-object limit).
 */
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { cpus } from 'node:os';
import { GatewayClient } from '../cli/gateway-client.ts';
import { cpuModel, cpuSeconds, loadAverage } from '../test/support/proc.ts';
import { makeClient } from './lib/client.ts';
import { buildBundle, CREDENTIALS, startGateway } from './lib/gateway.ts';

const argv = process.argv.slice(2);
const option = (name: string, d: number) => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : d;
};
const SECONDS = option('--seconds', 8);
const ROUNDS = option('--rounds', 3);
const CLIENTS = option('--clients', 64);
const SIZE = option('--size', 4096);
const COUNTS = [1, 4, 16];
const hex = (n: number) => n.toString(16).padStart(4, '0');

/** Boundaries cutting keys "k/<4 hex digits>/..." into `n` equal ranges. */
const boundaries = (n: number) => Array.from({ length: n - 1 }, (_, i) => `k/${hex(Math.round(((i + 1) * 0x10000) / n))}`);

interface Phase {
  ops: number;
  errors: number;
  lat: number[];
  cpuS: number;
  seconds: number;
}

async function phase(
  g: { pid: number },
  s3: S3Client,
  phaseName: string,
  phaseBucket: string,
  run: (s3: S3Client, i: number) => Promise<void>,
): Promise<Phase> {
  const lat: number[] = [];
  let errors = 0;
  const cpu0 = cpuSeconds(g.pid);
  const t0 = performance.now();
  const end = t0 + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; performance.now() < end; i++) {
        const t = performance.now();
        try {
          await run(s3, c * 1_000_000 + i);
          lat.push(performance.now() - t);
        } catch (err) {
          errors++;
          const e = err as {
            name?: string;
            message?: string;
            $metadata?: { httpStatusCode?: number };
            $response?: { statusCode?: number };
            $responseBodyText?: string;
          };
          const status = e.$metadata?.httpStatusCode ?? e.$response?.statusCode;
          const name = `${e.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}: ${String(e.message ?? err).slice(0, 60)}${e.$responseBodyText ? ` body: ${JSON.stringify(e.$responseBodyText.slice(0, 160))}` : ''} [phase ${phaseName}, bucket ${phaseBucket}, at ${((performance.now() - t0) / 1000).toFixed(1)} s]`;
          errorKinds.set(name, (errorKinds.get(name) ?? 0) + 1);
        }
      }
    }),
  );
  return { ops: lat.length, errors, lat, cpuS: cpuSeconds(g.pid) - cpu0, seconds: (performance.now() - t0) / 1000 };
}

interface CallShares {
  /** The busiest partition's calls over the bucket's. */
  share: number;
  /** Each partition's calls a second. */
  rates: number[];
}

/**
 * Each partition's calls a second as it counts them (model/request-rate.ts: a 5-minute mean in the
 * object's memory, so read right after the bucket's phases: an instance idle for a while may be
 * evicted, and its count with it) and the busiest one's share.
 */
async function callShares(admin: GatewayClient, bucket: string): Promise<CallShares> {
  const answer = (await admin.admin('partitions', { bucket })) as { partitions?: { requestsPerSecond: number }[] };
  const rates = (answer.partitions ?? []).map((p) => p.requestsPerSecond);
  const sum = rates.reduce((a, b) => a + b, 0);
  return { share: sum > 0 ? Math.max(...rates) / sum : 1, rates };
}

/** Every failed request's error name and message, counted (printed after the table). */
const errorKinds = new Map<string, number>();

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

async function main(): Promise<void> {
  const bundle = await buildBundle();
  const backends = Array.from({ length: 6 }, (_, i) => ({ id: `mem-${i}`, kind: 'memory', domain: `memory/zone-${i}` }));
  const config = {
    region: 'us-east-1',
    backends,
    policies: { 'ec-4+2': { k: 4, m: 2, blockSize: 65536, small: { threshold: 8192, mode: 'inline' } } },
    defaultPolicy: 'ec-4+2',
    credentials: [CREDENTIALS],
  };
  const g = await startGateway(bundle, config);
  try {
    const s3 = makeClient({ endpoint: g.origin, credentials: CREDENTIALS }, 'unsigned', CLIENTS);
    const admin = new GatewayClient({ endpoint: g.origin, 'access-key-id': CREDENTIALS.accessKeyId, 'secret-access-key': CREDENTIALS.secretAccessKey }, {});
    for (const n of COUNTS) {
      await s3.send(new CreateBucketCommand({ Bucket: `parts-${n}` }));
      if (n > 1) await admin.admin('partitions', { bucket: `parts-${n}`, at: JSON.stringify(boundaries(n)) });
    }
    const body = new Uint8Array(SIZE).fill(7);
    const written = new Map<number, string[]>(COUNTS.map((n) => [n, []]));
    const results = new Map<number, { put: Phase[]; get: Phase[] }>(COUNTS.map((n) => [n, { put: [], get: [] }]));
    const shares = new Map<number, CallShares[]>(COUNTS.map((n) => [n, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = COUNTS.map((_, i) => COUNTS[(i + round) % COUNTS.length]!);
      for (const n of order) {
        const bucket = `parts-${n}`;
        const keys = written.get(n)!;
        const put = await phase(g, s3, `PUT round ${round}`, bucket, async (c, i) => {
          const key = `k/${hex((i * 2654435761) % 0x10000)}/${round}-${i}`;
          await c.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: SIZE }));
          keys.push(key);
        });
        const get = await phase(g, s3, `GET round ${round}`, bucket, async (c, i) => {
          const res = await c.send(new GetObjectCommand({ Bucket: bucket, Key: keys[(i * 7919) % keys.length]! }));
          await res.Body!.transformToByteArray();
        });
        results.get(n)!.put.push(put);
        results.get(n)!.get.push(get);
        shares.get(n)!.push(await callShares(admin, bucket));
        process.stderr.write(`round ${round} ${n} partitions: PUT ${(put.ops / put.seconds).toFixed(0)}/s, GET ${(get.ops / get.seconds).toFixed(0)}/s\n`);
      }
    }
    const rate = (ps: Phase[]) => ps.reduce((a, p) => a + p.ops, 0) / ps.reduce((a, p) => a + p.seconds, 0);
    const cpuMs = (ps: Phase[]) =>
      (1000 * ps.reduce((a, p) => a + p.cpuS, 0)) /
      Math.max(
        1,
        ps.reduce((a, p) => a + p.ops, 0),
      );
    const base = results.get(1)!;
    console.log(
      `\nmachine: ${cpuModel()}, ${cpus().length} cores, load ${loadAverage()}; ${CLIENTS} clients, ${SIZE}-byte objects, ${ROUNDS} rounds of ${SECONDS} s`,
    );
    console.log('partitions | PUT/s  (x1)   p50 ms  p99 ms  CPU ms/op | GET/s  (x1)   p50 ms  p99 ms  CPU ms/op | errors');
    for (const n of COUNTS) {
      const r = results.get(n)!;
      const line = (ps: Phase[], b: Phase[]) => {
        const lat = ps.flatMap((p) => p.lat);
        return `${rate(ps).toFixed(0).padStart(6)} (${(rate(ps) / rate(b)).toFixed(2)})  ${pct(lat, 50).toFixed(1).padStart(6)}  ${pct(lat, 99).toFixed(1).padStart(6)}  ${cpuMs(ps).toFixed(2).padStart(9)}`;
      };
      const errors = [...r.put, ...r.get].reduce((a, p) => a + p.errors, 0);
      console.log(`${String(n).padStart(10)} | ${line(r.put, base.put)} | ${line(r.get, base.get)} | ${errors}`);
    }
    for (const [kind, n] of errorKinds) console.log(`errors: ${n} x ${kind}`);
    console.log(`\nthe busiest partition's share of its bucket's catalog calls, read after each round (each instance's own count):`);
    console.log('partitions | busiest share (rounds)        projected gain (1/mean share) | calls/s per partition, last round');
    for (const n of COUNTS) {
      const s = shares.get(n)!;
      const mean = s.reduce((a, x) => a + x.share, 0) / s.length;
      const each = s.map((x) => `${(100 * x.share).toFixed(1)}%`).join(' ');
      console.log(
        `${String(n).padStart(10)} | ${each.padEnd(28)}  ${(1 / mean).toFixed(1).padStart(28)} | ${s
          .at(-1)!
          .rates.map((r) => r.toFixed(1))
          .join(' ')}`,
      );
    }
  } finally {
    await g.dispose();
  }
}

await main();
