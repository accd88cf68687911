/**
 * npm run bench:peer [-- --ceph-dir DIR] [--reps N] [--quick] [--no-big] [--json] [--backends r2,memory,s3rver] [--only shardgate] [--workload NAME] [--block-size BYTES] [--degraded | --tools [--tool-list awscli,rclone] | --memory]
 *
 * shardgate beside a peer on this machine (issue 42): the same workload, the same client, rounds
 * alternating (A B, then B A), and the ratios printed in the same run. The peer is the Ceph RGW
 * (EC 4+2) that shared/peers/ceph/ceph-up.sh starts: its CEPH_DIR (--ceph-dir or CEPH_DIR) gives
 * the endpoint (env), the daemons' pids (pids) and the bench user's keys (users.env, from
 * ceph-users.sh). Without one, shardgate alone is measured.
 *
 * shardgate is `npm start` as a user runs it (a child process: the front, wrangler, the Worker's
 * workerd with the local R2 buckets; --no-watch, no cron, its own state dir). `--backends
 * r2,memory` runs it a second time over six memory backends (shards in the Worker's heap), the
 * same front and gateway: the difference to the first is what the local R2 emulation costs (it
 * does not exist when deployed), and `s3rver` over six s3rver processes (S3 backends, each its
 * own process): its workerd CPU is the gateway's alone (memory backends keep every shard in the
 * Worker's heap, whose copies and GC are workerd's). The RGW's daemons
 * live in a network namespace (NETNS in its env): this script then runs itself again inside it
 * (`ip netns exec`), so the client, shardgate and RGW share one loopback.
 *
 * Server CPU is utime+stime from /proc, summed over the processes of each side around each batch:
 * shardgate's split into the front (node) and workerd (the gateway and, locally, the R2
 * emulation it writes through); RGW's into radosgw, the OSDs and mon+mgr. Client: the AWS SDK v3,
 * UNSIGNED-PAYLOAD with no checksum (bench/lib/client.ts 'unsigned'; RGW 16.2 predates the SDK's
 * default trailers), one connection per client, bodies streamed from one random buffer.
 * --degraded instead: 4 MiB objects read healthy, then with one failure domain away on each side
 * (shardgate over R2: the local bucket of backend local-1 moved aside, a plain file in its place,
 * so its shards fail to read and write, as shared/peers/ceph's degraded script does; RGW: OSD 1
 * stopped and marked down, its replicated metadata pools raised to size 2 first so that RGW keeps
 * them), then both put back; healthy and degraded rounds alternate the sides, and the ratios are
 * degraded over healthy per side.
 * --tools instead: a 1 GiB file uploaded by awscli (`aws s3 cp`) and rclone (`rclone copyto`),
 * each with its default part size and concurrency, to every side and to one plain s3rver process
 * (the baseline: a single Node S3 server writing files, bench/lib/s3rver.ts), sides alternating;
 * MB/s of each upload and each side's ratio to s3rver.
 * --memory instead: 64 concurrent 4 MiB PUTs, then 64 concurrent GETs of them, on each shardgate
 * side, the workerd processes' RSS sampled every 20 ms: the peak above the RSS before the batch.
 * Measures one machine: figures and ratios, not a target.
 */
import { CreateBucketCommand, DeleteObjectCommand, DeleteObjectsCommand, type S3Client } from '@aws-sdk/client-s3';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { get, makeClient, put, type Target } from './lib/client.ts';
import { BenchS3rver, s3rverBackendsConfig, startS3rvers } from './lib/s3rver.ts';
import { memoryBackendsConfig } from '../dev/dev-config.ts';
import { cpuModel, cpuSeconds, descendants, loadAverage, rssBytes } from '../test/support/proc.ts';

const { values } = parseArgs({
  options: {
    'ceph-dir': { type: 'string', default: process.env.CEPH_DIR },
    reps: { type: 'string', default: '3' },
    quick: { type: 'boolean' },
    'no-big': { type: 'boolean' },
    json: { type: 'boolean' },
    only: { type: 'string' },
    backends: { type: 'string', default: 'r2' },
    degraded: { type: 'boolean' },
    tools: { type: 'boolean' },
    memory: { type: 'boolean' },
    'tool-list': { type: 'string', default: 'awscli,rclone' },
    /** Only the workloads whose name starts with this (e.g. "64 MiB"): one row measured again. */
    workload: { type: 'string' },
    /** The 4+2 policy's blockSize on the memory and s3rver sides (bytes; default the policy's 256 KiB). */
    'block-size': { type: 'string' },
  },
});

