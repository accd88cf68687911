/**
 * npm run bench [-- --quick] [--json] [--write] [--setups memory,s3rver] [--reps N]
 *                  [--what-if byob-backend-get] [--client unsigned|sdk-default|signed-sha256]
 *                  [--no-big | --big [--big-mib N]] [--no-breakdown] [--no-matrix] [--no-concurrency] [--label NAME]
 *                  [--strict-counts] [--overwrites] [--concurrency-policy ec-8+3] [--bursts 8,32]
 *                  [--backend-latency-ms N] [--burst-kib N]
 *                  [--replot bench/results/NAME.json]
 *
 * End-to-end benchmark of the gateway in workerd: EC 4+2, EC 8+3, EC 10+4 and replicate-3,
 * one bucket each, through the same gateway and the same @aws-sdk/client-s3 client, interleaved
 * (every repetition runs every size and policy, the policy order rotating per repetition), over
 *  (a) in-memory backends inside the worker isolate (the gateway's own cost), and
 *  (b) 20 s3rver processes on loopback (real HTTP; each policy uses k+m of the 20,
 *      chosen per object by the gateway's own placement).
 * Per case: PUT and GET MB/s (one request at a time), workerd CPU seconds per GB (utime+stime
 * from /proc), peak RSS above idle, backend requests per S3 operation, bytes written to backends
 * per byte stored, p50/p99 latency, GET healthy vs one data-shard backend down vs two down.
 * "direct": the same SDK straight to one s3rver (setup b) or to a byte sink/source inside the
 * same workerd (setup a): what the gateway costs over moving the bytes once.
 * Then: a 1 GiB PUT and GET per policy (and 12+4, 16+4) on setup (b), streamed, twice in a fresh gateway, with
 * peak memory and backend requests per GiB; concurrent 4 MiB PUTs and GETs (1, 8, 32, 128 at
 * once) in a fresh gateway, with peak memory; and a breakdown per stage (stages alone inside the isolate, body ingest layers,
 * client modes, one backend's own I/O, the fixed cost of a request). BENCHMARKS.md says how.
 * --overwrites adds one more section (a fresh gateway over memory backends): the same key
 * overwritten in an unversioned and a versioned bucket, catalog calls, CPU and latency per
 * overwrite and their ratio (bench/lib/overwrites.ts); the matrix and its figures are unchanged.
 * --write updates BENCHMARKS.md (between the <!-- bench:start/end --> markers), bench/results/
 * bench.svg and bench/results/bench.json (--label NAME: another section and file name; a
 * --what-if run defaults to "bench-what-if"). Never part of `npm test`.
 */
import { CreateBucketCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { cpus } from 'node:os';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Backend } from '../backends/types.ts';
import { cpuModel, cpuSeconds, loadAverage, rssBytes, rssSampler } from '../test/support/proc.ts';
import { placeShards } from '../worker/engine/placement.ts';
import { expectedCrc32, get, makeClient, put, type ClientMode } from './lib/client.ts';
import { buildBundle, CREDENTIALS, startGateway, type BenchGateway, type Bundle } from './lib/gateway.ts';
import { startS3rvers, s3BackendConfig, type BenchS3rver, type S3rverStats } from './lib/s3rver.ts';
import { chart, type Panel } from './lib/svg.ts';
import { WHAT_IF_NAMES } from './lib/what-if.ts';
import { createOverwriteBuckets, overwriteBatch, summarizeOverwrites, type OverwriteBatch, type OverwriteSummary } from './lib/overwrites.ts';

// ---------------------------------------------------------------------------------- options
const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(name);
const option = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const QUICK = flag('--quick');
const JSON_OUT = flag('--json');
const WRITE = flag('--write');
/** Names what --write produces: BENCHMARKS.md section <!-- LABEL:start -->, bench/results/LABEL.{svg,json}. */
const LABEL = option('--label') ?? (option('--what-if') ? 'bench-what-if' : 'bench');
if (!/^[a-z0-9-]+$/.test(LABEL)) throw new Error('--label: lower-case letters, digits and dashes');
const SETUPS = (option('--setups') ?? 'memory,s3rver').split(',') as SetupName[];
const WHAT_IF = option('--what-if')?.split(',').filter(Boolean) ?? [];
const CLIENT_MODE = (option('--client') ?? 'unsigned') as ClientMode;
const REPS = Number(option('--reps') ?? (QUICK ? 2 : 5));
const BIG = (!QUICK || flag('--big')) && !flag('--no-big');
const BREAKDOWN = !flag('--no-breakdown');
const MATRIX = !flag('--no-matrix');
const CONCURRENT = !flag('--no-concurrency');
/** The policy the concurrency bursts write (default the first, ec-4+2). */
const CONCURRENCY_POLICY = option('--concurrency-policy');
/**
 * Every backend call waits this long before it starts (backends/faulty.ts `delayWhen`, from the
 * backend config's `faults.latencyMs`): backends far away, as a deployed gateway has them.
 */
const BACKEND_LATENCY_MS = Number(option('--backend-latency-ms') ?? 0);
/** The size of each object of the concurrency bursts (default 4 MiB). */
const BURST_BYTES = Number(option('--burst-kib') ?? 4096) * 1024;
/** Exit non-zero when a request-count target is missed (CI's smoke run). */
const STRICT_COUNTS = flag('--strict-counts');
/** The cost of a versioned overwrite against an unversioned one (issue 25): a section of its own. */
const OVERWRITES = flag('--overwrites');
for (const w of WHAT_IF) if (!WHAT_IF_NAMES.includes(w)) throw new Error(`unknown --what-if ${w}`);

const KiB = 1024,
  MiB = 1024 * KiB,
  GiB = 1024 * MiB;
/** Sizes, with the number of objects per repetition (small ones in batches, for latency). */
const SIZES: { size: number; ops: number }[] = QUICK
  ? [
      { size: 64 * KiB, ops: 6 },
      { size: 1 * MiB, ops: 3 },
    ]
  : [
      { size: 64 * KiB, ops: 30 },
      { size: 1 * MiB, ops: 12 },
      { size: 16 * MiB, ops: 2 },
      { size: 64 * MiB, ops: 1 },
    ];
const BIG_SIZE = Number(option('--big-mib') ?? 1024) * MiB;

type SetupName = 'memory' | 's3rver';
type PolicyName = 'ec-4+2' | 'ec-8+3' | 'ec-10+4' | 'ec-12+4' | 'ec-16+4' | 'replicate-3' | 'direct';
const POLICIES: { name: Exclude<PolicyName, 'direct'>; bucket: string; k: number; m: number; config: object }[] = [
  { name: 'ec-4+2', bucket: 'bench-ec-4-2', k: 4, m: 2, config: { k: 4, m: 2 } },
  { name: 'ec-8+3', bucket: 'bench-ec-8-3', k: 8, m: 3, config: { k: 8, m: 3 } },
  { name: 'ec-10+4', bucket: 'bench-ec-10-4', k: 10, m: 4, config: { k: 10, m: 4 } },
  { name: 'replicate-3', bucket: 'bench-replicate-3', k: 1, m: 2, config: { codec: 'replicate', replicas: 3 } },
];
/** The widest codes issue 10 names: in the 1 GiB runs only (their memory), not the matrix. */
const BIG_ONLY: typeof POLICIES = [
  { name: 'ec-12+4', bucket: 'bench-ec-12-4', k: 12, m: 4, config: { k: 12, m: 4 } },
  { name: 'ec-16+4', bucket: 'bench-ec-16-4', k: 16, m: 4, config: { k: 16, m: 4 } },
];
const BACKENDS = 20;
const EC_POLICIES = POLICIES.filter((p) => p.name.startsWith('ec-'));
const REPLICATE = POLICIES.find((p) => p.name === 'replicate-3')!;
/** Concurrent 4 MiB requests per burst (issue 10: memory against concurrency). */
const CONCURRENCY = option('--bursts')?.split(',').map(Number) ?? (QUICK ? [1, 8] : [1, 8, 32, 128]);

// With --json, stdout carries only JSON lines: everything else (wrangler's own logging too) goes to stderr.
const writeStdout = process.stdout.write.bind(process.stdout);
if (JSON_OUT) {
  console.log = console.info = console.warn = console.debug = console.error;
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
}
const log = (...a: unknown[]) => console.log(...a);
const emit = (o: object) => JSON_OUT && writeStdout(JSON.stringify(o) + '\n');

// ------------------------------------------------------------------------------- measurement
type PhaseKind = 'put' | 'get' | 'get-1down' | 'get-2down';

interface Phase {
  setup: SetupName;
  policy: PolicyName;
  size: number;
  rep: number;
  kind: PhaseKind;
  ops: number;
  wallS: number;
  latMs: number[];
  cpuS: number;
  backendCpuS: number;
  benchCpuS: number;
  rssIdle: number;
  rssPeak: number;
  /** Backend calls as the gateway made them (counted in the worker), summed over backends. */
  calls: { put: number; get: number; head: number; delete: number; list: number; failed: number; putBytes: number; getBytes: number };
  /** HTTP requests the s3rver processes served (setup b). */
  http: number | null;
  /** Catalog (Durable Object) calls the gateway made, per method. */
  catalog: Record<string, number>;
  units: number;
}

interface Ctx {
  setup: SetupName;
  g: BenchGateway;
  s3: S3Client;
  servers: BenchS3rver[];
  direct: { s3: S3Client; bucket: string } | null;
  backendIds: string[];
  config: object;
}

const ZERO_CALLS = { put: 0, get: 0, head: 0, delete: 0, list: 0, failed: 0, putBytes: 0, getBytes: 0 };

/**
 * Catalog calls the upkeep makes in the background while a phase runs (a backend back online
 * makes every bucket's repair worklist due: listBucketRecords + repairSoon per bucket; damage
 * found by reads is recorded), not calls of the S3 requests measured.
 */
