/**
 * Issue 26's proof at full scale, end to end (docs/OPERATING.md "Changing the fleet"): the gateway
 * exactly as `npm start` runs it (dev/start.ts as a child process: workerd, its catalog, repair
 * queue and cron) over s3rver processes, one per backend, each its own failure domain, driven
 * over HTTP by the AWS SDK and the signed admin API. Nothing in process: the gateway is killed
 * with SIGKILL (its whole process group, workerd included) and a backend with SIGKILL.
 *
 * Part 1, the drain (7 backends, 4+2): a bucket of `--objects` objects (8 KiB to 64 MiB, 2% of
 * them multipart) is written; the bill is asked first (admin drain-estimate); a config marking
 * s3rver-3 "retired" is refused at start, naming the count; the gateway restarts with s3rver-3
 * "draining" while clients run about 20 requests a second (GET checked against the MD5 of what was
 * last written, PUT, overwrite, DELETE); it is SIGKILLed twice mid-drain and restarted; a second
 * backend is SIGKILLed for a while. Checked: progress never goes up; reads never fail (outside
 * the seconds the gateway itself was dead); s3rver-3 ends with 0 shard files; every object reads
 * back with its MD5; the retired config then starts; the mover's PUTs are at most 1.05x the shards
 * moved; the estimate is within 10% of what the cost report measured (its `jobs.move` lines, and
 * the DELETEs s3rver-3 received).
 * Part 2, the re-stripe (12 backends): a versioned bucket of `--restripe-objects` objects
 * (multipart and older versions included), 4+2, moved to 8+3 under the same client load: every
 * version reads back byte-identical and, after the grace delay, none of the old shard files is left.
 *
 * The gateway runs with --no-watch: a snapshot of the Worker (dev/worker-bundle.ts), so editing the
 * checkout meanwhile cannot reload it and cut off writes (which would leave reserved files).
 * usage: npm run proof:drain [-- --objects N (10000) --restripe-objects N (1000) --part drain|restripe|both]
 * Prints every figure and ends with the checks, each "ok" or "FAILED"; exit 1 when one failed.
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectVersionsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { AwsClient } from 'aws4fetch';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { disposeServers, killHard, restart, shardKeys, startServers, TEST_ENCRYPTION } from '../test/engine-s3rver/gateway-harness.ts';
import type { S3rverProcess } from '../test/backends/s3rver-harness.ts';
import { prng } from '../test/support/random.ts';
import { ROOT } from '../dev/paths.ts';

const { values } = parseArgs({
  options: { objects: { type: 'string' }, 'restripe-objects': { type: 'string' }, part: { type: 'string' }, port: { type: 'string' } },
});
const OBJECTS = Number(values.objects ?? 10_000);
const RESTRIPE_OBJECTS = Number(values['restripe-objects'] ?? 1000);
const PART = values.part ?? 'both';
const PORT = Number(values.port ?? 18_787);
const KiB = 1024,
  MiB = 1024 * KiB;
const CREDENTIALS = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };
const GRACE_SECONDS = 30;
const CRON_SECONDS = 20;
const DRAINED = 's3rver-3';
const md5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const t0 = Date.now();
const log = (msg: string) => console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(5)} s] ${msg}`);
const checks: { name: string; ok: boolean; detail: string }[] = [];
const check = (name: string, ok: boolean, detail: string) => {
  checks.push({ name, ok, detail });
  log(`${ok ? 'ok    ' : 'FAILED'} ${name}: ${detail}`);
};

// ---- the gateway: `npm start` as a child process, in its own process group ----

type Config = Record<string, unknown>;

function configOf(
  servers: S3rverProcess[],
  o: { states?: Record<string, string>; policies: Record<string, object>; defaultPolicy: string; buckets?: Record<string, string> },
): Config {
  return {
    region: 'us-east-1',
    backends: servers.map((s, i) => ({
      id: `s3rver-${i}`,
      kind: 's3',
      domain: `local/s3rver-${i}`,
      endpoint: s.endpoint,
      bucket: 'b',
      region: 'us-east-1',
      pathStyle: true,
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      timeoutMs: 10_000,
      retries: 1,
      prices: 'aws-s3-standard',
      ...(o.states?.[`s3rver-${i}`] ? { state: o.states[`s3rver-${i}`] } : {}),
    })),
    policies: o.policies,
    defaultPolicy: o.defaultPolicy,
    buckets: o.buckets ?? {},
    credentials: [{ ...CREDENTIALS }],
    garbageGraceSeconds: GRACE_SECONDS,
    encryption: TEST_ENCRYPTION,
    ops: { flushSeconds: 1 },
  };
}

class Gateway {
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  readonly url = `http://127.0.0.1:${PORT}`;
  constructor(
    private readonly stateDir: string,
    private readonly logFile: string,
  ) {}

  /** Starts `npm start` with `config`; resolves once it answers, or with its exit code and output if it exits first. */
  async start(config: Config): Promise<{ ready: true } | { ready: false; code: number | null; output: string }> {
    const out = createWriteStream(this.logFile, { flags: 'a' });
    let output = '';
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(ROOT, 'dev/start.ts'),
        '--no-watch',
        '--persist-to',
        this.stateDir,
        '--port',
        String(PORT),
        '--cron-seconds',
        String(CRON_SECONDS),
      ],
      {
        cwd: ROOT,
        detached: true,
        env: { ...process.env, SHARDGATE_CONFIG: JSON.stringify(config) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    for (const s of [child.stdout!, child.stderr!])
      s.on('data', (d: Buffer) => {
        output += d.toString();
        out.write(d);
      });
    this.child = child;
    this.exited = new Promise((r) =>
      child.on('exit', (code) => {
        out.end();
        r(code);
      }),
    );
    let code: number | null | undefined;
    void this.exited.then((c) => (code = c ?? -1));
    for (const deadline = Date.now() + 180_000; Date.now() < deadline; ) {
      if (code !== undefined) return { ready: false, code, output };
      // The banner comes once every start check passed (dev/start.ts), not when workerd first answers.
      if (output.includes(`shardgate local gateway: ${this.url}`)) return { ready: true };
      await sleep(200);
    }
    throw new Error(`the gateway did not answer within 180 s; its log: ${this.logFile}`);
  }

  /** SIGKILL to the whole group (node, wrangler, workerd): a crash, nothing flushed or closed. */
  async kill(): Promise<void> {
    if (!this.child) return;
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
    await this.exited;
    await this.awaitPortFree();
    this.child = null;
  }

  async stop(): Promise<void> {
    if (!this.child) return;
    try {
      process.kill(-this.child.pid!, 'SIGTERM');
    } catch {
      /* gone */
    }
    const code = await Promise.race([this.exited, sleep(60_000).then(() => 'timeout' as const)]);
    if (code === 'timeout') return this.kill();
    await this.awaitPortFree();
    this.child = null;
  }

  private async awaitPortFree(): Promise<void> {
    for (let i = 0; i < 100; i++) {
      const answered = await fetch(`${this.url}/_shardgate/status`, { signal: AbortSignal.timeout(1000) }).then(
        () => true,
        () => false,
      );
      if (!answered) return;
      await sleep(200);
    }
  }

  s3(): S3Client {
    // The SDK's defaults (3 attempts), as an application would run it.
    return new S3Client({ endpoint: this.url, region: 'us-east-1', forcePathStyle: true, credentials: { ...CREDENTIALS } });
  }

  async admin<T>(path: string): Promise<T> {
    const client = new AwsClient({ ...CREDENTIALS, service: 's3', region: 'us-east-1', retries: 0 });
    const res = await client.fetch(`${this.url}/_shardgate/admin/${path}`, { method: 'POST', signal: AbortSignal.timeout(600_000) });
    const text = await res.text();
    if (!res.ok) throw new Error(`admin ${path}: ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text) as T;
  }
}

// ---- objects: what was written, to check every read against ----

interface Written {
  md5: string;
  size: number;
}

/** Sizes of the bucket: most small, a tail to 64 MiB (part of which multipart); deterministic per index. */
function sizeOf(i: number, rand: () => number): { size: number; multipart: boolean } {
  const logUniform = (lo: number, hi: number) => Math.floor(Math.exp(Math.log(lo) + rand() * (Math.log(hi) - Math.log(lo))));
  if (i % 50 === 7) return { size: logUniform(6 * MiB, 24 * MiB), multipart: true }; // 2%
  const roll = rand();
  if (roll < 0.01) return { size: logUniform(16 * MiB, 64 * MiB), multipart: false };
  if (roll < 0.09) return { size: logUniform(MiB, 16 * MiB), multipart: false };
  return { size: logUniform(8 * KiB, MiB), multipart: false };
}

const PART_BYTES = 5 * MiB;

async function putObject(s3: S3Client, bucket: string, key: string, size: number, multipart: boolean): Promise<Written> {
  const body = randomBytes(size);
  if (!multipart) {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
  } else {
    const up = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    const parts = [];
    for (let n = 1, at = 0; at < size; n++, at += PART_BYTES) {
      const p = await s3.send(
        new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: up.UploadId, PartNumber: n, Body: body.subarray(at, Math.min(size, at + PART_BYTES)) }),
      );
      parts.push({ PartNumber: n, ETag: p.ETag });
    }
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: up.UploadId, MultipartUpload: { Parts: parts } }));
  }
  return { md5: md5(body), size };
}

async function readMd5(s3: S3Client, bucket: string, key: string, versionId?: string): Promise<string> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }));
  const hash = createHash('md5');
  for await (const chunk of got.Body as AsyncIterable<Uint8Array>) hash.update(chunk);
  return hash.digest('hex');
}

async function writeAll(
  s3: S3Client,
  bucket: string,
  count: number,
  seed: number,
  into: Map<string, Written>,
  concurrency = 4,
): Promise<{ bytes: number; seconds: number; multipart: number }> {
  const rand = prng(seed);
  const plan = Array.from({ length: count }, (_, i) => ({ key: `obj-${String(i).padStart(5, '0')}`, ...sizeOf(i, rand) }));
  const started = Date.now();
  let next = 0,
    bytes = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < plan.length) {
        const p = plan[next++]!;
        into.set(p.key, await putObject(s3, bucket, p.key, p.size, p.multipart));
        bytes += p.size;
        if (next % 1000 === 0) log(`  written ${next} of ${count}`);
      }
    }),
  );
  return { bytes, seconds: (Date.now() - started) / 1000, multipart: plan.filter((p) => p.multipart).length };
}

// ---- clients: about 20 requests a second, one operation per key at a time ----

interface Load {
  stop(): Promise<void>;
  stats: { reads: number; writes: number; deletes: number; skipped: number; failedReads: string[]; failedWrites: string[]; downFailures: number };
}

/**
 * GET (60%, checked against the MD5 of what was last written), PUT of a new key (20%), overwrite
 * (10%) and DELETE (10%). Overwrites and deletes hit the keys written during the load, and a churn
 * set of 1% of the old keys: the mover meets overwritten and deleted units without the bucket
 * emptying under it. A failure while `down()` (the gateway killed and not yet back) is counted
 * apart: the gateway was not there to answer.
 */
function startLoad(gateway: Gateway, bucket: string, expected: Map<string, Written>, down: () => boolean, seed: number): Load {
  const rand = prng(seed);
  const s3 = gateway.s3();
  const stats: Load['stats'] = { reads: 0, writes: 0, deletes: 0, skipped: 0, failedReads: [], failedWrites: [], downFailures: 0 };
  const old = [...expected.keys()];
  const churn = old.filter((_, i) => i % 100 === 1);
  const fresh: string[] = [];
  const busy = new Set<string>();
  let inflight = 0,
    n = 0,
    stopped = false;
  const pick = (from: string[]) => from[Math.floor(rand() * from.length)];
  const tick = async () => {
    if (inflight >= 16) return void stats.skipped++;
    const roll = rand();
    const key =
      roll < 0.6
        ? rand() < 0.8
          ? pick(old)
          : (pick(fresh) ?? pick(old))
        : roll < 0.8
          ? `new-${seed}-${n++}`
          : rand() < 0.5
            ? pick(churn)
            : (pick(fresh) ?? pick(churn));
    if (!key || busy.has(key)) return;
    busy.add(key);
    inflight++;
    const wasDown = down();
    try {
      if (roll < 0.6) {
        const want = expected.get(key);
        if (!want) return;
        try {
          const got = await readMd5(s3, bucket, key);
          if (got !== want.md5) stats.failedReads.push(`${key}: MD5 ${got}, expected ${want.md5}`);
          stats.reads++;
        } catch (err) {
          if (wasDown || down()) stats.downFailures++;
          else stats.failedReads.push(`${key}: ${(err as Error).name}: ${(err as Error).message}`);
        }
      } else if (roll < 0.9) {
        try {
          const w = await putObject(s3, bucket, key, Math.floor(Math.exp(Math.log(8 * KiB) + rand() * Math.log(512))), false);
          expected.set(key, w);
          if (key.startsWith('new-')) fresh.push(key);
          stats.writes++;
        } catch (err) {
          // A write that failed may still have committed: the key's content is unknown, so it is not read again.
          expected.delete(key);
          if (wasDown || down()) stats.downFailures++;
          else stats.failedWrites.push(`${key}: ${(err as Error).message}`);
        }
      } else {
        try {
          await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
          expected.delete(key);
          stats.deletes++;
        } catch (err) {
          expected.delete(key);
          if (wasDown || down()) stats.downFailures++;
          else stats.failedWrites.push(`${key}: delete: ${(err as Error).message}`);
        }
      }
    } finally {
      busy.delete(key);
      inflight--;
    }
  };
  const timer = setInterval(() => void tick(), 50);
  return {
    stats,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      while (inflight > 0) await sleep(100);
    },
  };
}

// ---- part 1: the drain ----

interface DrainStatus {
  backends: {
    backend: string;
    left: { shards: number; bytes: number };
    moved: { shards: number; bytes: number };
    bytesPerSecond: number | null;
    secondsRemaining: number | null;
  }[];
}
interface Estimate {
  shards: number;
  bytes: number;
  rebuilt: number;
  noTarget: number;
  complete: boolean;
  total: { gets: number; puts: number; deletes: number; egressBytes: number; cost: number };
}
interface UsageJson {
  getRequests: number;
  putRequests: number;
  deleteRequests: number;
  bytesIn: number;
  bytesOut: number;
}
interface CostJson {
  backends: { id: string; usage: UsageJson }[];
  jobs?: { job: string; usage: UsageJson }[];
}

async function drainPart(work: string): Promise<void> {
  const N = 7;
  const servers = await startServers(N);
  const gateway = new Gateway(join(work, 'drain-state'), join(work, 'drain-gateway.log'));
  const policies = { 'ec-4-2': { k: 4, m: 2 } };
  const config = (state?: string) => configOf(servers, { policies, defaultPolicy: 'ec-4-2', states: state ? { [DRAINED]: state } : {} });
  const BUCKET = 'drain-proof';
  try {
    log(`part 1: ${OBJECTS} objects over ${N} s3rver backends (4+2); gateway log ${join(work, 'drain-gateway.log')}`);
    if (!(await gateway.start(config())).ready) throw new Error('the gateway did not start');
    let s3 = gateway.s3();
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const expected = new Map<string, Written>();
    const w = await writeAll(s3, BUCKET, OBJECTS, 26, expected);
    log(`written: ${OBJECTS} objects (${w.multipart} multipart), ${(w.bytes / MiB).toFixed(0)} MiB in ${w.seconds.toFixed(0)} s`);

    // The bill first, before anything moves.
    const estimate = await gateway.admin<Estimate>(`drain-estimate?backend=${DRAINED}`);
    const filesBefore = (await shardKeys(servers[3]!)).length;
    log(
      `estimate: ${estimate.shards} shards (${estimate.rebuilt} rebuilt, ${estimate.noTarget} without target), ${estimate.bytes} bytes; ${estimate.total.gets} GETs, ${estimate.total.puts} PUTs, ${estimate.total.deletes} DELETEs, ${estimate.total.egressBytes} bytes egress, $${estimate.total.cost.toFixed(4)}; ${DRAINED} holds ${filesBefore} shard files`,
    );
    const costBefore = await gateway.admin<CostJson>('costs');
    await gateway.stop();

    // A config marking it retired is refused at start, naming the count.
    const refused = await gateway.start(config('retired'));
    if (refused.ready) await gateway.stop();
    check(
      'retired refused while shards remain',
      !refused.ready &&
        refused.code === 1 &&
        refused.output.includes(`${DRAINED} is marked "retired"`) &&
        refused.output.includes(`${estimate.shards} shard file(s)`),
      refused.ready ? 'it started' : `exit ${refused.code}: ${refused.output.split('\n').find((l) => l.includes('retired')) ?? refused.output.slice(-300)}`,
    );

    // Draining, under load; killed twice; a second backend killed for a while.
    let down = false;
    const downWindows: number[] = [];
    const startDraining = async () => {
      const t = Date.now();
      if (!(await gateway.start(config('draining'))).ready) throw new Error('the draining gateway did not start');
      return (Date.now() - t) / 1000;
    };
    await startDraining();
    s3 = gateway.s3();
    const load = startLoad(gateway, BUCKET, expected, () => down, 1);
    const drainStarted = Date.now();
    const lefts: number[] = [];
    let startLeft = -1,
      kills = 0,
      backendKilledAt = 0,
      backendBack = false,
      last: DrainStatus['backends'][number] | undefined;
    const KILLED = 5;
    for (;;) {
      await sleep(5000);
      let status: DrainStatus;
      try {
        status = await gateway.admin<DrainStatus>('drain-status');
      } catch {
        continue;
      }
      last = status.backends.find((b) => b.backend === DRAINED);
      if (!last) throw new Error(`drain-status names no ${DRAINED}`);
      const left = last.left.shards;
      lefts.push(left);
      if (startLeft < 0) startLeft = left;
      if (lefts.length % 6 === 1)
        log(
          `  left ${left} shards (${(last.left.bytes / MiB).toFixed(0)} MiB), moved ${last.moved.shards}, ${last.bytesPerSecond === null ? '-' : (last.bytesPerSecond / MiB).toFixed(1)} MiB/s, ~${last.secondsRemaining === null ? '-' : Math.ceil(last.secondsRemaining / 60)} min left; clients ${load.stats.reads} reads, ${load.stats.writes} writes, ${load.stats.deletes} deletes`,
        );
      if (left === 0) break;
      if ((kills === 0 && left <= startLeft * 0.7) || (kills === 1 && left <= startLeft * 0.45)) {
        kills++;
        log(`  SIGKILL the gateway (${kills}) at ${left} left`);
        down = true;
        await gateway.kill();
        const restarted = await startDraining();
        down = false;
        downWindows.push(restarted);
        log(`  restarted in ${restarted.toFixed(1)} s`);
      }
      if (!backendKilledAt && kills === 2 && left <= startLeft * 0.3) {
        log(`  SIGKILL s3rver-${KILLED} at ${left} left`);
        await killHard(servers[KILLED]!);
        backendKilledAt = Date.now();
      }
      if (backendKilledAt && !backendBack && Date.now() - backendKilledAt > 90_000) {
        await restart(servers[KILLED]!);
        backendBack = true;
        log(`  s3rver-${KILLED} back after ${((Date.now() - backendKilledAt) / 1000).toFixed(0)} s`);
      }
      if (Date.now() - drainStarted > 4 * 3600_000) throw new Error('the drain did not end within 4 hours');
    }
    if (backendKilledAt && !backendBack) await restart(servers[KILLED]!);
    const drainSeconds = (Date.now() - drainStarted) / 1000;
    await load.stop();
    const stats = load.stats;
    log(
      `drain done in ${drainSeconds.toFixed(0)} s: moved ${last!.moved.shards} shards, ${last!.moved.bytes} bytes; clients ${stats.reads} reads, ${stats.writes} writes, ${stats.deletes} deletes, ${stats.skipped} ticks skipped (16 in flight), ${stats.downFailures} failed while the gateway was dead`,
    );
    let up = true;
    for (let i = 1; i < lefts.length; i++) if (lefts[i]! > lefts[i - 1]!) up = false;
    check('progress only goes down, to 0', up && lefts.at(-1) === 0, `${lefts.length} samples from ${lefts[0]} to ${lefts.at(-1)}`);
    check('killed twice mid-drain, resumed', kills === 2, `${kills} kills; restarts took ${downWindows.map((s) => `${s.toFixed(1)} s`).join(', ')}`);
    check(
      'a second backend SIGKILLed mid-drain',
      backendKilledAt > 0,
      backendKilledAt ? `s3rver-${KILLED} down ${backendBack ? 'for 90 s' : 'until the drain ended'}` : 'the drain ended first',
    );
    check(
      '0 failed reads during the drain',
      stats.failedReads.length === 0 && stats.reads > 0,
      `${stats.reads} reads, ${stats.failedReads.length} failed${stats.failedReads.length ? `: ${stats.failedReads.slice(0, 5).join('; ')}` : ''}; writes failed (not while dead): ${stats.failedWrites.length}${stats.failedWrites.length ? ` (${stats.failedWrites.slice(0, 3).join('; ')})` : ''}`,
    );

    // The collector deletes the old copies after the grace delay: s3rver-3 ends empty.
    let left: string[] = [];
    for (const deadline = Date.now() + 600_000; Date.now() < deadline; ) {
      left = await shardKeys(servers[3]!);
      if (left.length === 0) break;
      await sleep(10_000);
    }
    check(
      `${DRAINED} holds 0 shard files`,
      left.length === 0,
      `${filesBefore} before, ${left.length} after${left.length ? ` (${left.slice(0, 3).join(', ')})` : ''}`,
    );

    // The bill measured: the cost report's move lines (and the DELETEs s3rver-3 received).
    const costAfter = await gateway.admin<CostJson>('costs');
    const jobOf = (c: CostJson) =>
      c.jobs?.find((j) => j.job === 'move')?.usage ?? { getRequests: 0, putRequests: 0, deleteRequests: 0, bytesIn: 0, bytesOut: 0 };
    const deletesOf = (c: CostJson) => c.backends.find((b) => b.id === DRAINED)!.usage.deleteRequests;
    const moved = jobOf(costAfter),
      before = jobOf(costBefore);
    const measured = {
      gets: moved.getRequests - before.getRequests,
      puts: moved.putRequests - before.putRequests,
      egress: moved.bytesOut - before.bytesOut,
      deletes: deletesOf(costAfter) - deletesOf(costBefore),
    };
    const ratio = (m: number, e: number) => (e === 0 ? (m === 0 ? 1 : Infinity) : m / e);
    log(`cost report (moves): ${measured.gets} GETs, ${measured.puts} PUTs, ${measured.egress} bytes egress; ${DRAINED} received ${measured.deletes} DELETEs`);
    for (const [what, m, e] of [
      ['GETs', measured.gets, estimate.total.gets],
      ['PUTs', measured.puts, estimate.total.puts],
      ['egress bytes', measured.egress, estimate.total.egressBytes],
      ['DELETEs', measured.deletes, estimate.total.deletes],
    ] as const) {
      const r = ratio(m, e);
      check(`estimate within 10%: ${what}`, Math.abs(r - 1) <= 0.1, `estimated ${e}, measured ${m} (${r.toFixed(3)}x)`);
    }
    const shardsMoved = last!.moved.shards;
    check(
      'mover PUTs at most 1.05x the shards moved',
      measured.puts <= shardsMoved * 1.05,
      `${measured.puts} PUTs for ${shardsMoved} shards moved (${(measured.puts / shardsMoved).toFixed(3)}x)`,
    );

    // Every object reads back with its MD5, with s3rver-3 stopped for good.
    await gateway.stop();
    await servers[3]!.stop();
    const retired = await gateway.start(config('retired'));
    check('the retired config starts once 0 shards remain', retired.ready, retired.ready ? 'started' : `exit ${retired.code}: ${retired.output.slice(-300)}`);
    if (!retired.ready) return;
    s3 = gateway.s3();
    const readStarted = Date.now();
    const wrong: string[] = [];
    let next = 0;
    const keys = [...expected.keys()];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < keys.length) {
          const key = keys[next++]!;
          try {
            const got = await readMd5(s3, BUCKET, key);
            if (got !== expected.get(key)!.md5) wrong.push(`${key}: MD5 differs`);
          } catch (err) {
            wrong.push(`${key}: ${(err as Error).message}`);
          }
        }
      }),
    );
    check(
      'every object reads back with its MD5 (retired backend stopped)',
      wrong.length === 0,
      `${keys.length} objects read in ${((Date.now() - readStarted) / 1000).toFixed(0)} s, ${wrong.length} wrong${wrong.length ? `: ${wrong.slice(0, 5).join('; ')}` : ''}`,
    );
    await gateway.stop();
  } finally {
    await gateway.kill();
    await disposeServers(servers);
  }
}

// ---- part 2: the re-stripe ----

interface RestripeStatus {
  buckets: { bucket: string; left: { units: number; bytes: number }; rewritten: { versions: number; bytes: number }; done: boolean }[];
}

async function restripePart(work: string): Promise<void> {
  const N = 12;
  const servers = await startServers(N);
  const gateway = new Gateway(join(work, 'restripe-state'), join(work, 'restripe-gateway.log'));
  const policies = { 'ec-4-2': { k: 4, m: 2 }, 'ec-8-3': { k: 8, m: 3 } };
  const BUCKET = 'restripe-proof';
  const config = (policy: string) => configOf(servers, { policies, defaultPolicy: 'ec-4-2', buckets: { [BUCKET]: policy } });
  try {
    log(`part 2: ${RESTRIPE_OBJECTS} objects over ${N} s3rver backends, 4+2 to 8+3; gateway log ${join(work, 'restripe-gateway.log')}`);
    if (!(await gateway.start(config('ec-4-2'))).ready) throw new Error('the gateway did not start');
    let s3 = gateway.s3();
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await s3.send(new PutBucketVersioningCommand({ Bucket: BUCKET, VersioningConfiguration: { Status: 'Enabled' } }));
    const expected = new Map<string, Written>();
    const w = await writeAll(s3, BUCKET, RESTRIPE_OBJECTS, 2602, expected);
    // Older versions: one key in ten written again.
    const older = new Map<string, Written>();
    const rand = prng(2603);
    for (const key of [...expected.keys()].filter((_, i) => i % 10 === 3)) {
      older.set(key, expected.get(key)!);
      expected.set(key, await putObject(s3, BUCKET, key, Math.floor(Math.exp(Math.log(8 * KiB) + rand() * Math.log(256))), false));
    }
    log(
      `written: ${RESTRIPE_OBJECTS} objects (${w.multipart} multipart), ${older.size} with an older version, ${(w.bytes / MiB).toFixed(0)} MiB in ${w.seconds.toFixed(0)} s`,
    );
    // Every version's MD5 by version id, as written before the re-stripe.
    const versionSums = new Map<string, string>(); // `${key} ${versionId}` -> md5
    for (let keyMarker: string | undefined, vMarker: string | undefined; ; ) {
      const page = await s3.send(new ListObjectVersionsCommand({ Bucket: BUCKET, KeyMarker: keyMarker, VersionIdMarker: vMarker }));
      for (const v of page.Versions ?? []) versionSums.set(`${v.Key} ${v.VersionId}`, v.IsLatest ? expected.get(v.Key!)!.md5 : older.get(v.Key!)!.md5);
      if (!page.IsTruncated) break;
      keyMarker = page.NextKeyMarker;
      vMarker = page.NextVersionIdMarker;
    }
    const oldFiles = new Set<string>();
    for (const [i, s] of servers.entries()) for (const k of await shardKeys(s, BUCKET)) oldFiles.add(`${i} ${k}`);
    await gateway.stop();

    if (!(await gateway.start(config('ec-8-3'))).ready) throw new Error('the gateway did not restart');
    s3 = gateway.s3();
    const live = new Map(expected);
    const load = startLoad(gateway, BUCKET, live, () => false, 2);
    const started = Date.now();
    const lefts: number[] = [];
    for (;;) {
      await sleep(5000);
      const status = await gateway.admin<RestripeStatus>('restripe-status');
      const b = status.buckets.find((x) => x.bucket === BUCKET);
      const left = b?.left.units ?? 0;
      lefts.push(left);
      if (lefts.length % 6 === 1)
        log(
          `  left ${left} units, ${b?.rewritten.versions ?? 0} versions rewritten; clients ${load.stats.reads} reads, ${load.stats.writes} writes, ${load.stats.deletes} deletes`,
        );
      if (!b || b.done) break;
      if (Date.now() - started > 3 * 3600_000) throw new Error('the re-stripe did not end within 3 hours');
    }
    await load.stop();
    const stats = load.stats;
    log(`re-stripe done in ${((Date.now() - started) / 1000).toFixed(0)} s; clients ${stats.reads} reads, ${stats.writes} writes, ${stats.deletes} deletes`);
    let up = true;
    for (let i = 1; i < lefts.length; i++) if (lefts[i]! > lefts[i - 1]!) up = false;
    check('re-stripe progress only goes down, to 0', up, `${lefts.length} samples from ${lefts[0]} to ${lefts.at(-1)}`);
    check(
      '0 failed reads during the re-stripe',
      stats.failedReads.length === 0 && stats.reads > 0,
      `${stats.reads} reads, ${stats.failedReads.length} failed${stats.failedReads.length ? `: ${stats.failedReads.slice(0, 5).join('; ')}` : ''}; ${stats.failedWrites.length} writes failed`,
    );

    // Every version written before reads back byte-identical, by its version id (the load's
    // deletes only add delete markers in a versioned bucket).
    const wrong: string[] = [];
    for (const [kv, sum] of versionSums) {
      const [key, versionId] = kv.split(' ') as [string, string];
      try {
        const got = await readMd5(s3, BUCKET, key, versionId);
        if (got !== sum) wrong.push(`${kv}: MD5 differs`);
      } catch (err) {
        wrong.push(`${kv}: ${(err as Error).message}`);
      }
    }
    check(
      'every version reads back byte-identical',
      wrong.length === 0,
      `${versionSums.size} versions, ${wrong.length} wrong${wrong.length ? `: ${wrong.slice(0, 5).join('; ')}` : ''}`,
    );

    // After the grace delay the collector deletes every old shard file.
    let remaining = -1;
    for (const deadline = Date.now() + 600_000; Date.now() < deadline; ) {
      remaining = 0;
      for (const [i, s] of servers.entries()) for (const k of await shardKeys(s, BUCKET)) if (oldFiles.has(`${i} ${k}`)) remaining++;
      if (remaining === 0) break;
      await sleep(10_000);
    }
    check('old shard files collected after the grace delay', remaining === 0, `${oldFiles.size} old shard files, ${remaining} left`);
    await gateway.stop();
  } finally {
    await gateway.kill();
    await disposeServers(servers);
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'shardgate-drain-proof-'));
  console.log(`drain proof: ${cpus()[0]?.model ?? 'cpu'} x ${cpus().length}, Node ${process.version}; work directory ${work}`);
  try {
    if (PART !== 'restripe') await drainPart(work);
    if (PART !== 'drain') await restripePart(work);
  } finally {
    console.log('\nchecks:');
    for (const c of checks) console.log(`  ${c.ok ? 'ok    ' : 'FAILED'} ${c.name}: ${c.detail}`);
    console.log(`${checks.filter((c) => !c.ok).length} failed of ${checks.length}; ${((Date.now() - t0) / 60_000).toFixed(1)} min`);
    rmSync(join(work, 'drain-state'), { recursive: true, force: true });
    rmSync(join(work, 'restripe-state'), { recursive: true, force: true });
  }
  if (checks.some((c) => !c.ok) || checks.length === 0) process.exitCode = 1;
}

await main();