const KiB = 1024;
const MiB = 1024 * KiB;
const ROOT = new URL('../', import.meta.url).pathname;

/** A batch: `count` objects of `size` bytes, by `clients` clients side by side; PUT then GET. */
interface Workload {
  name: string;
  size: number;
  clients: number;
  count: number;
}

const ALL_WORKLOADS: Workload[] = values.quick
  ? [
      { name: '64 KiB, 1 client', size: 64 * KiB, clients: 1, count: 20 },
      { name: '4 MiB, 1 client', size: 4 * MiB, clients: 1, count: 4 },
    ]
  : [
      { name: '64 KiB, 1 client', size: 64 * KiB, clients: 1, count: 150 },
      { name: '64 KiB, 8 clients', size: 64 * KiB, clients: 8, count: 400 },
      { name: '4 MiB, 1 client', size: 4 * MiB, clients: 1, count: 24 },
      { name: '4 MiB, 8 clients', size: 4 * MiB, clients: 8, count: 64 },
      // The size issue 42 names for the gateway's own write CPU (<= 3 s/GB at 64 MiB 4+2).
      { name: '64 MiB, 1 client', size: 64 * MiB, clients: 1, count: 4 },
      ...(values['no-big'] ? [] : [{ name: '256 MiB, 1 client', size: 256 * MiB, clients: 1, count: 1 }]),
    ];
const WORKLOADS = ALL_WORKLOADS.filter((w) => values.workload === undefined || w.name.startsWith(values.workload));
if (WORKLOADS.length === 0) throw new Error(`no workload named ${values.workload}: ${ALL_WORKLOADS.map((w) => w.name).join('; ')}`);

interface Side {
  /** 'rgw', 'shardgate' (over the local R2 buckets), 'shardgate-memory' or 'shardgate-s3rver'. */
  name: string;
  target: Target;
  /** Process groups whose CPU is this side's: name -> pids (read afresh: workerd may restart). */
  processes(): Map<string, number[]>;
  /** One failure domain taken away (resolves once reads meet it) and put back. */
  down?(): Promise<void>;
  up?(): Promise<void>;
  close(): Promise<void>;
}

// ---- the peer's namespace: run inside it ------------------------------------------------------