const UPKEEP_CATALOG_CALLS = new Set([
  'listBucketRecords',
  'repairSoon',
  'markMissing',
  'markRepaired',
  'repairFailed',
  'bucketHealth',
  'takeDueGarbage',
  'queueGarbage',
  'listDegradedUnits',
  'getScrubCursor',
  'recordScrub',
  'getUnit',
  'listUnits',
  'pendingUnitIds',
  'deletedBucketGarbage',
]);

/** Catalog calls of a phase's S3 requests (upkeep's in the background left out). */
function catalogTotal(p: Phase): number {
  return Object.entries(p.catalog ?? {}).reduce((a, [name, n]) => a + (UPKEEP_CATALOG_CALLS.has(name) ? 0 : n), 0);
}

function sumCalls(stats: Record<string, Phase['calls']>): Phase['calls'] {
  const out = { ...ZERO_CALLS };
  for (const c of Object.values(stats)) for (const k of Object.keys(out) as (keyof Phase['calls'])[]) out[k] += c[k];
  return out;
}

async function serverStats(servers: BenchS3rver[]): Promise<number> {
  const all: S3rverStats[] = await Promise.all(servers.map((s) => s.stats()));
  return all.reduce((n, s) => n + s.requests, 0);
}

function serverCpu(servers: BenchS3rver[]): number {
  return servers.reduce((n, s) => n + cpuSeconds(s.pid), 0);
}

/** Runs `op` for i = 0..ops-1, one at a time, measuring everything around the batch. */
async function measure(
  ctx: Ctx,
  meta: Pick<Phase, 'policy' | 'size' | 'rep' | 'kind' | 'ops'>,
  op: (i: number) => Promise<void>,
  idleRss?: number,
): Promise<Phase> {
  const { g, servers } = ctx;
  await g.control('/__bench/reset');
  const http0 = servers.length ? await serverStats(servers) : 0;
  const rssIdle = idleRss ?? rssBytes(g.pid) ?? 0;
  const sampler = rssSampler(g.pid);
  const bench0 = process.cpuUsage();
  const back0 = serverCpu(servers);
  const cpu0 = cpuSeconds(g.pid);
  const latMs: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < meta.ops; i++) {
    const t = performance.now();
    await op(i);
    latMs.push(performance.now() - t);
  }
  const wallS = (performance.now() - t0) / 1000;
  const cpuS = cpuSeconds(g.pid) - cpu0;
  const backendCpuS = serverCpu(servers) - back0;
  const b = process.cpuUsage(bench0);
  const rssPeak = sampler.stop().peak;
  const calls = sumCalls(await g.control('/__bench/stats'));
  const catalog: Record<string, number> = await g.control('/__bench/catalog-stats');
  const http = servers.length ? (await serverStats(servers)) - http0 : null;
  const phase: Phase = {
    setup: ctx.setup,
    ...meta,
    wallS,
    latMs,
    cpuS,
    backendCpuS,
    benchCpuS: (b.user + b.system) / 1e6,
    rssIdle,
    rssPeak,
    calls,
    http,
    catalog,
    units: 0,
  };
  emit({ type: 'phase', ...phase, latMs: undefined, p50Ms: pct(latMs, 50), p99Ms: pct(latMs, 99) });
  return phase;
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

function median(xs: number[]): number {
  return pct(xs, 50);
}

// ---------------------------------------------------------------------------- key placement
const fakeBackends = (ids: string[]) => ids.map((id, i) => ({ id, domain: `d-${i}` }) as unknown as Backend);

/**
 * Object keys whose shard 0 lands on backend `first` and shard 1 on `second` (the gateway's own
 * placement, computed here the same way), so that one degraded phase can take exactly the first
 * data shard (and then the second) of every object down.
 */
function keysPlacedOn(ctx: Ctx, bucket: string, k: number, m: number, prefix: string, count: number, first: number, second: number): string[] {
  const backends = fakeBackends(ctx.backendIds);
  const keys: string[] = [];
  for (let salt = 0; keys.length < count; salt++) {
    const key = `${prefix}-${salt}`;
    const p = placeShards(`${bucket}/${key}`, backends, k, m);
    if (p[0]!.id === ctx.backendIds[first] && p[1]!.id === ctx.backendIds[second]) keys.push(key);
    if (salt > 1e6) throw new Error('no key found for the placement');
  }
  return keys;
}

// ------------------------------------------------------------------------------- the matrix
const phases: Phase[] = [];
const checks: { setup: string; policy: string; size: number; kind: string; ok: boolean }[] = [];

async function runCase(ctx: Ctx, policy: (typeof POLICIES)[number] | 'direct', size: number, ops: number, rep: number, caseNo: number): Promise<void> {
  const verify = rep === 0; // CRC32 of every GET body in the first repetition
  if (policy === 'direct') {
    const seed = caseNo;
    const name = 'direct';
    if (ctx.direct) {
      const d = ctx.direct;
      phases.push(
        await measure(ctx, { policy: name, size, rep, kind: 'put', ops }, (i) =>
          put(d.s3, d.bucket, `direct-${size}-${rep}-${i}`, size, seed + i, CLIENT_MODE),
        ),
      );
      phases.push(
        await measure(ctx, { policy: name, size, rep, kind: 'get', ops }, async (i) => {
          const r = await get(d.s3, d.bucket, `direct-${size}-${rep}-${i}`, verify);
          if (verify) checks.push({ setup: ctx.setup, policy: name, size, kind: 'get', ok: r.bytes === size && r.crc === expectedCrc32(size, seed + i) });
        }),
      );
    } else {
      // The floor inside workerd: the same SDK call into a sink / out of a source, no S3 work.
      phases.push(await measure(ctx, { policy: name, size, rep, kind: 'put', ops }, (i) => put(ctx.s3, '__bench', 'sink', size, seed + i, CLIENT_MODE)));
      phases.push(
        await measure(ctx, { policy: name, size, rep, kind: 'get', ops }, async () => {
          const r = await get(ctx.s3, '__bench', `source-${size}`);
          if (r.bytes !== size) throw new Error(`source gave ${r.bytes} bytes`);
        }),
      );
    }
    return;
  }
  const n = BACKENDS;
  const first = (caseNo * 3) % n,
    second = (first + 1 + (rep % (n - 1))) % n;
  const keys = keysPlacedOn(ctx, policy.bucket, policy.k, policy.m, `o${size}-r${rep}`, ops, first, second);
  const seed = caseNo * 100;
  const meta = { policy: policy.name, size, rep, ops };
  phases.push(await measure(ctx, { ...meta, kind: 'put' }, (i) => put(ctx.s3, policy.bucket, keys[i]!, size, seed + i, CLIENT_MODE)));
  if (rep === 0 && caseNo < 3 * SIZES.length) {
    const placed = await ctx.g.control(`/__bench/placement?bucket=${policy.bucket}&key=${encodeURIComponent(keys[0]!)}`);
    if (placed.placement?.[0] !== ctx.backendIds[first] || placed.placement?.[1] !== ctx.backendIds[second]) {
      throw new Error(`placement differs from the bench's prediction: ${JSON.stringify(placed)}`);
    }
  }
  const getAll = (kind: PhaseKind) => async (i: number) => {
    const r = await get(ctx.s3, policy.bucket, keys[i]!, verify);
    if (verify) checks.push({ setup: ctx.setup, policy: policy.name, size, kind, ok: r.bytes === size && r.crc === expectedCrc32(size, seed + i) });
  };
  phases.push(await measure(ctx, { ...meta, kind: 'get' }, getAll('get')));
  const down = async (ids: number[], action: 'offline' | 'online') => {
    for (const i of ids) await ctx.g.control(`/__bench/fault?backend=${ctx.backendIds[i]}&action=${action}`);
  };
  await down([first], 'offline');
  try {
    phases.push(await measure(ctx, { ...meta, kind: 'get-1down' }, getAll('get-1down')));
  } finally {
    await down([first], 'online');
  }
  await down([first, second], 'offline');
  try {
    phases.push(await measure(ctx, { ...meta, kind: 'get-2down' }, getAll('get-2down')));
  } finally {
    await down([first, second], 'online');
  }
  if (ctx.setup === 'memory') await ctx.g.control('/__bench/purge');
}

function gatewayConfig(backends: object[]): object {
  return {
    region: 'us-east-1',
    backends,
    policies: Object.fromEntries([...POLICIES, ...BIG_ONLY].map((p) => [p.name, p.config])),
    defaultPolicy: 'ec-4+2',
    buckets: Object.fromEntries([...POLICIES, ...BIG_ONLY].map((p) => [p.bucket, p.name])),
    credentials: [CREDENTIALS],
    garbageGraceSeconds: 3600,
  };
}

async function withSetup<T>(bundle: Bundle, setup: SetupName, fn: (ctx: Ctx) => Promise<T>): Promise<T> {
  const servers = setup === 's3rver' ? await startS3rvers(BACKENDS + 1) : [];
  const backendServers = servers.slice(0, BACKENDS);
  const backends =
    setup === 's3rver'
      ? backendServers.map((s, i) => s3BackendConfig(s, i))
      : Array.from({ length: BACKENDS }, (_, i) => ({ id: `mem-${i}`, kind: 'memory', domain: `memory/zone-${i}`, faults: {} }));
  const config = gatewayConfig(
    BACKEND_LATENCY_MS ? backends.map((b) => ({ ...b, faults: { ...(b as { faults?: object }).faults, latencyMs: BACKEND_LATENCY_MS } })) : backends,
  );
  const g = await startGateway(bundle, config);
  try {
    if (!g.direct) log(`warning: could not reach the worker's own workerd; measuring through wrangler's proxy (pid ${g.pid})`);
    const s3 = makeClient({ endpoint: g.origin, credentials: CREDENTIALS }, CLIENT_MODE);
    for (const p of POLICIES) await s3.send(new CreateBucketCommand({ Bucket: p.bucket }));
    const directServer = servers[BACKENDS];
    const direct = directServer
      ? { s3: makeClient({ endpoint: directServer.endpoint, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } }, CLIENT_MODE), bucket: 'b' }
      : null;
    // Counters see only the gateway's backends; the direct server is measured on its own.
    const ctx: Ctx = { setup, g, s3, servers: setup === 's3rver' ? servers : [], direct, backendIds: backends.map((b) => (b as { id: string }).id), config };
    return await fn(ctx);
  } finally {
    await g.dispose();
    await Promise.allSettled(servers.map((s) => s.dispose()));
  }
}

