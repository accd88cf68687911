/**
 * A Worker in workerd for the tests and the benchmark, the way every harness here runs one:
 * bundled once into a private temp dir (dev/worker-bundle.ts: a snapshot, so another session
 * editing a shared file mid-run cannot reload the Worker under the test), then handed to
 * wrangler's unstable_startWorker unbundled, inspector off, no watch, on a random loopback port.
 * Clients talk to the Worker's own workerd, past wrangler's proxy worker (startWorker says why).
 * Persisted state (Durable Object SQLite, R2) goes to a temp dir of its own: written below the
 * bundle, which wrangler watches, it would reload the Worker on every write.
 *
 * Callers keep their own config: which entry, which wrangler.toml (a snapshot written into the
 * bundle's dir, or a file elsewhere), which bindings, extra esbuild plugins.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { unstable_startWorker } from 'wrangler';
import { startDirectWorker, type DirectWorker } from '../../dev/user-worker.ts';
import { bundleWorker, snapshotWranglerToml, type BundleOptions, type WorkerBundle } from '../../dev/worker-bundle.ts';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export { bundleWorker, type BundleOptions, type WorkerBundle } from '../../dev/worker-bundle.ts';

/** The project's wrangler.toml (bindings: R2 buckets, catalog Durable Object, repair queue) with
 *  `main` pointing at a bundle next to it: a snapshot, so edits to the file do not reach a run. */
export function projectWranglerToml(): string {
  return snapshotWranglerToml(join(ROOT, 'wrangler.toml')).snapshot;
}

type StartInput = NonNullable<Parameters<typeof unstable_startWorker>[0]>;

/**
 * Poison mode for the Worker (worker/model/lent-chunks.ts) as the test run asks for it
 * (vitest.config.ts sets SHARDGATE_POISON_BUFFERS=1); a caller's own binding wins (memory tests
 * turn it off: poison mode copies every chunk it lends).
 */
export function poisonBinding(): Record<string, { type: 'plain_text'; value: string }> {
  const v = process.env.SHARDGATE_POISON_BUFFERS;
  return v === '1' || v === '0' ? { SHARDGATE_POISON_BUFFERS: { type: 'plain_text', value: v } } : {};
}

/**
 * The local-development signal of worker/config/deployment.ts as a binding: without it the gateway
 * behaves as deployed and refuses inline secrets, the development key and local pools.
 */
export const LOCAL_DEV = { SHARDGATE_LOCAL_DEV: { type: 'plain_text', value: '1' } } as const;

export interface StartOptions {
  /** The wrangler.toml to run with; by default the one written next to the bundle. */
  config?: string;
  bindings?: StartInput['bindings'];
  /** Keep state (R2, Durable Objects) in a fresh temp dir of its own; false: in memory only. */
  persist?: boolean;
  /** Keep state in this directory instead, and leave it there on dispose (a restart resumes it). */
  persistDir?: string;
  /** Open the DevTools inspector on a random loopback port (off by default). */
  inspector?: boolean;
}

export interface RunningWorker {
  /** The Worker's own workerd (dev/user-worker.ts), where clients go. */
  url: URL;
  /** worker.url: wrangler dev's proxy in front of the Worker (what `wrangler dev` users reach). */
  proxyUrl: URL;
  /** The DevTools protocol endpoint, when started with `inspector`. */
  inspectorUrl?: URL;
  /** The last lines workerd and wrangler logged (warnings and errors), oldest first: for the message of a failure. */
  recentLogs(): string[];
  dispose(): Promise<void>;
}

/** How many log lines `recentLogs` keeps. */
const RECENT_LOG_LINES = 40;

/** Starts `bundle` in workerd; resolves once wrangler reports it ready. */
export async function startWorker(bundle: WorkerBundle, o: StartOptions = {}): Promise<RunningWorker> {
  const persist = o.persistDir ?? (o.persist ? await mkdtemp(join(tmpdir(), 'shardgate-worker-state-')) : undefined);
  const removeState = async () => {
    if (persist && !o.persistDir) await rm(persist, { recursive: true, force: true });
  };
  let started: DirectWorker | undefined;
  const recent: string[] = [];
  try {
    // Clients talk to the Worker's own workerd: wrangler's proxy worker pools its connection to
    // it, that pool races workerd's 5 s idle close (a plain-text 500), and test clients do not
    // retry (dev/user-worker.ts).
    started = await startDirectWorker(
      {
        config: o.config ?? join(bundle.dir, 'wrangler.toml'),
        entrypoint: bundle.entry,
        bindings: { ...poisonBinding(), ...o.bindings },
        build: { bundle: false, moduleRoot: bundle.dir },
        dev: {
          inspector: o.inspector ? { hostname: '127.0.0.1', port: 0 } : false,
          server: { hostname: '127.0.0.1', port: 0 },
          watch: false,
          persist: persist ?? false,
          logLevel: 'warn',
        },
      },
      (line) => {
        recent.push(line);
        if (recent.length > RECENT_LOG_LINES) recent.shift();
        console.warn(line);
      },
    );
    const { worker, proxyUrl } = started;
    const url = await started.address();
    const inspectorUrl = o.inspector ? await worker.inspectorUrl : undefined;
    return {
      url,
      proxyUrl,
      inspectorUrl,
      recentLogs: () => [...recent],
      dispose: async () => {
        try {
          await worker.dispose();
        } finally {
          await removeState();
        }
      },
    };
  } catch (err) {
    await started?.worker.dispose().catch(() => {});
    await removeState();
    throw err;
  }
}

/** bundleWorker, then startWorker, for a Worker of its own: dispose() removes the bundle too. */
export async function runWorker(entry: string, b: BundleOptions = {}, o: StartOptions = {}): Promise<RunningWorker> {
  const bundle = await bundleWorker(entry, b);
  try {
    const worker = await startWorker(bundle, o);
    return {
      ...worker,
      dispose: async () => {
        try {
          await worker.dispose();
        } finally {
          await bundle.dispose();
        }
      },
    };
  } catch (err) {
    await bundle.dispose();
    throw err;
  }
}