const cephDir = values['ceph-dir'];
const cephEnv = cephDir && existsSync(join(cephDir, 'env')) ? envFile(join(cephDir, 'env')) : null;
if (cephDir && !cephEnv) throw new Error(`--ceph-dir ${cephDir}: no env file there (ceph-up.sh writes it)`);
if (cephEnv?.NETNS && !inNamespace(cephEnv.NETNS)) {
  // Again, inside the namespace, with the same arguments; its exit code is ours.
  const r = spawnSync('ip', ['netns', 'exec', cephEnv.NETNS, process.execPath, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

function envFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of readFileSync(path, 'utf8').matchAll(/([A-Z_]+)=(\S*)/g)) out[m[1]!] = m[2]!;
  return out;
}

function inNamespace(name: string): boolean {
  try {
    return statSync(`/run/netns/${name}`).ino === statSync('/proc/self/ns/net').ino;
  } catch {
    return false;
  }
}

// ---- the two sides ----------------------------------------------------------------------------

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

type Backends = 'r2' | 'memory' | 's3rver';
const SIDE_NAMES: Record<Backends, string> = { r2: 'shardgate', memory: 'shardgate-memory', s3rver: 'shardgate-s3rver' };

/** `config` with --block-size on its default policy (npm start's own config, undefined here, keeps its own). */
function withBlockSize(config: string | undefined): string | undefined {
  if (config === undefined || values['block-size'] === undefined) return config;
  const c = JSON.parse(config) as { defaultPolicy: string; policies: Record<string, { blockSize?: number }> };
  c.policies[c.defaultPolicy]!.blockSize = Number(values['block-size']);
  return JSON.stringify(c);
}

async function startShardgate(backends: Backends): Promise<Side> {
  const port = await freePort();
  const state = mkdtempSync(join(tmpdir(), 'shardgate-bench-peer-'));
  const servers = backends === 's3rver' ? await startS3rvers(6) : [];
  const config = withBlockSize(
    backends === 'memory' ? memoryBackendsConfig() : backends === 's3rver' ? s3rverBackendsConfig(servers, memoryBackendsConfig()) : undefined,
  );
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'dev/start.ts'), '--port', String(port), '--persist-to', state, '--cron-seconds', '0', '--no-watch'],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0', ...(config ? { SHARDGATE_CONFIG: config } : {}) },
    },
  );
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const endpoint = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 120_000; ; ) {
    if (child.exitCode !== null) throw new Error(`npm start exited (${child.exitCode}):\n${output}`);
    try {
      if ((await fetch(`${endpoint}/_shardgate/health`)).status < 500) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`npm start did not answer in 120 s:\n${output}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    name: SIDE_NAMES[backends],
    target: { endpoint, credentials: { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' } },
    processes() {
      const all = [{ pid: child.pid!, ppid: 0, comm: 'node' }, ...descendants(child.pid!)];
      return new Map([
        ['front (node)', all.filter((p) => p.comm !== 'workerd').map((p) => p.pid)],
        ['workerd', all.filter((p) => p.comm === 'workerd').map((p) => p.pid)],
        ...(servers.length ? [['s3rver backends (node)', servers.map((s) => s.pid)] as [string, number[]]] : []),
      ]);
    },
    // --degraded takes a local R2 bucket away: the R2 side only.
    ...(backends === 'r2'
      ? {
          async down() {
            const dir = join(state, 'v3', 'r2', 'shardgate-local-1');
            renameSync(dir, `${dir}.down`);
            writeFileSync(dir, 'backend local-1 taken down by bench:peer --degraded\n');
          },
          async up() {
            const dir = join(state, 'v3', 'r2', 'shardgate-local-1');
            rmSync(dir, { force: true });
            renameSync(`${dir}.down`, dir);
          },
        }
      : {}),
    async close() {
      child.kill('SIGINT');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
      rmSync(state, { recursive: true, force: true });
      await Promise.all(servers.map((s) => s.dispose()));
    },
  };
}

function rgwSide(dir: string, env: Record<string, string>): Side {
  const users = join(dir, 'users.env');
  if (!existsSync(users)) throw new Error(`${users} is missing: run ceph-users.sh first`);
  const keys = envFile(users);
  const pids = readFileSync(join(dir, 'pids'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [name, pid] = line.split(' ');
      return { name: name!, pid: Number(pid) };
    });
  const group = (test: (name: string) => boolean) => pids.filter((p) => test(p.name)).map((p) => p.pid);
  const ceph = (...args: string[]) => {
    const r = spawnSync('ceph', ['-c', env.CEPH_CONF!, ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ceph ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  /** Every PG active (degraded allowed), none peering: RGW serves again. */
  const active = async () => {
    for (let i = 0; i < 180; i++) {
      const stat = ceph('pg', 'stat');
      if (/active/.test(stat) && !/peering|unknown|activating|down|incomplete|stale/.test(stat)) return;
      await new Promise((r) => setTimeout(r, 1000));
    }
    throw new Error(`RGW's PGs did not become active: ${ceph('pg', 'stat')}`);
  };
  return {
    name: 'rgw',
    target: { endpoint: env.RGW_ENDPOINT!, credentials: { accessKeyId: keys.BENCH_ACCESS!, secretAccessKey: keys.BENCH_SECRET! } },
    processes: () =>
      new Map([
        ['radosgw', group((n) => n.startsWith('rgw'))],
        ['osds', group((n) => n.startsWith('osd'))],
        ['mon+mgr', group((n) => n.startsWith('mon') || n.startsWith('mgr'))],
      ]),
    async down() {
      // Metadata pools at size 1 would lose a sixth of RGW's metadata with one OSD: size 2 first.
      for (const line of ceph('osd', 'pool', 'ls', 'detail').split('\n')) {
        const m = /^pool \d+ '([^']+)' replicated size (\d+)/.exec(line);
        if (!m || m[2] !== '1') continue;
        ceph('osd', 'pool', 'set', m[1]!, 'size', '2', '--yes-i-really-mean-it');
        ceph('osd', 'pool', 'set', m[1]!, 'min_size', '1');
      }
      await active();
      for (let i = 0; i < 120 && /degraded|recover|backfill|undersized/.test(ceph('pg', 'stat')); i++) await new Promise((r) => setTimeout(r, 1000));
      const osd = pids.find((p) => p.name === 'osd.1')!;
      process.kill(osd.pid, 'SIGTERM');
      for (let i = 0; i < 60; i++) {
        try {
          process.kill(osd.pid, 0);
        } catch {
          break;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
      spawnSync('ceph', ['-c', env.CEPH_CONF!, 'osd', 'down', 'osd.1']);
      await new Promise((r) => setTimeout(r, 3000));
      await active();
    },
    async up() {
      const osd = pids.find((p) => p.name === 'osd.1')!;
      const child = spawn('ceph-osd', ['-c', env.CEPH_CONF!, '-i', '1', '-f'], { detached: true, stdio: 'ignore' });
      child.unref();
      osd.pid = child.pid!;
      const list = readFileSync(join(dir, 'pids'), 'utf8')
        .split('\n')
        .filter((l) => l && !l.startsWith('osd.1 '));
      writeFileSync(join(dir, 'pids'), [...list, `osd.1 ${child.pid} ${child.pid}`, ''].join('\n')); // ceph-down.sh stops it
      for (let i = 0; i < 120 && !/6 up/.test(ceph('osd', 'stat')); i++) await new Promise((r) => setTimeout(r, 1000));
      await active();
    },
    close: async () => {},
  };
}