async function runMatrix(ctx: Ctx): Promise<void> {
  const order = [...POLICIES, 'direct' as const];
  let caseNo = 0;
  // Warm-up (not recorded): compiles the paths, fills connection pools.
  for (const p of POLICIES) {
    const key = `warmup-${p.name}`;
    await put(ctx.s3, p.bucket, key, 1 * MiB, 1, CLIENT_MODE);
    await get(ctx.s3, p.bucket, key);
  }
  for (let rep = 0; rep < REPS; rep++) {
    for (const { size, ops } of SIZES) {
      for (let j = 0; j < order.length; j++) {
        const policy = order[(j + rep) % order.length]!;
        await runCase(ctx, policy, size, ops, rep, caseNo++);
      }
    }
    log(`  ${ctx.setup}: repetition ${rep + 1}/${REPS} done (load ${loadAverage()})`);
  }
}

/**
 * One 1 GiB PUT and GET per policy, streamed; peak RSS is what this is for. Each policy gets a
 * fresh gateway (same s3rver backends), warmed up with one 1 MiB PUT and GET, so that "idle" is
 * a worker that has run the path once and holds no garbage from earlier cases.
 */
async function runBig(ctx: Ctx, bundle: Bundle, config: object): Promise<void> {
  for (const p of [...POLICIES, ...BIG_ONLY]) {
    const g = await startGateway(bundle, config);
    try {
      const s3 = makeClient({ endpoint: g.origin, credentials: CREDENTIALS }, CLIENT_MODE);
      await s3.send(new CreateBucketCommand({ Bucket: p.bucket })); // a fresh catalog
      await put(s3, p.bucket, 'big-warmup', MiB, 1, CLIENT_MODE);
      await get(s3, p.bucket, 'big-warmup');
      await new Promise((r) => setTimeout(r, 1000));
      const fresh: Ctx = { ...ctx, g, s3 };
      const idle = rssBytes(g.pid) ?? 0;
      // Round 0 from the fresh worker's idle; round 1 again, from the RSS just before it (the
      // heap has grown by then): together they tell heap growth from memory held per request.
      for (const round of [0, 1]) {
        const key = `big-${p.name}-${round}`;
        const seed = 7 + round;
        const base = round === 0 ? idle : undefined;
        phases.push(
          await measure(
            fresh,
            { policy: p.name, size: BIG_SIZE, rep: round, kind: 'put', ops: 1 },
            () => put(s3, p.bucket, key, BIG_SIZE, seed, CLIENT_MODE),
            base,
          ),
        );
        const putPhase = phases.at(-1)!;
        phases.push(
          await measure(
            fresh,
            { policy: p.name, size: BIG_SIZE, rep: round, kind: 'get', ops: 1 },
            async () => {
              const r = await get(s3, p.bucket, key, true);
              checks.push({
                setup: ctx.setup,
                policy: p.name,
                size: BIG_SIZE,
                kind: 'get',
                ok: r.bytes === BIG_SIZE && r.crc === expectedCrc32(BIG_SIZE, seed),
              });
            },
            base,
          ),
        );
        const getPhase = phases.at(-1)!;
        log(
          `  ${sizeName(BIG_SIZE)} ${p.name} ${round === 0 ? 'fresh' : 'again'}: PUT ${mbps(BIG_SIZE, putPhase.wallS)} MB/s, GET ${mbps(BIG_SIZE, getPhase.wallS)} MB/s, peak RSS above idle ${((putPhase.rssPeak - putPhase.rssIdle) / MiB).toFixed(0)} / ${((getPhase.rssPeak - getPhase.rssIdle) / MiB).toFixed(0)} MiB`,
        );
      }
    } finally {
      await g.dispose();
    }
  }
}

// ------------------------------------------------------------------------------ concurrency
interface ConcurrencyRow {
  policy: string;
  n: number;
  op: 'put' | 'get';
  rssMiB: number;
  wallS: number;
  ok: number;
  slowDown: number;
  failed: number;
  firstError?: string;
}
const concurrency: ConcurrencyRow[] = [];

/**
 * Bursts of n concurrent 4 MiB PUTs, then GETs of them, n = 1, 8, 32, 128, in one fresh gateway
 * (ec-4+2 over the s3rvers, or --concurrency-policy): peak RSS of workerd above its value just before each burst. One
 * isolate serves all of them, inside the same 128 MB on Cloudflare (issue 10, part 2). Each
 * burst has a client of its own (n connections), so no connection left idle by the previous
 * burst is reused after workerd has closed it (5 s).
 */
async function runConcurrency(ctx: Ctx, bundle: Bundle, config: object): Promise<void> {
  const p = CONCURRENCY_POLICY ? POLICIES.find((x) => x.name === CONCURRENCY_POLICY) : POLICIES[0];
  if (!p) throw new Error(`--concurrency-policy: one of ${POLICIES.map((x) => x.name).join(', ')}`);
  const size = BURST_BYTES;
  const g = await startGateway(bundle, config);
  try {
    const warm = makeClient({ endpoint: g.origin, credentials: CREDENTIALS }, CLIENT_MODE);
    await warm.send(new CreateBucketCommand({ Bucket: p.bucket }));
    await put(warm, p.bucket, 'c-warmup', MiB, 1, CLIENT_MODE);
    await get(warm, p.bucket, 'c-warmup');
    warm.destroy();
    await new Promise((r) => setTimeout(r, 1000));
    for (const n of CONCURRENCY) {
      const stored = new Set<number>();
      for (const op of ['put', 'get'] as const) {
        const s3 = makeClient({ endpoint: g.origin, credentials: CREDENTIALS }, CLIENT_MODE, n);
        const idle = rssBytes(g.pid) ?? 0;
        const sampler = rssSampler(g.pid);
        const t0 = performance.now();
        const ids = op === 'put' ? Array.from({ length: n }, (_, i) => i) : [...stored];
        const results = await Promise.allSettled(
          ids.map(async (i) => {
            const key = `c${n}-${i}`;
            if (op === 'put') {
              await put(s3, p.bucket, key, size, 1000 + i, CLIENT_MODE);
              stored.add(i);
            } else {
              const r = await get(s3, p.bucket, key, true);
              checks.push({ setup: ctx.setup, policy: p.name, size, kind: `get-x${n}`, ok: r.bytes === size && r.crc === expectedCrc32(size, 1000 + i) });
            }
          }),
        );
        const wallS = (performance.now() - t0) / 1000;
        const rssMiB = (sampler.stop().peak - idle) / MiB;
        s3.destroy();
        const errors = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
        const slowDown = errors.filter((e) => e.name === 'SlowDown').length;
        const other = errors.filter((e) => e.name !== 'SlowDown');
        const row: ConcurrencyRow = {
          policy: p.name,
          n,
          op,
          rssMiB,
          wallS,
          ok: results.length - errors.length,
          slowDown,
          failed: other.length,
          ...(other[0] ? { firstError: `${other[0].name}: ${other[0].message}`.slice(0, 200) } : {}),
        };
        concurrency.push(row);
        emit({ type: 'concurrency', ...row });
        log(
          `  ${n} concurrent ${sizeName(size)} ${op.toUpperCase()}s: peak RSS above idle ${rssMiB.toFixed(0)} MiB, ${wallS.toFixed(1)} s, ${row.ok} ok, ${slowDown} SlowDown, ${other.length} failed${row.firstError ? ` (${row.firstError})` : ''}`,
        );
      }
    }
  } finally {
    await g.dispose();
  }
}

// ---------------------------------------------------------------------------------- breakdown
/** cpu: workerd CPU seconds per GB (unit 's/GB') or CPU milliseconds per request ('ms/req'). */
interface BreakdownRow {
  stage: string;
  what: string;
  cpu: number;
  unit: 's/GB' | 'ms/req';
  rate: string;
}
const breakdown: BreakdownRow[] = [];
const addBreakdown = (row: BreakdownRow) => {
  breakdown.push(row);
  emit({ type: 'breakdown', ...row });
  log(`  ${row.stage}: ${row.cpu.toFixed(2)} ${row.unit}, ${row.rate}`);
};

async function rawPut(g: BenchGateway, path: string, size: number, headers: Record<string, string>, chunks: () => Iterable<Buffer>): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const req = request(g.origin + path, { method: 'PUT', headers }, (res) => {
      let t = '';
      res.on('data', (c) => (t += c));
      res.on('end', () => (res.statusCode === 200 ? resolve(t) : reject(new Error(`${path}: ${res.statusCode} ${t}`))));
    });
    req.on('error', reject);
    Readable.from(chunks()).pipe(req);
  });
}

/** One backend's own PUT and GET cost inside the isolate (fixture /__bench/backend-io). */
async function runBackendBreakdown(ctx: Ctx): Promise<void> {
  const g = ctx.g;
  const size = (QUICK ? 16 : 64) * MiB;
  const id = ctx.backendIds[0]!;
  const kind = ctx.setup === 's3rver' ? 'S3 backend (s3rver)' : 'memory backend';
  const hows: [string, string, string][] = [
    ['put', 'backend', `${kind} put: a stream of 256 KiB chunks through Backend.put`],
    ['get', 'backend', `${kind} get, drained with a default reader (what ShardReader does)`],
    ...(ctx.setup === 's3rver'
      ? ([
          ['get', 'fetch-default', 'plain fetch of the same blob, default reader'],
          ['get', 'fetch-byob', 'plain fetch of the same blob, BYOB 1 MiB reads (BodyReader)'],
        ] as [string, string, string][])
      : []),
  ];
  for (const [op, how, what] of hows) {
    let best: [number, number, number] = [Infinity, 0, 0];
    for (let r = 0; r < 2; r++) {
      const c0 = cpuSeconds(g.pid),
        t0 = performance.now();
      const out = await g.control(`/__bench/backend-io?backend=${id}&op=${op}&how=${how}&size=${size}`);
      const cpu = ((cpuSeconds(g.pid) - c0) / size) * 1e9,
        rate = size / 1e6 / ((performance.now() - t0) / 1000);
      if (cpu < best[0]) best = [cpu, rate, out.pieces ?? 0];
    }
    addBreakdown({
      stage: `${ctx.setup}-backend-${op}-${how}`,
      what: `${what}${best[2] ? ` (${best[2]} reads)` : ''}`,
      cpu: best[0],
      unit: 's/GB',
      rate: `${best[1].toFixed(0)} MB/s`,
    });
  }
  if (ctx.setup === 'memory') await g.control('/__bench/purge');
}

