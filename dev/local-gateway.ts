/**
 * The local gateway as `npm start` runs it: the Worker in workerd (wrangler's DevEnv, as
 * unstable_startWorker runs it, with the project's wrangler.toml, on internal loopback ports), the
 * Node front on the public port (front.ts: answers `Expect: 100-continue`, refuses `/cdn-cgi/`;
 * it talks to the Worker's own workerd, not through wrangler's proxy worker: user-worker.ts), and
 * the cron on a timer (local-cron.ts). Tests start the same thing with their own port, state
 * directory and config.
 * wrangler's DevTools inspector stays off: wrangler dev's CLI attaches an inspector proxy that
 * leaks a socket per DevTools event and wedges after about a minute of heavy traffic.
 */
import { join } from 'node:path';
import type { unstable_startWorker } from 'wrangler';
import { startLocalCron, type LocalCron } from './local-cron.ts';
import { startFront, type RunningFront } from './front.ts';
import { startDirectWorker } from './user-worker.ts';
import { bundleWorker, snapshotWranglerToml, type WorkerBundle } from './worker-bundle.ts';
import { DEFAULT_STATE_DIR, LOOPBACK_HOSTS, ROOT } from './paths.ts';

type StartInput = NonNullable<Parameters<typeof unstable_startWorker>[0]>;

export interface LocalGatewayOptions {
  /** Public port of the front (0: any free port). */
  port: number;
  /** Addresses the front listens on (default: both loopback addresses; ::1 only where it exists). */
  hosts?: string[];
  /** State directory (default: .wrangler/state, as wrangler dev). */
  stateDir?: string;
  /** Period of the local cron in seconds (0: no cron). */
  cronSeconds: number;
  /**
   * Seconds per lifecycle day (worker/gateway.ts lifecycleDayMs; null: a real day). Set, the
   * lifecycle job also runs alone every half of such a day (at least every second), whatever
   * `cronSeconds` says, so that rules act on time in tests (ceph/s3-tests' lc_debug_interval).
   */
  lifecycleDaySeconds?: number | null;
  /**
   * Reload the Worker when a source file changes (npm start: yes). Off (tests, `--no-watch`), the
   * Worker runs from a snapshot bundle (worker-bundle.ts), which edits cannot reach: wrangler's own
   * bundler rebuilds on an edit whatever its `watch` says.
   */
  watch?: boolean;
  /** Bindings over wrangler.toml's (tests: their own SHARDGATE_CONFIG). */
  bindings?: StartInput['bindings'];
  /** The wrangler config file (default wrangler.toml; the rehearsal: wrangler.production.toml). */
  config?: string;
  /** The Worker's source, over the config's `main` (the rehearsal of a config kept elsewhere). */
  entry?: string;
  /** The wrangler environment (`[env.NAME]`) to run, as `wrangler deploy --env NAME` would deploy it. */
  env?: string;
  /**
   * Set the local-development signal (default true). False runs the Worker as deployed
   * (worker/config/deployment.ts): `npm run rehearse` checks a production config that way.
   */
  localDevelopment?: boolean;
  /**
   * Routes and crons over the config's (the rehearsal: none, since wrangler dev rewrites the
   * request's host to a route's, and a client signs the host it connects to).
   */
  triggers?: StartInput['triggers'];
  log?: (line: string) => void;
  /**
   * Asked once the gateway answers on its front (`url`), before the cron's first run: a throw
   * refuses the start (everything is closed and startLocalGateway rethrows it). npm start checks
   * the config's retired backends against the catalog here, so that a refused config never runs
   * an upkeep pass (which would claim the mover's chains: dev/start.ts).
   */
  admit?: (url: URL) => Promise<void>;
  /** wrangler's log level: 'log' shows the Worker's console and every request, 'warn' only problems. */
  logLevel?: 'warn' | 'info' | 'log';
}

export interface LocalGateway {
  /** The public endpoint: http://127.0.0.1:<port> (an IP: SDKs then address buckets path-style). */
  url: URL;
  port: number;
  /** wrangler's dev server (its proxy worker, in front of the Worker's workerd). */
  workerUrl: URL;
  /** Where the front sends requests: the Worker's own workerd (user-worker.ts). */
  upstream(): Promise<URL>;
  cron: LocalCron | null;
  front: RunningFront;
  close(): Promise<void>;
}