// ---- one batch --------------------------------------------------------------------------------

/** CPU seconds per process group of a side, now. */
function cpuOf(side: Side): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, pids] of side.processes()) {
    let s = 0;
    for (const pid of pids) {
      try {
        s += cpuSeconds(pid);
      } catch {
        // gone: its CPU is lost to this batch (restarts are rare and printed by npm start)
      }
    }
    out.set(name, s);
  }
  return out;
}

interface Batch {
  side: string;
  workload: string;
  op: 'PUT' | 'GET';
  bytes: number;
  ops: number;
  wallS: number;
  cpu: Map<string, number>;
  latenciesMs: number[];
}

async function batch(side: Side, clients: S3Client[], w: Workload, op: 'PUT' | 'GET', rep: number): Promise<Batch> {
  const latenciesMs: number[] = [];
  let next = 0;
  const before = cpuOf(side);
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (s3) => {
      for (let i = next++; i < w.count; i = next++) {
        const key = `${w.size}/${w.clients}/${rep}/${i}`;
        const t = performance.now();
        if (op === 'PUT') await put(s3, 'peer-bench', key, w.size, i + rep * 7919, 'unsigned');
        else {
          const { bytes } = await get(s3, 'peer-bench', key);
          if (bytes !== w.size) throw new Error(`${side.name} GET ${key}: ${bytes} bytes, ${w.size} expected`);
        }
        latenciesMs.push(performance.now() - t);
      }
    }),
  );
  const wallS = (performance.now() - t0) / 1000;
  const after = cpuOf(side);
  const cpu = new Map([...after].map(([name, s]) => [name, s - (before.get(name) ?? 0)]));
  return { side: side.name, workload: w.name, op, bytes: w.size * w.count, ops: w.count, wallS, cpu, latenciesMs };
}

/** The batch's objects deleted (memory backends hold every shard in the Worker's heap). */
async function removeBatch(s3: S3Client, w: Workload, rep: number): Promise<void> {
  const keys = Array.from({ length: w.count }, (_, i) => ({ Key: `${w.size}/${w.clients}/${rep}/${i}` }));
  for (let i = 0; i < keys.length; i += 1000)
    await s3.send(new DeleteObjectsCommand({ Bucket: 'peer-bench', Delete: { Objects: keys.slice(i, i + 1000), Quiet: true } }));
}

// ---- the run ----------------------------------------------------------------------------------

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const median = (xs: number[]) => pct(xs, 50);
const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const log = (line: string) => (values.json ? console.error(line) : console.log(line));