async function runBreakdown(bundle: Bundle): Promise<void> {
  await withSetup(bundle, 'memory', async (ctx) => {
    const g = ctx.g;
    const cpuOf = async (fn: () => Promise<unknown>, bytes: number): Promise<[number, number]> => {
      const c0 = cpuSeconds(g.pid),
        t0 = performance.now();
      await fn();
      return [((cpuSeconds(g.pid) - c0) / bytes) * 1e9, bytes / 1e6 / ((performance.now() - t0) / 1000)];
    };
    const MB = QUICK ? 64 : 512;
    // 1. Stages alone, inside the isolate, over 1 MiB pieces (the CPU is read from /proc).
    const micro: [string, string, string][] = [
      ['md5', 'MD5 (the ETag), per GB of object', 'op=md5'],
      ['sha256', 'SHA-256 (a signed payload hash), per GB', 'op=sha256'],
      ['crc32', 'CRC32 (SDK default checksum), per GB', 'op=crc32'],
      ['xxh64', 'XXH64 (block checksums), per GB hashed', 'op=xxh64'],
      ['frame-copy', 'new Uint8Array + copy (framing each block), per GB copied', 'op=copy'],
      ['encode-4+2', 'RS encode 4+2, 256 KiB blocks, per GB of data', 'op=encode&k=4&m=2'],
      ['encode-8+3', 'RS encode 8+3, 256 KiB blocks, per GB of data', 'op=encode&k=8&m=3'],
      ['encode-10+4', 'RS encode 10+4, 256 KiB blocks, per GB of data', 'op=encode&k=10&m=4'],
      ['reconstruct-4+2', 'rebuild 1 data shard of 4+2, per GB of data', 'op=reconstruct&k=4&m=2'],
    ];
    for (const [stage, what, q] of micro) {
      const [cpu] = await cpuOf(() => g.control(`/__bench/micro?${q}&mb=${MB}`), MB * MiB);
      addBreakdown({ stage, what, cpu, unit: 's/GB', rate: '-' });
    }
    // 2. Body ingest as the PUT path layers it: raw BYOB reads, then the gate's TransformStream.
    const size = (QUICK ? 64 : 256) * MiB;
    const piece = Buffer.alloc(MiB, 7);
    const plain = function* () {
      for (let i = 0; i < size; i += MiB) yield piece;
    };
    const head = Buffer.from(`${MiB.toString(16)}\r\n`),
      crlf = Buffer.from('\r\n'),
      last = Buffer.from('0\r\n\r\n');
    const chunked = function* () {
      for (let i = 0; i < size; i += MiB) {
        yield head;
        yield piece;
        yield crlf;
      }
      yield last;
    };
    const chunkedLen = (size / MiB) * (head.length + MiB + 2) + last.length;
    const ingest: [string, string, string, boolean][] = [
      ['ingest-raw', 'request body, BYOB 1 MiB reads (BodyReader), nothing else', '', false],
      ['ingest-md5', '... + MD5 per piece', 'md5', false],
      ['ingest-gate', "the gate's plain-body verifier (one reused 1 MiB BYOB buffer, pulled)", 'verifier', false],
      ['ingest-gate-limit-md5', '... + limitBody + MD5: the unsigned PUT path before coding', 'verifier,limit,md5', false],
      ['ingest-chunked', "the gate's aws-chunked decoder (the same pulled buffer)", 'chunked', true],
    ];
    for (const [stage, what, layers, isChunked] of ingest) {
      const headers: Record<string, string> = isChunked
        ? { 'content-length': String(chunkedLen), 'x-amz-decoded-content-length': String(size) }
        : { 'content-length': String(size) };
      const runs: [number, number][] = [];
      for (let r = 0; r < 2; r++) runs.push(await cpuOf(() => rawPut(g, `/__bench/sink?layers=${layers}`, size, headers, isChunked ? chunked : plain), size));
      const [cpu, mbps] = runs.reduce((a, b) => (a[0] <= b[0] ? a : b));
      addBreakdown({ stage, what, cpu, unit: 's/GB', rate: `${mbps.toFixed(0)} MB/s` });
    }
    // 3. The whole PUT and GET per client mode (what the client sends decides what the gate does).
    const csize = (QUICK ? 16 : 64) * MiB;
    for (const mode of ['unsigned', 'sdk-default', 'signed-sha256'] as ClientMode[]) {
      const s3 = makeClient({ endpoint: g.origin, credentials: CREDENTIALS }, mode);
      for (const p of [POLICIES[0]!, REPLICATE]) {
        const runs: [number, number][] = [],
          gets: [number, number][] = [];
        for (let r = 0; r < 2; r++) {
          runs.push(await cpuOf(() => put(s3, p.bucket, `mode-${mode}`, csize, r, mode), csize));
          gets.push(await cpuOf(() => get(s3, p.bucket, `mode-${mode}`), csize));
          await g.control('/__bench/purge');
        }
        const best = (xs: [number, number][]) => xs.reduce((a, b) => (a[0] <= b[0] ? a : b));
        addBreakdown({
          stage: `put-${p.name}-${mode}`,
          what: `whole PUT ${csize / MiB} MiB, ${p.name}, client ${mode}`,
          cpu: best(runs)[0],
          unit: 's/GB',
          rate: `${best(runs)[1].toFixed(0)} MB/s`,
        });
        if (mode === 'unsigned')
          addBreakdown({
            stage: `get-${p.name}`,
            what: `whole GET ${csize / MiB} MiB, ${p.name}`,
            cpu: best(gets)[0],
            unit: 's/GB',
            rate: `${best(gets)[1].toFixed(0)} MB/s`,
          });
      }
    }
    await runBackendBreakdown(ctx);
    const [srcCpu, srcMbps] = await cpuOf(() => get(ctx.s3, '__bench', `source-${csize}`), csize);
    addBreakdown({
      stage: 'egress-source',
      what: 'GET of a generated body (no S3 work): the egress floor',
      cpu: srcCpu,
      unit: 's/GB',
      rate: `${srcMbps.toFixed(0)} MB/s`,
    });
    // 4. The fixed cost of one request: what a small object pays before any byte is coded.
    const N = QUICK ? 10 : 100; // CPU ticks are 10 ms: many requests per figure
    const s3 = ctx.s3;
    const ec = POLICIES[0]!,
      rep = REPLICATE;
    await put(s3, ec.bucket, 'tiny', KiB, 1, CLIENT_MODE);
    for (const p of [ec, rep]) await put(s3, p.bucket, 'small', 64 * KiB, 1, CLIENT_MODE);
    const perRequest: [string, string, (i: number) => Promise<unknown>][] = [
      ['req-sink-64k', 'PUT 64 KiB into the sink (SDK + HTTP + workerd, no auth, no S3 work)', () => put(s3, '__bench', 'sink', 64 * KiB, 1, CLIENT_MODE)],
      ['req-head', 'HeadObject: SigV4 check + catalog read (Durable Object)', () => s3.send(new HeadObjectCommand({ Bucket: ec.bucket, Key: 'tiny' }))],
      ['req-put-1k-inline', 'PUT 1 KiB, stored inline: auth + catalog read + commit, no backend', (i) => put(s3, ec.bucket, `tiny-${i}`, KiB, i, CLIENT_MODE)],
      ['req-get-1k-inline', 'GET 1 KiB inline', () => get(s3, ec.bucket, 'tiny')],
      ['req-put-64k-ec-4+2', 'PUT 64 KiB, ec-4+2 (6 backend writes)', (i) => put(s3, ec.bucket, `small-${i}`, 64 * KiB, i, CLIENT_MODE)],
      ['req-put-64k-replicate-3', 'PUT 64 KiB, replicate-3 (3 backend writes)', (i) => put(s3, rep.bucket, `small-${i}`, 64 * KiB, i, CLIENT_MODE)],
      ['req-get-64k-ec-4+2', 'GET 64 KiB, ec-4+2 (4 backend reads)', () => get(s3, ec.bucket, 'small')],
      ['req-get-64k-replicate-3', 'GET 64 KiB, replicate-3 (1 backend read)', () => get(s3, rep.bucket, 'small')],
    ];
    for (const [stage, what, fn] of perRequest) {
      const lat: number[] = [];
      const c0 = cpuSeconds(g.pid);
      for (let i = 0; i < N; i++) {
        const t = performance.now();
        await fn(i);
        lat.push(performance.now() - t);
      }
      addBreakdown({ stage, what, cpu: ((cpuSeconds(g.pid) - c0) / N) * 1000, unit: 'ms/req', rate: `p50 ${pct(lat, 50).toFixed(1)} ms` });
    }
  });
}

// ------------------------------------------------------------------------------ overwrites
/** Overwrites per batch by size: enough that CPU ticks (10 ms) are many per figure. */
const OVERWRITE_SIZES: { size: number; ops: number }[] = QUICK
  ? [
      { size: KiB, ops: 20 },
      { size: 64 * KiB, ops: 10 },
    ]
  : [
      { size: KiB, ops: 100 },
      { size: 64 * KiB, ops: 50 },
      { size: MiB, ops: 20 },
    ];

