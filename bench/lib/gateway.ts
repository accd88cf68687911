/**
 * Starts the gateway for the benchmark: bench/fixtures/worker.ts (the real worker plus a
 * /__bench/ control surface) bundled once with esbuild into a private temp dir, so files that
 * other people edit during a run cannot reload the Worker under the benchmark, and run in
 * workerd by wrangler's unstable_startWorker (inspector off, no watch).
 *
 * The wrangler.toml next to the bundle is the project's, minus the repair-queue consumer: a
 * degraded read still queues its repair (the producer stays), but the repair does not run inside
 * the measured window (it would read the whole object again). The benchmark reports that.
 *
 * Requests go straight to the workerd process that runs the worker (found by its listening
 * port), not through wrangler's proxy worker, which is a second workerd copying every byte.
 */
import { build, type Plugin } from 'esbuild';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unstable_startWorker } from 'wrangler';
import { descendants, listenersOf } from './proc.ts';
import { whatIfPlugin } from './what-if.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// No Request.cf download (miniflare tries workers.cloudflare.com on every start): a placeholder does.
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false';
export const CREDENTIALS = { accessKeyId: 'shardgate-bench', secretAccessKey: 'shardgate-bench-secret' };

export interface BenchGateway {
  /** Origin that reaches the user worker directly (or via the proxy when it cannot be found). */
  origin: string;
  /** The workerd process that runs the worker: CPU and memory are read from it. */
  pid: number;
  /** Every workerd below us (the proxy's too), for the record. */
  workerdPids: number[];
  direct: boolean;
  control(path: string, init?: RequestInit): Promise<any>;
  dispose(): Promise<void>;
}

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

/** The project's wrangler.toml with our bundle as main and no queue consumer. */
function benchToml(): string {
  const toml = readFileSync(join(ROOT, 'wrangler.toml'), 'utf8').replace(/^main\s*=.*$/m, 'main = "worker.mjs"');
  const out: string[] = [];
  let skipping = false;
  for (const line of toml.split('\n')) {
    if (/^\s*\[/.test(line)) skipping = /^\s*\[\[queues\.consumers\]\]/.test(line) || /^\s*\[triggers\]/.test(line);
    if (!skipping) out.push(line);
  }
  return out.join('\n');
}

export interface Bundle {
  dir: string;
  /** sha256 of the bundled worker: exactly which code was measured. */
  sha256: string;
  whatIf: string[];
  dispose(): Promise<void>;
}

/** Bundles bench/fixtures/worker.ts (with any what-if edits) once, for every gateway of a run. */
export async function buildBundle(whatIf: string[] = []): Promise<Bundle> {
  const dir = await mkdtemp(join(tmpdir(), 'shardgate-bench-'));
  await build({
    entryPoints: [join(ROOT, 'bench/fixtures/worker.ts')],
    outfile: join(dir, 'worker.mjs'),
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'import'],
    external: ['node:*', 'cloudflare:*'],
    plugins: [wasmModules(dir), ...(whatIf.length ? [whatIfPlugin(whatIf, ROOT)] : [])],
    logLevel: 'error',
  });
  await writeFile(join(dir, 'wrangler.toml'), benchToml());
  const sha256 = createHash('sha256').update(await readFile(join(dir, 'worker.mjs'))).digest('hex');
  return { dir, sha256, whatIf, dispose: () => rm(dir, { recursive: true, force: true }) };
}

export async function startGateway(bundle: Bundle, config: object): Promise<BenchGateway> {
  // Outside the bundle's directory: wrangler watches that one even with watch off, and state
  // written there would reload the worker again and again (a new workerd every ~0.5 s).
  const state = await mkdtemp(join(tmpdir(), 'shardgate-bench-state-'));
  const before = new Set(descendants(process.pid).map((p) => p.pid));
  let worker: Awaited<ReturnType<typeof unstable_startWorker>> | undefined;
  try {
    worker = await unstable_startWorker({
      config: join(bundle.dir, 'wrangler.toml'),
      bindings: { SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify(config) } },
      build: { bundle: false },
      dev: { inspector: false, server: { hostname: '127.0.0.1', port: 0 }, watch: false, persist: state, logLevel: 'warn' },
    });
    await worker.ready;
    const proxyUrl = (await worker.url).origin;
    await (await fetch(`${proxyUrl}/__bench/stats`)).arrayBuffer(); // the user worker is up once this answers
    const workerd = descendants(process.pid).filter((p) => p.comm === 'workerd' && !before.has(p.pid)).map((p) => p.pid);
    // Find the workerd that answers our control endpoint directly: try each of its listeners.
    let origin = proxyUrl, pid = workerd[workerd.length - 1]!, direct = false;
    const proxyPort = Number(new URL(proxyUrl).port);
    for (const p of workerd) {
      for (const port of listenersOf(p)) {
        if (port === proxyPort) continue;
        try {
          const r = await fetch(`http://127.0.0.1:${port}/__bench/stats`, { signal: AbortSignal.timeout(2000) });
          const json = (r.headers.get('content-type') ?? '').includes('json');
          await r.arrayBuffer();
          if (r.ok && json) {
            origin = `http://127.0.0.1:${port}`;
            pid = p;
            direct = true;
            break;
          }
        } catch {
          // not this one
        }
      }
      if (direct) break;
    }
    const w = worker;
    return {
      origin,
      pid,
      workerdPids: workerd,
      direct,
      async control(path, init) {
        const r = await fetch(origin + path, { method: 'POST', ...init });
        const text = await r.text();
        if (!r.ok) throw new Error(`${path}: ${r.status} ${text}`);
        return JSON.parse(text);
      },
      async dispose() {
        await w.dispose();
        await rm(state, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await worker?.dispose().catch(() => {});
    await rm(state, { recursive: true, force: true });
    throw err;
  }
}