const sides: Side[] = [];
const started = Date.now();
const loadAtStart = loadAverage();
try {
  if (values.only !== 'rgw') for (const b of values.backends!.split(',')) sides.push(await startShardgate(b === 'memory' || b === 's3rver' ? b : 'r2'));
  if (cephDir && cephEnv && values.only !== 'shardgate') sides.push(rgwSide(cephDir, cephEnv));
  const reps = Number(values.reps);
  const maxClients = Math.max(...WORKLOADS.map((w) => w.clients));
  const clients = new Map(sides.map((s) => [s.name, Array.from({ length: maxClients }, () => makeClient(s.target, 'unsigned', 1))]));
  for (const s of sides) {
    try {
      await clients.get(s.name)![0]!.send(new CreateBucketCommand({ Bucket: 'peer-bench' }));
    } catch (err) {
      if ((err as { name?: string }).name !== 'BucketAlreadyOwnedByYou') throw err;
    }
  }
  log(`bench:peer: ${sides.map((s) => `${s.name} at ${s.target.endpoint}`).join(', ')}; ${reps} rounds, sides alternating`);
  log(`machine: ${cpuModel()}, 2 cores shared, Node ${process.version}; load average at start ${loadAtStart}`);
  const batches: Batch[] = [];
  if (values.degraded)
    await degradedRun(
      sides.filter((s) => s.down),
      clients,
      reps,
    );
  if (values.tools) await toolsRun(sides, reps);
  if (values.memory)
    await memoryRun(
      sides.filter((s) => s.name !== 'rgw'),
      clients,
      reps,
    );
  for (const w of values.degraded || values.tools || values.memory ? [] : WORKLOADS) {
    for (let rep = 0; rep < reps; rep++) {
      const order = sides.map((_, i) => sides[(i + rep) % sides.length]!); // A B C, B C A, ...
      for (const op of ['PUT', 'GET'] as const)
        for (const side of order) {
          const b = await batch(side, clients.get(side.name)!.slice(0, w.clients), w, op, rep);
          if (op === 'GET') await removeBatch(clients.get(side.name)![0]!, w, rep); // outside the measured window
          batches.push(b);
          if (values.json)
            console.log(JSON.stringify({ kind: 'batch', ...b, cpu: Object.fromEntries(b.cpu), latenciesMs: undefined, p50Ms: median(b.latenciesMs) }));
        }
    }
  }
  if (!values.degraded && !values.tools && !values.memory) report(batches);
  for (const list of clients.values()) for (const c of list) c.destroy();
} finally {
  for (const s of sides) await s.close();
}
log(`${((Date.now() - started) / 60_000).toFixed(1)} minutes; load average at end ${loadAverage()}`);

/** 64 concurrent 4 MiB PUTs then GETs per shardgate side: workerd's RSS peak above its RSS before each batch. */
async function memoryRun(on: Side[], clients: Map<string, S3Client[]>, reps: number): Promise<void> {
  const w: Workload = { name: '4 MiB, 64 clients', size: 4 * MiB, clients: 64, count: 64 };
  const rss = (side: Side) => (side.processes().get('workerd') ?? []).reduce((a, pid) => a + (rssBytes(pid) ?? 0), 0);
  log('| side | op | run | RSS before (MiB) | peak above it (MiB) | wall s |');
  log('|---|---|---:|---:|---:|---:|');
  for (let rep = 0; rep < reps; rep++)
    for (const side of on) {
      // 64 connections: one client each (bench/lib/client.ts keeps one socket per client).
      const many = Array.from({ length: w.clients }, () => makeClient(side.target, 'unsigned', 1));
      for (const op of ['PUT', 'GET'] as const) {
        const before = rss(side);
        let peak = before;
        const timer = setInterval(() => (peak = Math.max(peak, rss(side))), 20);
        const b = await batch(side, many, w, op, rep + 100);
        clearInterval(timer);
        peak = Math.max(peak, rss(side));
        log(`| ${side.name} | ${op} | ${rep + 1} | ${(before / MiB).toFixed(0)} | ${((peak - before) / MiB).toFixed(0)} | ${b.wallS.toFixed(1)} |`);
      }
      await removeBatch(clients.get(side.name)![0]!, w, rep + 100);
      for (const c of many) c.destroy();
    }
}

/**
 * 1 GiB uploads by awscli and rclone through each side and to a plain s3rver, alternating; the
 * server CPU of each side around each upload as in `batch`.
 */