export async function startLocalGateway(o: LocalGatewayOptions): Promise<LocalGateway> {
  const log = o.log ?? ((line: string) => console.log(line));
  // Miniflare otherwise fetches a sample `request.cf` from the internet at every start (3 s and a
  // warning where there is none); its built-in placeholder serves a local gateway as well.
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= 'false';
  const config = o.config ?? join(ROOT, 'wrangler.toml');
  const snapshot = o.watch ? null : snapshotWranglerToml(config);
  const bundle: WorkerBundle | null = snapshot
    ? await bundleWorker(o.entry ?? snapshot.entry, { wranglerToml: snapshot.snapshot, alongside: snapshot.alongside, prefix: 'shardgate-gateway-' })
    : null;
  const started = await startDirectWorker(
    {
      config: bundle ? join(bundle.dir, 'wrangler.toml') : config,
      ...(bundle ? { entrypoint: bundle.entry } : o.entry ? { entrypoint: o.entry } : {}),
      ...(o.env ? { env: o.env } : {}),
      // The local-development signal (worker/config/deployment.ts): the development key and the all-local
      // pool work only with it. Only local tooling sets it; wrangler.toml never does.
      bindings: {
        ...(o.localDevelopment === false ? {} : { SHARDGATE_LOCAL_DEV: { type: 'plain_text', value: '1' } }),
        ...(o.lifecycleDaySeconds ? { SHARDGATE_LIFECYCLE_DAY_SECONDS: { type: 'plain_text', value: String(o.lifecycleDaySeconds) } } : {}),
        // Poison mode (worker/model/lent-chunks.ts) when asked for: the tests do; SHARDGATE_POISON_BUFFERS=1 npm start too.
        ...(process.env.SHARDGATE_POISON_BUFFERS === '1' ? { SHARDGATE_POISON_BUFFERS: { type: 'plain_text', value: '1' } } : {}),
        ...o.bindings,
      },
      ...(o.triggers ? { triggers: o.triggers } : {}),
      // Unbundled from the snapshot; else wrangler's bundler (nodejsCompatMode quiets it about node:crypto).
      build: bundle ? { bundle: false, moduleRoot: bundle.dir } : { nodejsCompatMode: 'v2' },
      dev: {
        inspector: false,
        server: { hostname: '127.0.0.1', port: 0 },
        watch: o.watch ?? false,
        persist: o.stateDir ?? DEFAULT_STATE_DIR,
        logLevel: o.logLevel ?? 'warn',
      },
    },
    log,
  ).catch(async (err) => {
    await bundle?.dispose();
    throw err;
  });
  const { proxyUrl: workerUrl, address } = started;
  const worker = {
    dispose: async () => {
      try {
        await started.worker.dispose();
      } finally {
        await bundle?.dispose();
      }
    },
  };
  let front: RunningFront | undefined;
  let cron: LocalCron | null = null;
  let lifecycle: LocalCron | null = null;
  try {
    front = await startFront(o.port, await usableHosts(o.hosts ?? LOOPBACK_HOSTS), { upstream: address, log });
    if (o.admit) await o.admit(new URL(`http://127.0.0.1:${front.port}`));
    if (o.cronSeconds > 0) {
      // Both triggers of wrangler.toml each period: the journal's, then the upkeep's.
      cron = startLocalCron(
        async (signal) => {
          const journal = await runScheduled(workerUrl, '* * * * *', signal);
          const upkeep = await runScheduled(workerUrl, undefined, signal);
          return journal.outcome === 'ok' ? upkeep : journal;
        },
        o.cronSeconds * 1000,
        log,
      );
    }
    if (o.lifecycleDaySeconds) {
      lifecycle = startLocalCron((signal) => runScheduled(workerUrl, 'lifecycle', signal), Math.max(1000, (o.lifecycleDaySeconds * 1000) / 2), log);
    }
    const f = front;
    const c = cron;
    const l = lifecycle;
    return {
      url: new URL(`http://127.0.0.1:${f.port}`),
      port: f.port,
      workerUrl,
      upstream: address,
      cron,
      front: f,
      close: async () => {
        await l?.stop();
        await c?.stop();
        await f.close();
        await worker.dispose();
      },
    };
  } catch (err) {
    await lifecycle?.stop();
    await cron?.stop();
    await front?.close();
    await worker.dispose();
    throw err;
  }
}

/**
 * Runs the Worker's scheduled handler once, through the route wrangler's dev server keeps for it
 * on the internal port (the front refuses it on the public one). wrangler 4.86's
 * `worker.scheduled()` cannot be used: it looks the Worker up in the proxy's Miniflare, which
 * does not hold it ("worker not found"). The answer comes once the handler and its waitUntil
 * work have finished: 200 when they succeeded.
 */
async function runScheduled(workerUrl: URL, cron = '*/5 * * * *', signal?: AbortSignal): Promise<{ outcome: string }> {
  const url = new URL(`/cdn-cgi/handler/scheduled?cron=${encodeURIComponent(cron)}`, workerUrl);
  const res = await fetch(url, { signal });
  const text = await res.text();
  return { outcome: res.ok ? 'ok' : `HTTP ${res.status}: ${text.slice(0, 200)}` };
}

/** `hosts` minus ::1 on a machine without IPv6 loopback. */
async function usableHosts(hosts: string[]): Promise<string[]> {
  const { createServer } = await import('node:net');
  const out: string[] = [];
  for (const host of hosts) {
    if (host !== '::1') {
      out.push(host);
      continue;
    }
    const ok = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(0, host, () => s.close(() => resolve(true)));
    });
    if (ok) out.push(host);
  }
  return out;
}