async function runOverwrites(ctx: Ctx): Promise<OverwriteSummary[]> {
  await createOverwriteBuckets(ctx.s3);
  for (const { size } of OVERWRITE_SIZES) {
    // warm-up, not recorded
    for (const v of ['unversioned', 'versioned'] as const) await overwriteBatch(ctx.g, ctx.s3, v, size, 3, 0, CLIENT_MODE);
  }
  const batches: OverwriteBatch[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    for (const { size, ops } of OVERWRITE_SIZES) {
      const order = rep % 2 ? (['versioned', 'unversioned'] as const) : (['unversioned', 'versioned'] as const);
      for (const v of order) batches.push(await overwriteBatch(ctx.g, ctx.s3, v, size, ops, (rep + 1) * 1000, CLIENT_MODE));
    }
    log(`  overwrites: repetition ${rep + 1}/${REPS} done (load ${loadAverage()})`);
  }
  return summarizeOverwrites(batches, UPKEEP_CATALOG_CALLS);
}

function overwriteTable(rows: OverwriteSummary[]): string {
  const calls = (c: Record<string, number>) =>
    Object.entries(c)
      .map(([name, n]) => `${name} ${n === Math.round(n) ? n : n.toFixed(2)}`)
      .join(', ');
  const ratio = (a: number, b: number) => (a > 0 ? `${(b / a).toFixed(2)}x` : '-');
  return markdownTable(
    [
      'size',
      'catalog calls/overwrite unversioned',
      'versioned',
      'ratio',
      'p50 ms unversioned',
      'versioned',
      'ratio',
      'workerd cpu ms unversioned',
      'versioned',
      'ratio',
    ],
    rows.map((r) => [
      sizeName(r.size),
      `${r.catalogPerOp.unversioned.toFixed(2)} (${calls(r.catalog.unversioned)})${r.catalogVaried.unversioned ? ' varied' : ''}`,
      `${r.catalogPerOp.versioned.toFixed(2)} (${calls(r.catalog.versioned)})${r.catalogVaried.versioned ? ' varied' : ''}`,
      ratio(r.catalogPerOp.unversioned, r.catalogPerOp.versioned),
      r.p50Ms.unversioned.toFixed(1),
      r.p50Ms.versioned.toFixed(1),
      ratio(r.p50Ms.unversioned, r.p50Ms.versioned),
      r.cpuMsPerOp.unversioned.toFixed(2),
      r.cpuMsPerOp.versioned.toFixed(2),
      ratio(r.cpuMsPerOp.unversioned, r.cpuMsPerOp.versioned),
    ]),
  );
}

// ---------------------------------------------------------------------------------- summary
const mbps = (bytes: number, s: number) => (bytes / 1e6 / s).toFixed(0);

interface Summary {
  setup: SetupName;
  policy: PolicyName;
  size: number;
  samples: number;
  putMBps: number;
  getMBps: number;
  get1MBps: number | null;
  get2MBps: number | null;
  putCpu: number;
  getCpu: number;
  get1Cpu: number | null;
  get2Cpu: number | null;
  putBackendCpu: number | null;
  getBackendCpu: number | null;
  putRssMiB: number;
  getRssMiB: number;
  /** Large runs only: a second PUT/GET in the same worker, above the RSS just before it. */
  putRssAgainMiB: number | null;
  getRssAgainMiB: number | null;
  putReqPerOp: number | null;
  getReqPerOp: number | null;
  get1ReqPerOp: number | null;
  get2ReqPerOp: number | null;
  /** Catalog (Durable Object) calls per PUT and per healthy GET. */
  putCatPerOp: number | null;
  getCatPerOp: number | null;
  putHttpPerOp: number | null;
  getHttpPerOp: number | null;
  writtenPerStored: number | null;
  putP50: number;
  putP99: number;
  getP50: number;
  getP99: number;
}

function summarize(setup: SetupName, policy: PolicyName, size: number): Summary | null {
  const of = (kind: PhaseKind) => phases.filter((p) => p.setup === setup && p.policy === policy && p.size === size && p.kind === kind);
  const put = of('put'),
    get = of('get'),
    g1 = of('get-1down'),
    g2 = of('get-2down');
  if (put.length === 0) return null;
  const bytes = (ps: Phase[]) => ps.reduce((n, p) => n + p.ops * p.size, 0);
  // Throughput: median over repetitions of (bytes of the batch / its wall time).
  const tput = (ps: Phase[]) => (ps.length ? median(ps.map((p) => (p.ops * p.size) / 1e6 / p.wallS)) : null);
  // CPU per GB: total CPU over total bytes (ticks are 10 ms: summing beats a median of few ticks).
  const cpu = (ps: Phase[]) => (ps.length ? (ps.reduce((n, p) => n + p.cpuS, 0) / bytes(ps)) * 1e9 : null);
  const perOp = (ps: Phase[], f: (p: Phase) => number) => (ps.length ? ps.reduce((n, p) => n + f(p), 0) / ps.reduce((n, p) => n + p.ops, 0) : null);
  const big = size === BIG_SIZE;
  const rss = (ps: Phase[]) => Math.max(...ps.filter((p) => !big || p.rep === 0).map((p) => p.rssPeak - p.rssIdle)) / MiB;
  const rssAgain = (ps: Phase[]) =>
    big && ps.some((p) => p.rep === 1) ? Math.max(...ps.filter((p) => p.rep === 1).map((p) => p.rssPeak - p.rssIdle)) / MiB : null;
  const lat = (ps: Phase[]) => ps.flatMap((p) => p.latMs);
  const isDirect = policy === 'direct';
  return {
    setup,
    policy,
    size,
    samples: put.length,
    putMBps: tput(put)!,
    getMBps: tput(get)!,
    get1MBps: tput(g1),
    get2MBps: tput(g2),
    putCpu: cpu(put)!,
    getCpu: cpu(get)!,
    get1Cpu: cpu(g1),
    get2Cpu: cpu(g2),
    putBackendCpu: setup === 's3rver' ? (put.reduce((n, p) => n + p.backendCpuS, 0) / bytes(put)) * 1e9 : null,
    getBackendCpu: setup === 's3rver' ? (get.reduce((n, p) => n + p.backendCpuS, 0) / bytes(get)) * 1e9 : null,
    putRssMiB: rss(put),
    getRssMiB: rss(get),
    putRssAgainMiB: rssAgain(put),
    getRssAgainMiB: rssAgain(get),
    putReqPerOp: isDirect ? null : perOp(put, (p) => p.calls.put + p.calls.head + p.calls.delete + p.calls.list + p.calls.get),
    getReqPerOp: isDirect ? null : perOp(get, (p) => p.calls.get + p.calls.head + p.calls.list),
    get1ReqPerOp: isDirect ? null : perOp(g1, (p) => p.calls.get + p.calls.head + p.calls.list),
    get2ReqPerOp: isDirect ? null : perOp(g2, (p) => p.calls.get + p.calls.head + p.calls.list),
    putCatPerOp: isDirect ? null : perOp(put, catalogTotal),
    getCatPerOp: isDirect ? null : perOp(get, catalogTotal),
    putHttpPerOp: setup === 's3rver' && !isDirect ? perOp(put, (p) => p.http ?? 0) : null,
    getHttpPerOp: setup === 's3rver' && !isDirect ? perOp(get, (p) => p.http ?? 0) : null,
    writtenPerStored: isDirect ? null : put.reduce((n, p) => n + p.calls.putBytes, 0) / bytes(put),
    putP50: pct(lat(put), 50),
    putP99: pct(lat(put), 99),
    getP50: pct(lat(get), 50),
    getP99: pct(lat(get), 99),
  };
}

const sizeName = (n: number) => (n >= GiB ? `${n / GiB} GiB` : n >= MiB ? `${n / MiB} MiB` : `${n / KiB} KiB`);
const f = (v: number | null | undefined, d = 0) => (v === null || v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(d));

function table(rows: Summary[], setup: SetupName): string {
  const s3 = setup === 's3rver';
  const head = [
    'policy',
    'size',
    'reps',
    'PUT MB/s',
    'GET MB/s',
    '1-down',
    '2-down',
    'PUT cpu s/GB',
    'GET cpu s/GB',
    '1-down cpu',
    ...(s3 ? ['s3rver cpu s/GB PUT/GET'] : []),
    s3 ? 'PUT req/op [http]' : 'PUT req/op',
    s3 ? 'GET req/op ok/1d/2d [http]' : 'GET req/op ok/1d/2d',
    'catalog calls/op PUT/GET',
    'wr B/B',
    'PUT p50/p99 ms',
    'GET p50/p99 ms',
    'RSS MiB PUT/GET',
  ];
  const n = (v: number | null) => (v === null ? '-' : Number.isInteger(Math.round(v * 10) / 10) ? v.toFixed(0) : v.toFixed(1));
  const lines = rows.map((r) => {
    const direct = r.policy === 'direct';
    return [
      r.policy,
      sizeName(r.size),
      String(r.samples),
      f(r.putMBps),
      f(r.getMBps),
      f(r.get1MBps),
      f(r.get2MBps),
      direct && s3 ? '-' : f(r.putCpu, 2),
      direct && s3 ? '-' : f(r.getCpu, 2),
      f(r.get1Cpu, 2),
      ...(s3 ? [`${f(r.putBackendCpu, 2)}/${f(r.getBackendCpu, 2)}`] : []),
      direct ? '-' : `${n(r.putReqPerOp)}${s3 ? ` [${n(r.putHttpPerOp)}]` : ''}`,
      direct ? '-' : `${n(r.getReqPerOp)}/${n(r.get1ReqPerOp)}/${n(r.get2ReqPerOp)}${s3 ? ` [${n(r.getHttpPerOp)}]` : ''}`,
      direct ? '-' : `${n(r.putCatPerOp)}/${n(r.getCatPerOp)}`,
      f(r.writtenPerStored, 2),
      r.size <= MiB ? `${f(r.putP50, 1)}/${f(r.putP99, 1)}` : '-',
      r.size <= MiB ? `${f(r.getP50, 1)}/${f(r.getP99, 1)}` : '-',
      direct && s3 ? '-' : `${f(r.putRssMiB)}/${f(r.getRssMiB)}${r.putRssAgainMiB !== null ? ` (again ${f(r.putRssAgainMiB)}/${f(r.getRssAgainMiB)})` : ''}`,
    ];
  });
  return markdownTable(head, lines, 2);
}