async function toolsRun(on: Side[], reps: number): Promise<void> {
  const tools = values['tool-list']!.split(',');
  const size = 1024 * MiB;
  const file = join(mkdtempSync(join(tmpdir(), 'shardgate-peer-tools-')), '1gib.bin');
  const piece = Buffer.alloc(MiB);
  for (let i = 0; i < piece.length; i++) piece[i] = (i * 2654435761) >>> 24;
  writeFileSync(file, Buffer.alloc(0));
  for (let i = 0; i < 1024; i++)
    appendFileSync(
      file,
      piece.map((b) => b ^ i),
    );
  const s3rver = new BenchS3rver();
  await s3rver.start();
  const plain: Side = {
    name: 's3rver',
    target: { endpoint: s3rver.endpoint, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } },
    processes: () => new Map([['s3rver', [s3rver.pid]]]),
    close: () => s3rver.dispose(),
  };
  const all = [...on, plain];
  const upload = (tool: string, side: Side, key: string): number => {
    const { endpoint, credentials } = side.target;
    const bucket = side.name === 's3rver' ? 'b' : 'peer-bench';
    // No AWS_CA_BUNDLE (this machine sets one): rclone refuses any custom bundle on its own transport.
    const { AWS_CA_BUNDLE: _bundle, ...inherited } = process.env;
    const env = {
      ...inherited,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_DEFAULT_REGION: 'us-east-1',
    };
    const args =
      tool === 'awscli'
        ? ['aws', ['--endpoint-url', endpoint, 's3', 'cp', '--only-show-errors', file, `s3://${bucket}/${key}`]]
        : [
            'rclone',
            [
              'copyto',
              file,
              `:s3:${bucket}/${key}`,
              '--s3-provider',
              'Other',
              '--s3-endpoint',
              endpoint,
              '--s3-access-key-id',
              credentials.accessKeyId,
              '--s3-secret-access-key',
              credentials.secretAccessKey,
              '--s3-force-path-style',
              '--s3-no-check-bucket', // s3rver refuses to create its bucket "b" again (a name too short for S3)
            ],
          ];
    const t0 = performance.now();
    const r = spawnSync(args[0] as string, args[1] as string[], { env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${tool} to ${side.name}: exit ${r.status}: ${r.stderr}`);
    return (performance.now() - t0) / 1000;
  };
  const rows: { tool: string; side: string; mbps: number; cpu: number }[] = [];
  try {
    for (const tool of tools)
      for (let rep = 0; rep < reps; rep++)
        for (const side of rep % 2 ? [...all].reverse() : all) {
          const before = cpuOf(side);
          const wallS = upload(tool, side, `tools/${tool}/${rep}`);
          const after = cpuOf(side);
          const cpu = [...after].reduce((a, [name, s]) => a + s - (before.get(name) ?? 0), 0);
          rows.push({ tool, side: side.name, mbps: size / 1e6 / wallS, cpu });
          log(`${tool} -> ${side.name}: ${(size / 1e6 / wallS).toFixed(1)} MB/s, server CPU ${cpu.toFixed(1)} s`);
          // Deleted outside the measured window: the peer's memstore OSDs hold 9 GiB in all, and
          // RGW stops taking writes (it hangs them) once they are full.
          const s3 = makeClient(side.target, 'unsigned', 1);
          await s3.send(new DeleteObjectCommand({ Bucket: side.name === 's3rver' ? 'b' : 'peer-bench', Key: `tools/${tool}/${rep}` }));
          s3.destroy();
        }
  } finally {
    await plain.close();
    rmSync(join(file, '..'), { recursive: true, force: true });
  }
  log('');
  log('| tool | side | MB/s (median of runs) | server CPU-s/GB | MB/s vs s3rver |');
  log('|---|---|---:|---:|---:|');
  for (const tool of tools) {
    const base = median(rows.filter((r) => r.tool === tool && r.side === 's3rver').map((r) => r.mbps));
    for (const side of all) {
      const rs = rows.filter((r) => r.tool === tool && r.side === side.name);
      const mbps = median(rs.map((r) => r.mbps));
      const cpu = median(rs.map((r) => r.cpu)) / (size / 1e9);
      log(`| ${tool} | ${side.name} | ${mbps.toFixed(1)} | ${cpu.toFixed(1)} | ${(mbps / base).toFixed(2)}x |`);
    }
  }
}

/** 4 MiB GETs healthy, then with one failure domain away on each side, then both put back. */
async function degradedRun(on: Side[], clients: Map<string, S3Client[]>, reps: number): Promise<void> {
  const w: Workload = { name: '4 MiB, 1 client', size: 4 * MiB, clients: 1, count: 24 };
  for (const side of on) await batch(side, clients.get(side.name)!.slice(0, 1), w, 'PUT', 0);
  const gets: (Batch & { state: string })[] = [];
  const round = async (state: string) => {
    for (let rep = 0; rep < reps; rep++)
      for (const side of rep % 2 ? [...on].reverse() : on) gets.push({ ...(await batch(side, clients.get(side.name)!.slice(0, 1), w, 'GET', 0)), state });
  };
  await round('healthy');
  for (const side of on) await side.down!();
  try {
    await round('one domain down');
  } finally {
    for (const side of on) await side.up!();
  }
  log('');
  log('| side | state | MB/s (median) | p50 ms | p99 ms | server CPU-s/GB |');
  log('|---|---|---:|---:|---:|---:|');
  const fig = new Map<string, { mbps: number; cpu: number }>();
  for (const side of on)
    for (const state of ['healthy', 'one domain down']) {
      const bs = gets.filter((b) => b.side === side.name && b.state === state);
      const mbps = median(bs.map((b) => b.bytes / 1e6 / b.wallS));
      const cpu = bs.reduce((a, b) => a + sum(b.cpu), 0) / (bs.reduce((a, b) => a + b.bytes, 0) / 1e9);
      fig.set(`${side.name}|${state}`, { mbps, cpu });
      const lat = bs.flatMap((b) => b.latenciesMs);
      log(`| ${side.name} | ${state} | ${mbps.toFixed(1)} | ${pct(lat, 50).toFixed(1)} | ${pct(lat, 99).toFixed(1)} | ${cpu.toFixed(1)} |`);
    }
  log('');
  for (const side of on) {
    const h = fig.get(`${side.name}|healthy`)!;
    const d = fig.get(`${side.name}|one domain down`)!;
    log(`${side.name}: one domain down / healthy: ${(d.mbps / h.mbps).toFixed(2)}x the rate, ${(d.cpu / h.cpu).toFixed(2)}x the CPU per GB`);
  }
}

function report(batches: Batch[]): void {
  const rows: string[] = [];
  const groupNames = (side: string) => [...new Set(batches.filter((b) => b.side === side).flatMap((b) => [...b.cpu.keys()]))];
  rows.push('| workload | op | side | MB/s (median) | ops/s | p50 ms | server CPU-s/GB | CPU by process (s/GB) |');
  rows.push('|---|---|---|---:|---:|---:|---:|---|');
  const figures = new Map<string, { mbps: number; cpuPerGB: number }>();
  for (const w of WORKLOADS)
    for (const op of ['PUT', 'GET'] as const)
      for (const side of sides) {
        const bs = batches.filter((b) => b.workload === w.name && b.op === op && b.side === side.name);
        if (bs.length === 0) continue;
        const mbps = median(bs.map((b) => b.bytes / 1e6 / b.wallS));
        const gb = bs.reduce((a, b) => a + b.bytes, 0) / 1e9;
        const cpuTotal = bs.reduce((a, b) => a + sum(b.cpu), 0);
        const byGroup = groupNames(side.name)
          .map((g) => `${g} ${(bs.reduce((a, b) => a + (b.cpu.get(g) ?? 0), 0) / gb).toFixed(1)}`)
          .join(', ');
        figures.set(`${w.name}|${op}|${side.name}`, { mbps, cpuPerGB: cpuTotal / gb });
        rows.push(
          `| ${w.name} | ${op} | ${side.name} | ${mbps.toFixed(1)} | ${((mbps * 1e6) / w.size).toFixed(0)} | ${median(bs.flatMap((b) => b.latenciesMs)).toFixed(1)} | ${(cpuTotal / gb).toFixed(1)} | ${byGroup} |`,
        );
      }
  log('');
  for (const r of rows) log(r);
  if (sides.length < 2) return;
  log('');
  const base = sides.some((s) => s.name === 'rgw') ? 'rgw' : 'shardgate';
  log(`| workload | op | side | MB/s vs ${base} | CPU per GB vs ${base} |`);
  log('|---|---|---|---:|---:|');
  for (const w of WORKLOADS)
    for (const op of ['PUT', 'GET'] as const)
      for (const side of sides) {
        if (side.name === base) continue;
        const a = figures.get(`${w.name}|${op}|${side.name}`);
        const b = figures.get(`${w.name}|${op}|${base}`);
        if (!a || !b) continue;
        log(`| ${w.name} | ${op} | ${side.name} | ${(a.mbps / b.mbps).toFixed(2)}x | ${(a.cpuPerGB / b.cpuPerGB).toFixed(2)}x |`);
        if (values.json)
          console.log(
            JSON.stringify({ kind: 'ratio', workload: w.name, op, side: side.name, base, throughput: a.mbps / b.mbps, cpuPerGB: a.cpuPerGB / b.cpuPerGB }),
          );
      }
}
