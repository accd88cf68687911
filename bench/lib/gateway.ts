/**
 * Starts the gateway for the benchmark: bench/fixtures/worker.ts (the real worker plus a
 * /__bench/ control surface) bundled once into a private temp dir, so files that other people
 * edit during a run cannot reload the Worker under the benchmark, and run in workerd by
 * wrangler's unstable_startWorker (inspector off, no watch): test/support/worker.ts.
 *
 * The wrangler.toml next to the bundle is the project's, minus the repair-queue consumer: a
 * degraded read still queues its repair (the producer stays), but the repair does not run inside
 * the measured window (it would read the whole object again). The benchmark reports that.
 *
 * Requests go straight to the workerd process that runs the worker (found by its listening
 * port), not through wrangler's proxy worker, which is a second workerd copying every byte.
 */
import { request } from 'node:http';
import { join } from 'node:path';
import { descendants, listenerOf } from '../../test/support/proc.ts';
import { bundleWorker, LOCAL_DEV, projectWranglerToml, ROOT, startWorker, type WorkerBundle } from '../../test/support/worker.ts';
import { whatIfPlugin } from './what-if.ts';

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
  /** The DevTools endpoint (test/support/devtools.ts), when started with `inspector`. */
  inspectorUrl?: URL;
  /** POSTs to a /__bench/ path on a connection of its own; the parsed JSON answer. */
  control(path: string): Promise<any>;
  dispose(): Promise<void>;
}

/** The project's wrangler.toml with our bundle as main and no queue consumer. */
function benchToml(): string {
  const toml = projectWranglerToml();
  const out: string[] = [];
  let skipping = false;
  for (const line of toml.split('\n')) {
    if (/^\s*\[/.test(line)) skipping = /^\s*\[\[queues\.consumers\]\]/.test(line) || /^\s*\[triggers\]/.test(line);
    if (!skipping) out.push(line);
  }
  return out.join('\n');
}

export interface Bundle extends WorkerBundle {
  whatIf: string[];
}

/** Bundles bench/fixtures/worker.ts (with any what-if edits) once, for every gateway of a run. */
export async function buildBundle(whatIf: string[] = []): Promise<Bundle> {
  const plugins = whatIf.length ? [whatIfPlugin(whatIf, ROOT)] : [];
  const bundle = await bundleWorker(join(ROOT, 'bench/fixtures/worker.ts'), { plugins, wranglerToml: benchToml(), prefix: 'shardgate-bench-' });
  return { ...bundle, whatIf };
}

/** `inspector`: with the DevTools inspector on (bench/isolate-memory.ts reads the isolate's heap through it). */
export async function startGateway(bundle: Bundle, config: object, o: { inspector?: boolean } = {}): Promise<BenchGateway> {
  const before = new Set(descendants(process.pid).map((p) => p.pid));
  const worker = await startWorker(bundle, {
    bindings: { ...LOCAL_DEV, SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify(config) } },
    persist: true,
    ...(o.inspector ? { inspector: true } : {}),
  });
  try {
    const origin = worker.url.origin;
    await post(`${origin}/__bench/stats`, 'GET');
    const workerd = descendants(process.pid)
      .filter((p) => p.comm === 'workerd' && !before.has(p.pid))
      .map((p) => p.pid);
    // The workerd listening at the Worker's own address runs it; else (wrangler fell back to its
    // proxy's address) the last one started.
    const own = listenerOf(Number(worker.url.port), workerd);
    const pid = own ?? workerd[workerd.length - 1]!;
    return {
      origin,
      pid,
      workerdPids: workerd,
      direct: worker.url.href !== worker.proxyUrl.href && own !== undefined,
      ...(worker.inspectorUrl ? { inspectorUrl: worker.inspectorUrl } : {}),
      async control(path) {
        const { status, text } = await post(origin + path);
        if (status < 200 || status > 299) throw new Error(`${path}: ${status} ${text}`);
        return JSON.parse(text);
      },
      dispose: () => worker.dispose(),
    };
  } catch (err) {
    await worker.dispose().catch(() => {});
    throw err;
  }
}

/**
 * One request on a fresh connection, closed after the answer. workerd closes a keep-alive
 * connection after 5 s idle; a pooled one (global fetch's) reused as it closes failed the bench
 * with "fetch failed ... other side closed" on /__bench/reset after a phase longer than that
 * without control requests. A control request is rare and cheap: no pool, no race.
 */
function post(url: string, method = 'POST'): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent: false, headers: { connection: 'close', 'content-length': '0' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
