/**
 * The whole gateway in workerd (wrangler's unstable_startWorker) over six s3rver processes, one
 * per backend, each its own failure domain: the harness of the engine's process-level tests.
 *
 * The Worker is bundled once with esbuild into a private temp dir, next to a snapshot of the
 * project's wrangler.toml (same bindings: Durable Object catalog, repair queue, R2), and handed
 * to wrangler unbundled. Wrangler bundles in watch mode and watches its config file: another
 * session editing a shared source file mid-run would otherwise reload the Worker under the test.
 * Unbundled, it still watches the entry's directory (whatever `dev.watch` says), so the
 * persisted state (Durable Object SQLite) lives in a temp dir of its own.
 * SHARDGATE_CONFIG is given as a binding, so the snapshot's default config is overridden.
 *
 * Also here: a hard kill (SIGKILL) of one s3rver, and the workerd processes below this one
 * (/proc), for memory figures. Linux only.
 */
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { build, type Plugin } from 'esbuild';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unstable_startWorker } from 'wrangler';
import { S3rverProcess } from '../backends/s3rver-harness.ts';

export const DEV_CREDENTIALS = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface GatewayOptions {
  /** Bytes of each shard per stripe; the policy default (256 KiB) when absent. */
  blockSize?: number;
  /** Per-attempt timeout of each backend request. */
  timeoutMs?: number;
  /** Attempts per backend request (1 = no retry). */
  maxAttempts?: number;
}

/** SHARDGATE_CONFIG for a 4+2 pool on `servers` (one s3rver per backend, path-style). */
export function gatewayConfig(servers: S3rverProcess[], o: GatewayOptions): object {
  const attempts = o.maxAttempts ?? 1;
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
      timeoutMs: o.timeoutMs ?? 2000,
      maxAttempts: attempts,
      // S3BackendOptions' own name for the retry budget (extra attempts); the schema passes it through.
      retries: attempts - 1,
    })),
    policies: { 'ec-4-2': { k: 4, m: 2, ...(o.blockSize ? { blockSize: o.blockSize } : {}) } },
    defaultPolicy: 'ec-4-2',
    credentials: [DEV_CREDENTIALS],
    garbageGraceSeconds: 60,
  };
}

export async function startServers(n: number): Promise<S3rverProcess[]> {
  const servers = Array.from({ length: n }, () => new S3rverProcess());
  await Promise.all(servers.map((s) => s.start()));
  return servers;
}

export async function disposeServers(servers: S3rverProcess[]): Promise<void> {
  await Promise.allSettled(servers.map((s) => s.dispose()));
}

/** SIGKILL: the process dies at once, its connections are reset mid-transfer. */
export async function killHard(server: S3rverProcess): Promise<void> {
  const pid = s3rverPid(server);
  if (pid === undefined) throw new Error(`no s3rver process for ${server.directory}`);
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 500 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 10));
  if (isAlive(pid)) throw new Error(`s3rver ${pid} survived SIGKILL`);
}

/** Restarts a killed server on its old port, with its old data. */
export async function restart(server: S3rverProcess): Promise<void> {
  await server.stop(); // a no-op once the child has exited; makes sure it has
  await server.start();
}