/** A Markdown table that also reads as plain text; the first `left` columns align left. */
function markdownTable(head: string[], lines: string[][], left = 1): string {
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const row = (cells: string[]) => `| ${cells.map((c, i) => (i < left ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [row(head), `|${widths.map((w, i) => (i < left ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...lines.map(row)].join('\n');
}

interface Ratio {
  setup: string;
  size: string;
  name: string;
  value: number | null;
}

function ratios(all: Summary[]): Ratio[] {
  const out: Ratio[] = [];
  const by = (setup: string, policy: string, size: number) => all.find((s) => s.setup === setup && s.policy === policy && s.size === size);
  for (const setup of SETUPS) {
    for (const size of [...new Set(all.filter((s) => s.setup === setup).map((s) => s.size))]) {
      const r3 = by(setup, 'replicate-3', size),
        d = by(setup, 'direct', size);
      const add = (name: string, value: number | null | undefined) => out.push({ setup, size: sizeName(size), name, value: value ?? null });
      for (const ec of EC_POLICIES.map((p) => p.name)) {
        const e = by(setup, ec, size);
        if (!e || !r3) continue;
        add(`${ec}/replicate-3 PUT cpu/GB`, e.putCpu / r3.putCpu);
        add(`${ec}/replicate-3 PUT MB/s`, e.putMBps / r3.putMBps);
        add(`${ec}/replicate-3 GET MB/s`, e.getMBps / r3.getMBps);
        add(`${ec}/replicate-3 GET cpu/GB`, e.getCpu / r3.getCpu);
      }
      for (const p of POLICIES) {
        const e = by(setup, p.name, size);
        if (!e) continue;
        add(`${p.name} 1-down/healthy GET MB/s`, e.get1MBps !== null ? e.get1MBps / e.getMBps : null);
        add(`${p.name} 2-down/healthy GET MB/s`, e.get2MBps !== null ? e.get2MBps / e.getMBps : null);
        if (d) {
          add(`${p.name}/direct PUT MB/s`, e.putMBps / d.putMBps);
          add(`${p.name}/direct GET MB/s`, e.getMBps / d.getMBps);
          if (setup === 's3rver' && e.putBackendCpu !== null && d.putBackendCpu) {
            add(`${p.name}/direct PUT cpu/GB, workerd + s3rvers`, (e.putCpu + e.putBackendCpu) / d.putBackendCpu);
            add(`${p.name}/direct GET cpu/GB, workerd + s3rvers`, (e.getCpu + (e.getBackendCpu ?? 0)) / (d.getBackendCpu ?? NaN));
          }
        }
      }
    }
  }
  return out;
}

function ratioTable(rs: Ratio[]): string {
  const names = [...new Set(rs.map((r) => r.name))];
  const cols = [...new Set(rs.map((r) => `${r.setup} ${r.size}`))];
  const lines = names.map((n) => [n, ...cols.map((c) => f(rs.find((r) => r.name === n && `${r.setup} ${r.size}` === c)?.value, 2))]);
  return markdownTable(['ratio', ...cols], lines);
}

interface Target {
  target: string;
  figure: string;
  met: boolean | null;
  /** A request count (deterministic, unlike timings): --strict-counts fails the run when missed. */
  count?: boolean;
}

/** Block size of every bench policy (the config default). */
const BENCH_BLOCK = 256 * KiB;

/**
 * Issue 23's request-count goals for one policy and object size: GETs with one and two data-shard
 * backends down (k+1 / k+2 for an object of one row; at most 2k per column unit with one or two
 * down, recorded or not: column-rebuild.ts), replicate-3 one GET, catalog calls per PUT
 * (2 coded) and per GET (1).
 */
function countTargets(setup: string, p: (typeof POLICIES)[number], size: number, r: Summary): Target[] {
  const out: Target[] = [];
  const tag = `${p.name}, ${setup} ${sizeName(size)}`;
  const column = p.k + p.m > 6 && p.name !== 'replicate-3';
  const S = Math.min(8 * MiB, Math.floor((24 * MiB) / p.m / BENCH_BLOCK) * BENCH_BLOCK);
  const units = column ? Math.ceil(size / (p.k * S)) : 1;
  const oneRow = column ? Math.ceil(size / p.k) <= BENCH_BLOCK : size <= p.k * BENCH_BLOCK;
  if (p.name === 'replicate-3') {
    out.push({ target: `replicate-3 GET = 1 backend request (${tag})`, figure: `${f(r.getReqPerOp, 1)}`, met: r.getReqPerOp === 1, count: true });
  } else {
    const one = oneRow || !column ? p.k + 1 : 2 * p.k * units,
      two = oneRow || !column ? p.k + 2 : 2 * p.k * units;
    if (r.get1ReqPerOp !== null)
      out.push({
        target: `degraded GET requests, 1 down <= ${oneRow ? 'k+1' : column ? '2k per unit' : 'k+1'} (${tag})`,
        figure: `${f(r.get1ReqPerOp, 1)} (bound ${one})`,
        met: r.get1ReqPerOp <= one,
        count: true,
      });
    if (r.get2ReqPerOp !== null)
      out.push({
        target: `degraded GET requests, 2 down <= ${oneRow ? 'k+2' : column ? '2k per unit' : 'k+2'} (${tag})`,
        figure: `${f(r.get2ReqPerOp, 1)} (bound ${two})`,
        met: r.get2ReqPerOp <= two,
        count: true,
      });
  }
  if (r.putCatPerOp !== null)
    out.push({
      target: `PUT catalog calls <= 2, GET 1 (${tag})`,
      figure: `${f(r.putCatPerOp, 1)} per PUT, ${f(r.getCatPerOp, 1)} per GET`,
      met: r.putCatPerOp <= 2 && r.getCatPerOp === 1,
      count: true,
    });
  return out;
}

/**
 * Issue 23's timing goals, as ratios within one run: wide codes' GET with one data-shard backend
 * down against healthy (16 and 64 MiB), 8+3's small GET p50 against 4+2's, small coded PUT CPU
 * against replicate-3's, and large PUT CPU against the run's own floor (MD5 + ingest + (k+m)/k x
 * (backend egress + XXH64) + encode, all from this run's breakdown). The issue names s3rver; the
 * memory setup is printed too.
 */
function issue23Targets(all: Summary[], setup: SetupName): Target[] {
  const out: Target[] = [];
  const by = (policy: string, size: number) => all.find((s) => s.setup === setup && s.policy === policy && s.size === size);
  for (const name of ['ec-8+3', 'ec-10+4'])
    for (const size of [16 * MiB, 64 * MiB]) {
      const e = by(name, size);
      if (!e || e.get1MBps === null) continue;
      out.push({
        target: `1-down/healthy GET MB/s >= 0.8x (${name}, ${setup} ${sizeName(size)})`,
        figure: `${(e.get1MBps / e.getMBps).toFixed(2)}x (${e.get1MBps.toFixed(0)} vs ${e.getMBps.toFixed(0)} MB/s)`,
        met: e.get1MBps / e.getMBps >= 0.8,
      });
    }
  const small = SIZES[0]!.size;
  const w = by('ec-8+3', small),
    n = by('ec-4+2', small),
    r3 = by('replicate-3', small);
  if (w && n)
    out.push({
      target: `8+3 ${sizeName(small)} GET p50 <= 1.3x 4+2 (${setup})`,
      figure: `${(w.getP50 / n.getP50).toFixed(2)}x (${w.getP50.toFixed(1)} vs ${n.getP50.toFixed(1)} ms)`,
      met: w.getP50 / n.getP50 <= 1.3,
    });
  for (const p of EC_POLICIES) {
    const e = by(p.name, small);
    if (e && r3)
      out.push({
        target: `small PUT CPU/GB <= 1.2x replicate-3 (${p.name}, ${setup} ${sizeName(small)})`,
        figure: `${(e.putCpu / r3.putCpu).toFixed(2)}x (${e.putCpu.toFixed(1)} vs ${r3.putCpu.toFixed(1)} s/GB)`,
        met: e.putCpu / r3.putCpu <= 1.2,
      });
  }
  const stage = (name: string) => breakdown.find((b) => b.stage === name)?.cpu;
  const md5 = stage('md5'),
    ingest = stage('ingest-raw'),
    xxh = stage('xxh64'),
    egress = stage(`${setup}-backend-put-backend`);
  const largest = SIZES[SIZES.length - 1]!.size;
  for (const p of EC_POLICIES) {
    const e = by(p.name, largest),
      encode = stage(`encode-${p.k}+${p.m}`);
    if (!e || md5 === undefined || ingest === undefined || xxh === undefined || egress === undefined || encode === undefined) continue;
    const floor = md5 + ingest + ((p.k + p.m) / p.k) * (egress + xxh) + encode;
    out.push({
      target: `large PUT CPU/GB <= 1.1x its floor (${p.name}, ${setup} ${sizeName(largest)})`,
      figure: `${(e.putCpu / floor).toFixed(2)}x (${e.putCpu.toFixed(2)} vs ${floor.toFixed(2)} s/GB: MD5 ${md5.toFixed(2)} + ingest ${ingest.toFixed(2)} + ${((p.k + p.m) / p.k).toFixed(2)} x (egress ${egress.toFixed(2)} + XXH64 ${xxh.toFixed(2)}) + encode ${encode.toFixed(2)})`,
      met: e.putCpu / floor <= 1.1,
    });
  }
  return out;
}

function targets(all: Summary[]): Target[] {
  const out: Target[] = [];
  for (const setup of SETUPS) out.push(...issue23Targets(all, setup));
  const by = (setup: string, policy: string, size: number) => all.find((s) => s.setup === setup && s.policy === policy && s.size === size);
  const sizes = SIZES.map((s) => s.size);
  const largest = sizes[sizes.length - 1]!;
  for (const setup of SETUPS) {
    for (const size of sizes.filter((s) => s >= MiB)) {
      const e = by(setup, 'ec-4+2', size),
        r = by(setup, 'replicate-3', size);
      if (!e || !r) continue;
      const tag = `${setup} ${sizeName(size)}`;
      out.push({
        target: `EC 4+2 PUT CPU/GB <= 1.15x replicate-3 (${tag})`,
        figure: `${(e.putCpu / r.putCpu).toFixed(2)}x (${e.putCpu.toFixed(2)} vs ${r.putCpu.toFixed(2)} s/GB)`,
        met: e.putCpu / r.putCpu <= 1.15,
      });
      if (setup === 's3rver')
        out.push({
          target: `EC 4+2 PUT MB/s >= 1.0x replicate-3 (${tag})`,
          figure: `${(e.putMBps / r.putMBps).toFixed(2)}x (${e.putMBps.toFixed(0)} vs ${r.putMBps.toFixed(0)} MB/s)`,
          met: e.putMBps / r.putMBps >= 1.0,
        });
      out.push({
        target: `healthy EC 4+2 GET >= 0.9x replicate-3 (${tag})`,
        figure: `${(e.getMBps / r.getMBps).toFixed(2)}x (${e.getMBps.toFixed(0)} vs ${r.getMBps.toFixed(0)} MB/s)`,
        met: e.getMBps / r.getMBps >= 0.9,
      });
      if (e.get1MBps !== null)
        out.push({
          target: `EC 4+2 GET, one backend down >= 0.8x healthy (${tag})`,
          figure: `${(e.get1MBps / e.getMBps).toFixed(2)}x (${e.get1MBps.toFixed(0)} vs ${e.getMBps.toFixed(0)} MB/s)`,
          met: e.get1MBps / e.getMBps >= 0.8,
        });
    }
    for (const p of POLICIES)
      for (const size of sizes) {
        const r = by(setup, p.name, size);
        if (r) out.push(...countTargets(setup, p, size, r));
      }
    for (const p of EC_POLICIES) {
      const small = by(setup, p.name, sizes[0]!);
      if (small)
        out.push({
          target: `small PUT = k+m writes, healthy GET = k reads (${p.k}+${p.m}, ${setup} ${sizeName(sizes[0]!)})`,
          figure: `${f(small.putReqPerOp, 1)} requests per PUT, ${f(small.getReqPerOp, 1)} per GET`,
          met: small.putReqPerOp === p.k + p.m && small.getReqPerOp === p.k,
        });
    }
    // Issue 10: PUT CPU against MD5 alone (the ETag's floor, the breakdown's md5 stage, same
    // workerd build), GET CPU against the byte source; memory backends, the largest size.
    const md5 = breakdown.find((b) => b.stage === 'md5'),
      d = by(setup, 'direct', largest);
    if (setup === 'memory') {
      for (const p of EC_POLICIES) {
        const e = by(setup, p.name, largest);
        if (!e) continue;
        const tag = `${p.name}, memory ${sizeName(largest)}`;
        if (md5)
          out.push({
            target: `PUT CPU/GB <= 1.25x MD5 alone (${tag})`,
            figure: `${(e.putCpu / md5.cpu).toFixed(2)}x (${e.putCpu.toFixed(2)} vs ${md5.cpu.toFixed(2)} s/GB)`,
            met: e.putCpu / md5.cpu <= 1.25,
          });
        if (d)
          out.push({
            target: `GET CPU/GB <= 1.5x the direct byte-source GET (${tag})`,
            figure: `${(e.getCpu / d.getCpu).toFixed(2)}x (${e.getCpu.toFixed(2)} vs ${d.getCpu.toFixed(2)} s/GB)`,
            met: e.getCpu / d.getCpu <= 1.5,
          });
      }
      const small = by(setup, 'ec-4+2', sizes[0]!),
        ds = by(setup, 'direct', sizes[0]!);
      if (small && ds) {
        out.push({
          target: `small PUT within 2x of direct, CPU/GB (ec-4+2, memory ${sizeName(sizes[0]!)})`,
          figure: `${(small.putCpu / ds.putCpu).toFixed(2)}x (${small.putCpu.toFixed(1)} vs ${ds.putCpu.toFixed(1)} s/GB); p50/p99 ${small.putP50.toFixed(1)}/${small.putP99.toFixed(1)} ms vs ${ds.putP50.toFixed(1)}/${ds.putP99.toFixed(1)}`,
          met: small.putCpu / ds.putCpu <= 2,
        });
        out.push({
          target: `small GET within 2x of direct, CPU/GB (ec-4+2, memory ${sizeName(sizes[0]!)})`,
          figure: `${(small.getCpu / ds.getCpu).toFixed(2)}x (${small.getCpu.toFixed(1)} vs ${ds.getCpu.toFixed(1)} s/GB); p50/p99 ${small.getP50.toFixed(1)}/${small.getP99.toFixed(1)} ms vs ${ds.getP50.toFixed(1)}/${ds.getP99.toFixed(1)}`,
          met: small.getCpu / ds.getCpu <= 2,
        });
      }
    }
  }
  for (const p of [...POLICIES, ...BIG_ONLY]) {
    const b = by('s3rver', p.name, BIG_SIZE);
    if (!b) continue;
    const peak = Math.max(b.putRssMiB, b.getRssMiB);
    const again =
      b.putRssAgainMiB !== null
        ? `; a second time in the same worker, above the RSS before it: PUT ${f(b.putRssAgainMiB)}, GET ${f(b.getRssAgainMiB)} MiB`
        : '';
    out.push({
      target: `${sizeName(BIG_SIZE)} PUT and GET peak RSS < 64 MiB above idle (${p.name}, s3rver)`,
      figure: `from a fresh worker's idle: PUT ${b.putRssMiB.toFixed(0)} MiB, GET ${b.getRssMiB.toFixed(0)} MiB${again}`,
      met: peak < 64,
    });
    const perGiB = (v: number | null) => (v === null ? '-' : ((v * GiB) / BIG_SIZE).toFixed(0));
    out.push({
      target: `backend requests per GiB stored, kept low (${p.name}, ${sizeName(BIG_SIZE)} object)`,
      figure: `${perGiB(b.putReqPerOp)} per GiB written, ${perGiB(b.getReqPerOp)} per GiB read`,
      met: null,
    });
  }
  for (const c of concurrency.filter((x) => x.n === Math.max(...CONCURRENCY))) {
    out.push({
      target: `${c.n} concurrent ${sizeName(BURST_BYTES)} ${c.op.toUpperCase()}s: isolate under 100 MiB above idle, none refused but by SlowDown (${c.policy}, s3rver)`,
      figure: `peak ${c.rssMiB.toFixed(0)} MiB above idle; ${c.ok} ok, ${c.slowDown} SlowDown, ${c.failed} other failures`,
      met: c.rssMiB < 100 && c.failed === 0,
    });
  }
  return out;
}

function svg(all: Summary[], caption: string): string {
  const panels: Panel[] = [];
  const sizes = SIZES.map((s) => s.size);
  const series = (setup: string, pick: (s: Summary) => number | null, withDirect: boolean) =>
    [...POLICIES.map((p) => p.name), ...(withDirect ? ['direct' as const] : [])].map((name) => ({
      name,
      values: sizes.map((size) => {
        const s = all.find((x) => x.setup === setup && x.policy === name && x.size === size);
        return s ? pick(s) : null;
      }),
    }));
  for (const setup of SETUPS) {
    const label = setup === 'memory' ? 'memory backends' : `${BACKENDS} s3rvers`;
    panels.push({ title: `PUT MB/s, ${label}`, unit: 'MB/s', groups: sizes.map(sizeName), series: series(setup, (s) => s.putMBps, true) });
    panels.push({ title: `GET MB/s, ${label}`, unit: 'MB/s', groups: sizes.map(sizeName), series: series(setup, (s) => s.getMBps, true) });
    panels.push({ title: `PUT CPU s/GB, ${label}`, unit: 's/GB', groups: sizes.map(sizeName), series: series(setup, (s) => s.putCpu, false) });
    panels.push({ title: `GET CPU s/GB, ${label}`, unit: 's/GB', groups: sizes.map(sizeName), series: series(setup, (s) => s.getCpu, false) });
  }
  return chart(panels, 4, `log scales; CPU = workerd utime+stime per GB of object | ${caption}`);
}

// ------------------------------------------------------------------------------------- main
/** HEAD, plus the gateway source files that differ from it (others edit the worktree). Read-only git. */
function gitHead(): string {
  const cwd = fileURLToPath(new URL('..', import.meta.url));
  const git = (...a: string[]) => execFileSync('git', a, { cwd }).toString().trim();
  try {
    const head = git('rev-parse', '--short', 'HEAD');
    const paths = ['worker', 'backends', 'coder-wasm'];
    const changed = [
      ...git('diff', '--name-only', 'HEAD', '--', ...paths).split('\n'),
      ...git('ls-files', '--others', '--exclude-standard', '--', ...paths).split('\n'),
    ].filter(Boolean);
    return changed.length ? `${head} + uncommitted ${changed.join(', ')}` : head;
  } catch {
    return 'unknown';
  }
}

/** --replot FILE.json: redraws FILE.svg from a saved run (after a change to the chart). */
function replot(file: string): void {
  const saved = JSON.parse(readFileSync(file, 'utf8')) as {
    run: { command: string; git: string; cpu: string; cores: number; node: string };
    summaries: Summary[];
  };
  const r = saved.run;
  const big = Math.max(...saved.summaries.map((x) => x.size));
  const sizes = new Set(SIZES.map((x) => x.size));
  const rows = saved.summaries.filter((x) => x.size !== big || sizes.has(big));
  writeFileSync(file.replace(/\.json$/, '.svg'), svg(rows, `${r.command} | ${r.git} | ${r.cpu}, ${r.cores} cores, Node ${r.node}`));
  log(`wrote ${file.replace(/\.json$/, '.svg')}`);
}

async function main(): Promise<void> {
  const replotFile = option('--replot');
  if (replotFile) return replot(replotFile);
  const started = Date.now();
  const machine = { cpu: cpuModel(), cores: cpus().length, node: process.version, loadStart: loadAverage() };
  const bundle = await buildBundle(WHAT_IF);
  const run = {
    command: `npm run bench${argv.length ? ` -- ${argv.join(' ')}` : ''}`,
    git: gitHead(),
    bundleSha256: bundle.sha256.slice(0, 16),
    whatIf: WHAT_IF,
    clientMode: CLIENT_MODE,
    reps: REPS,
    sizes: SIZES,
    setups: SETUPS,
    ...machine,
  };
  log(`shardgate e2e bench: ${run.command}`);
  log(`machine: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}; load average at start ${machine.loadStart}`);
  log(
    `code: HEAD ${run.git}, bundle sha256 ${run.bundleSha256}${WHAT_IF.length ? `, what-if ${WHAT_IF.join(',')}` : ''}; client mode ${CLIENT_MODE}; ${REPS} repetitions`,
  );
  emit({ type: 'run', ...run });
  let overwrites: OverwriteSummary[] = [];
  try {
    for (const setup of MATRIX ? SETUPS : []) {
      log(`setup ${setup}...`);
      await withSetup(bundle, setup, async (ctx) => {
        log(`  workerd pid ${ctx.g.pid} (${ctx.g.direct ? 'direct' : 'via proxy'}), origin ${ctx.g.origin}`);
        await runMatrix(ctx);
        if (BIG && setup === 's3rver') await runBig(ctx, bundle, ctx.config);
        if (CONCURRENT && setup === 's3rver') await runConcurrency(ctx, bundle, ctx.config);
        if (BREAKDOWN && setup === 's3rver') await runBackendBreakdown(ctx);
        if (!ctx.g.direct || rssBytes(ctx.g.pid) === null) throw new Error('the workerd process went away during the run');
      });
    }
    if (BREAKDOWN) {
      log('breakdown...');
      await runBreakdown(bundle);
    }
    if (OVERWRITES) {
      log('overwrites...');
      overwrites = await withSetup(bundle, 'memory', runOverwrites);
    }
  } finally {
    await bundle.dispose();
  }
  const loadEnd = loadAverage();
  const minutes = (Date.now() - started) / 60000;

  const summaries: Summary[] = [];
  for (const setup of SETUPS) {
    for (const size of [...SIZES.map((s) => s.size), BIG_SIZE]) {
      for (const policy of [...[...POLICIES, ...BIG_ONLY].map((p) => p.name), 'direct' as const]) {
        const s = summarize(setup, policy, size);
        if (s) summaries.push(s);
      }
    }
  }
  for (const s of summaries) emit({ type: 'summary', ...s });
  const rs = ratios(summaries.filter((s) => s.size !== BIG_SIZE));
  for (const r of rs) emit({ type: 'ratio', ...r });
  const ts = targets(summaries);
  for (const t of ts) emit({ type: 'target', ...t });
  for (const o of overwrites) emit({ type: 'overwrite', ...o });
  const bad = checks.filter((c) => !c.ok);
  emit({ type: 'end', loadEnd, minutes, checks: checks.length, badChecks: bad.length });

  const out: string[] = [];
  out.push(`Command: \`${run.command}\` (HEAD ${run.git}, bundle sha256 ${run.bundleSha256}${WHAT_IF.length ? `, what-if: ${WHAT_IF.join(', ')}` : ''})`);
  out.push(
    `Machine: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}. Load average at start ${machine.loadStart}, at end ${loadEnd}. ${minutes.toFixed(1)} minutes.`,
  );
  out.push(
    `Client: @aws-sdk/client-s3, one request at a time, expectContinueHeader false, client mode "${CLIENT_MODE}"${CLIENT_MODE === 'unsigned' ? ' (requestChecksumCalculation WHEN_REQUIRED, stream bodies: UNSIGNED-PAYLOAD, no checksum; the gateway still computes MD5 for the ETag)' : ''}. ${REPS} repetitions, interleaved; objects per repetition: ${SIZES.map((s) => `${sizeName(s.size)} x${s.ops}`).join(', ')}. Body CRC32 checked on every GET of the first repetition and of the 1 GiB runs: ${checks.length - bad.length}/${checks.length} correct.`,
  );
  // --no-matrix: no matrix figures, no empty tables.
  if (summaries.length) {
    out.push('');
    out.push(
      'req/op: backend calls the gateway made per S3 request, counted in the worker (ok/1d/2d: healthy, one data-shard backend down, two down; a call to a down backend counts, and fails at once); [http]: HTTP requests the s3rver processes served. catalog calls/op: calls of the gateway Catalog (each a Durable Object round trip) per PUT / healthy GET, counted in the worker, without the upkeep background calls (repair wake-ups when a backend comes back). wr B/B: bytes written to backends per byte stored. cpu: the workerd process (utime+stime) per GB of object. RSS: peak VmRSS of workerd above its value before the batch.',
    );
    for (const setup of SETUPS) {
      out.push('');
      out.push(
        setup === 'memory'
          ? '### (a) memory backends (inside the worker isolate)\n\nRSS above idle includes the shards the memory backends hold. "direct" = the same SDK call into a byte sink / out of a byte source in the same workerd (no S3 work).'
          : `### (b) ${BACKENDS} s3rver processes on loopback\n\n"direct" = the same SDK straight to one s3rver. s3rver cpu: all s3rver processes together, per GB of object.`,
      );
      out.push('');
      out.push(
        table(
          summaries.filter((s) => s.setup === setup),
          setup,
        ),
      );
    }
    out.push('');
    out.push('### Ratios');
    out.push('');
    out.push(ratioTable(rs));
    out.push('');
    out.push('### Targets (issues 5 and 10)');
    out.push('');
    out.push(
      markdownTable(
        ['target', 'figure', 'met'],
        ts.map((t) => [t.target, t.figure, t.met === null ? '-' : t.met ? 'yes' : 'NO']),
        2,
      ),
    );
  }
  if (concurrency.length) {
    out.push('');
    out.push(`### Concurrency (one fresh gateway, ${concurrency[0]!.policy} over the s3rvers, ${sizeName(BURST_BYTES)} objects)`);
    out.push('');
    out.push(
      'n requests at once from one client with n connections; RSS: peak VmRSS of workerd above its value just before the burst (one isolate serves them all).',
    );
    out.push('');
    out.push(
      markdownTable(
        ['n', 'op', 'peak RSS MiB', 'wall s', 'ok', 'SlowDown', 'failed'],
        concurrency.map((c) => [String(c.n), c.op.toUpperCase(), c.rssMiB.toFixed(0), c.wallS.toFixed(1), String(c.ok), String(c.slowDown), String(c.failed)]),
        2,
      ),
    );
  }
  if (breakdown.length) {
    out.push('');
    out.push('### Breakdown per stage (workerd CPU from /proc; a gateway over memory backends unless the stage names s3rver)');
    out.push('');
    out.push(
      markdownTable(
        ['stage', 'what', 'workerd cpu', 'rate'],
        breakdown.map((b) => [b.stage, b.what, `${b.cpu.toFixed(2)} ${b.unit}`, b.rate]),
        2,
      ),
    );
  }
  if (overwrites.length) {
    out.push('');
    out.push(`### Overwrites: unversioned vs versioned bucket (one fresh gateway, ec-4+2 over memory backends)`);
    out.push('');
    out.push(
      `The same key PUT again and again; batches (${OVERWRITE_SIZES.map((s) => `${sizeName(s.size)} x${s.ops}`).join(', ')}) alternate between the buckets, ${REPS} repetitions. Catalog calls per overwrite by method (the upkeep's background calls left out); ratio: versioned / unversioned. 1 KiB is stored inline (in the catalog).`,
    );
    out.push('');
    out.push(overwriteTable(overwrites));
  }
  const text = out.join('\n');
  log('');
  log(text);
  if (bad.length) log(`\nWRONG BYTES: ${JSON.stringify(bad)}`);

  if (WRITE) {
    const root = fileURLToPath(new URL('..', import.meta.url));
    mkdirSync(`${root}/bench/results`, { recursive: true });
    const caption = `${run.command} | ${run.git} | ${machine.cpu}, ${machine.cores} cores, Node ${machine.node} | ${new Date().toISOString().slice(0, 16)}Z`;
    writeFileSync(
      `${root}/bench/results/${LABEL}.svg`,
      svg(
        summaries.filter((s) => s.size !== BIG_SIZE),
        caption,
      ),
    );
    writeFileSync(
      `${root}/bench/results/${LABEL}.json`,
      JSON.stringify(
        { run: { ...run, loadEnd, minutes }, summaries, ratios: rs, targets: ts, breakdown, concurrency, overwrites, checks: { total: checks.length, bad } },
        null,
        1,
      ) + '\n',
    );
    const md = `${root}/BENCHMARKS.md`;
    const doc = readFileSync(md, 'utf8');
    const start = `<!-- ${LABEL}:start -->`,
      end = `<!-- ${LABEL}:end -->`;
    const a = doc.indexOf(start),
      b = doc.indexOf(end);
    if (a < 0 || b < a) {
      // A run kept for its figures only (bench/ranges.ts compares several): no section of its own.
      log(`\nBENCHMARKS.md has no ${start} / ${end} markers: wrote bench/results/${LABEL}.svg and bench/results/${LABEL}.json only`);
    } else {
      writeFileSync(md, `${doc.slice(0, a)}${start}\n${text}\n${doc.slice(b)}`);
      log(`\nwrote BENCHMARKS.md (${LABEL} section), bench/results/${LABEL}.svg, bench/results/${LABEL}.json`);
    }
  }
  if (bad.length) process.exitCode = 1;
  const missed = ts.filter((t) => t.count && t.met === false);
  if (STRICT_COUNTS && missed.length) {
    console.error(`--strict-counts: ${missed.length} request-count target(s) missed:\n${missed.map((t) => `  ${t.target}: ${t.figure}`).join('\n')}`);
    process.exitCode = 1;
  }
}

await main();