function s3rverPid(server: S3rverProcess): number | undefined {
  for (const p of descendants(process.pid)) {
    if (p.comm !== 'node' && !p.comm.startsWith('node')) continue;
    try {
      const cmdline = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0');
      if (cmdline.includes(server.directory) && cmdline.some((a) => a.endsWith('s3rver-child.cjs'))) return p.pid;
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

interface ProcInfo {
  pid: number;
  ppid: number;
  comm: string;
}

/** Every live process whose parent chain leads to `root`. */
export function descendants(root: number): ProcInfo[] {
  const all = new Map<number, ProcInfo>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      all.set(Number(name), { pid: Number(name), ppid, comm });
    } catch {
      // exited while we looked
    }
  }
  const below = (p: ProcInfo): boolean => {
    for (let q: ProcInfo | undefined = p, hops = 0; q && hops < 64; q = all.get(q.ppid), hops++) {
      if (q.ppid === root) return true;
    }
    return false;
  };
  return [...all.values()].filter(below);
}

export function workerdPids(): number[] {
  return descendants(process.pid).filter((p) => p.comm === 'workerd').map((p) => p.pid);
}

/** The process below this one that listens on TCP `port` (IPv4 or IPv6), if any. */
export function listenerOf(port: number, pids: number[]): number | undefined {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue; // 0A: LISTEN
      if (parseInt(f[1]!.split(':')[1]!, 16) === port) inodes.add(f[9]!);
    }
  }
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m && inodes.has(m[1]!)) return pid;
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/** VmRSS of `pid` in bytes, or null once it is gone. */
export function rssBytes(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

export interface Gateway {
  /** worker.url: wrangler dev's proxy in front of the Worker, what `wrangler dev` users talk to. */
  url: URL;
  /** The Worker's own socket, past the proxy (for telling the proxy's behaviour from ours). */
  directUrl(): Promise<URL>;
  /** Whether the Worker's socket still answers /_shardgate/status (workerd can die: wrangler
   *  then logs "Received signal #11" in ~/.config/.wrangler/logs and restarts nothing). */
  alive(): Promise<boolean>;
  /** The DevTools protocol endpoint of the gateway's isolate, when started with `inspector`. */
  inspectorUrl?: URL;
  client(extra?: Partial<S3ClientConfig>): S3Client;
  dispose(): Promise<void>;
}

async function directUrlOf(proxyUrl: URL): Promise<URL> {
  // The Worker's socket is seen listening once a first request has gone through the proxy.
  await fetch(new URL('/_shardgate/status', proxyUrl), { signal: AbortSignal.timeout(10_000) }).then((r) => r.arrayBuffer());
  const pids = workerdPids();
  const proxy = listenerOf(Number(proxyUrl.port), pids);
  for (const pid of pids.filter((p) => p !== proxy)) {
    for (const port of listeningPorts(pid)) {
      const url = new URL(`http://127.0.0.1:${port}/`);
      const status = await fetch(new URL('/_shardgate/status', url), { signal: AbortSignal.timeout(5000) }).then((r) => r.status, () => 0);
      if (status === 200) return url;
    }
  }
  throw new Error('no socket of the Worker answers /_shardgate/status');
}

function listeningPorts(pid: number): number[] {
  return [...new Set(readListeners().filter((l) => listenerOf(l, [pid]) === pid))];
}

function readListeners(): number[] {
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length >= 10 && f[3] === '0A') ports.push(parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/** Copies the coder's .wasm imports next to the bundle and leaves them as module imports. */
function wasmModules(outDir: string): Plugin {
  return {
    name: 'wasm-modules',
    setup(b) {
      b.onResolve({ filter: /\.wasm$/ }, async (args) => {
        const source = join(args.resolveDir, args.path);
        await copyFile(source, join(outDir, basename(source)));
        return { path: `./${basename(source)}`, external: true };
      });
    },
  };
}

export interface StartGatewayOptions {
  inspector?: boolean;
  /** Extra esbuild plugins, for an instrumented build while diagnosing (the repo is not touched). */
  esbuildPlugins?: Plugin[];
}

export async function startGateway(config: object, o: StartGatewayOptions = {}): Promise<Gateway> {
  const dir = await mkdtemp(join(tmpdir(), 'engine-s3rver-gateway-'));
  // Not below `dir`: wrangler watches the unbundled entry's directory and reloads the Worker on
  // every change there, and the Durable Object's SQLite files change on every write.
  const persist = await mkdtemp(join(tmpdir(), 'engine-s3rver-state-'));
  let worker: Awaited<ReturnType<typeof unstable_startWorker>> | undefined;
  try {
    await build({
      entryPoints: [join(ROOT, 'worker/index.ts')],
      outfile: join(dir, 'worker.mjs'),
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      target: 'es2022',
      mainFields: ['module', 'main'],
      conditions: ['workerd', 'worker', 'import'],
      external: ['node:*', 'cloudflare:*'],
      plugins: [...(o.esbuildPlugins ?? []), wasmModules(dir)],
      logLevel: 'error',
    });
    const toml = readFileSync(join(ROOT, 'wrangler.toml'), 'utf8').replace(/^main\s*=.*$/m, 'main = "worker.mjs"');
    await writeFile(join(dir, 'wrangler.toml'), toml);
    worker = await unstable_startWorker({
      config: join(dir, 'wrangler.toml'),
      bindings: { SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify(config) } },
      build: { bundle: false }, // wrangler's default rules load the .wasm files as CompiledWasm
      dev: { inspector: o.inspector ? { hostname: '127.0.0.1', port: 0 } : false, server: { hostname: '127.0.0.1', port: 0 }, watch: false, persist, logLevel: 'warn' },
    });
    await worker.ready;
    const url = await worker.url;
    const w = worker;
    const inspectorUrl = o.inspector ? await worker.inspectorUrl : undefined;
    let direct: Promise<URL> | undefined;
    const directUrl = () => (direct ??= directUrlOf(url));
    return {
      url,
      directUrl,
      alive: async () => {
        const status = await fetch(new URL('/_shardgate/status', await directUrl()), { signal: AbortSignal.timeout(10_000) }).then(
          (r) => r.arrayBuffer().then(() => r.status),
          () => 0,
        );
        return status === 200;
      },
      inspectorUrl,
      client: (extra = {}) =>
        new S3Client({
          endpoint: url.origin,
          region: 'us-east-1',
          credentials: DEV_CREDENTIALS,
          forcePathStyle: true,
          expectContinueHeader: false,
          maxAttempts: 1,
          ...extra,
        } as S3ClientConfig),
      dispose: async () => {
        try {
          await w.dispose();
        } finally {
          await rm(dir, { recursive: true, force: true });
          await rm(persist, { recursive: true, force: true });
        }
      },
    };
  } catch (err) {
    await worker?.dispose().catch(() => {});
    await rm(dir, { recursive: true, force: true });
    await rm(persist, { recursive: true, force: true });
    throw err;
  }
}
