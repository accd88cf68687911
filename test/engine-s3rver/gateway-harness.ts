/**
 * The whole gateway in workerd (wrangler's unstable_startWorker) over six s3rver processes, one
 * per backend, each its own failure domain: the harness of the engine's process-level tests.
 *
 * The Worker is bundled and started by test/support/worker.ts, next to a snapshot of the
 * project's wrangler.toml (same bindings: Durable Object catalog, repair queue, R2), so another
 * session editing a shared source file or the config mid-run cannot reload it under the test.
 * SHARDGATE_CONFIG is given as a binding, so the snapshot's default config is overridden.
 *
 * Also here: a hard kill (SIGKILL) of one s3rver. Linux only (/proc, test/support/proc.ts).
 */
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import type { Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { s3rverBackend, S3rverProcess } from '../backends/s3rver-harness.ts';
import { descendants } from '../support/proc.ts';
import { LOCAL_DEV, projectWranglerToml, ROOT, runWorker } from '../support/worker.ts';

export const DEV_CREDENTIALS = { accessKeyId: 'shardgate-dev', secretAccessKey: 'shardgate-dev-secret' };

export { TEST_ENCRYPTION } from '../support/dev-encryption.ts';
import { TEST_ENCRYPTION, devShardPrefixes } from '../support/dev-encryption.ts';
import { oneAttemptS3Client } from '../support/s3-connections.ts';
import { devtoolsSession } from '../support/devtools.ts';

export interface GatewayOptions {
  /** Bytes of each shard per stripe; the policy default (256 KiB) when absent. */
  blockSize?: number;
  /** Per-attempt timeout of each backend request. */
  timeoutMs?: number;
  /** Attempts per backend request (1 = no retry). */
  maxAttempts?: number;
  /** Policies (name -> config) and which bucket uses which; default: one 4+2 policy. */
  policies?: Record<string, object>;
  buckets?: Record<string, string>;
  /** false: no key ring (objects stored in the clear). Default: the development key, as `npm start`. */
  encryption?: false;
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
      retries: attempts - 1, // extra attempts after the first
    })),
    policies: o.policies ?? { 'ec-4-2': { k: 4, m: 2, ...(o.blockSize ? { blockSize: o.blockSize } : {}) } },
    defaultPolicy: Object.keys(o.policies ?? { 'ec-4-2': 0 })[0]!,
    buckets: o.buckets ?? {},
    credentials: [{ ...DEV_CREDENTIALS }], // a copy: the SDK client marks the object it is given ($source)
    garbageGraceSeconds: 60,
    ...(o.encryption === false ? {} : { encryption: TEST_ENCRYPTION }),
  };
}

export async function startServers(n: number): Promise<S3rverProcess[]> {
  const servers = Array.from({ length: n }, () => new S3rverProcess());
  await Promise.all(servers.map((s) => s.start()));
  return servers;
}

/**
 * Keys of the shard files of `bucket` (default: every shard) on one server's disk, sorted: under
 * the bucket's name and its shelf under the development key (gatewayConfig's default key).
 */
export async function shardKeys(server: S3rverProcess, bucket?: string): Promise<string[]> {
  const backend = s3rverBackend(server);
  const keys: string[] = [];
  for (const prefix of await devShardPrefixes(bucket)) {
    let cursor: string | undefined;
    do {
      const page = await backend.list(prefix, cursor);
      keys.push(...page.entries.map((e) => e.key));
      cursor = page.cursor;
    } while (cursor);
  }
  return keys.sort();
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

/** Restarts a killed server on its old port, with its old data; resolves once it answers. */
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

export interface StartGatewayOptions {
  inspector?: boolean;
  /** Durable state (catalog, queue, ops record) in this directory, kept on dispose: a gateway
   *  started again on it resumes where the last one stopped (or crashed). */
  stateDir?: string;
  /** Extra esbuild plugins, for an instrumented build while diagnosing (the repo is not touched). */
  esbuildPlugins?: Plugin[];
  /**
   * false: poison mode off (worker/model/lent-chunks.ts), whatever the run asks for. For tests
   * that measure the worker's memory: poison mode copies every chunk it lends, as production never does.
   */
  poison?: false;
  /** The Worker's entry (default worker/index.ts); test/engine/fixtures/worker.ts adds its /__test/ routes. */
  entry?: string;
}

/**
 * Turns off the DevTools Network domain of a gateway started with the inspector. The tests start
 * the inspector only so that wrangler reports the isolate's uncaught errors (uncaught-watch.ts:
 * Runtime events); wrangler's inspector proxy also enables Network, and then every subrequest to a
 * backend is four or five events, each sent to Node over miniflare's loopback and written in full
 * to wrangler's debug log file. Measured on test/engine-s3rver/redundancy.test.ts alone: the test
 * worker's CPU 17.5 s with them, 7.9 s with the domain off (7.2 s without the inspector at all).
 * wrangler still reports uncaught errors with it off (checked with a Worker that throws).
 */
async function quietInspector(inspectorUrl: URL): Promise<void> {
  const session = await devtoolsSession(inspectorUrl);
  try {
    await session.call('Network.disable', {}, 10_000);
  } finally {
    session.close();
  }
}

export async function startGateway(config: object, o: StartGatewayOptions = {}): Promise<Gateway> {
  const worker = await runWorker(
    join(ROOT, o.entry ?? 'worker/index.ts'),
    { plugins: o.esbuildPlugins, wranglerToml: projectWranglerToml(), prefix: 'engine-s3rver-gateway-' },
    {
      bindings: {
        ...LOCAL_DEV,
        SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify(config) },
        ...(o.poison === false ? { SHARDGATE_POISON_BUFFERS: { type: 'plain_text', value: '0' } } : {}),
      },
      persist: true,
      persistDir: o.stateDir,
      inspector: o.inspector,
    },
  );
  if (worker.inspectorUrl)
    await quietInspector(worker.inspectorUrl).catch(async (err: unknown) => {
      await worker.dispose().catch(() => {});
      throw err;
    });
  const url = worker.proxyUrl;
  const directUrl = async () => worker.url;
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
    inspectorUrl: worker.inspectorUrl,
    client: (extra = {}) => oneAttemptS3Client(url.origin, DEV_CREDENTIALS, { expectContinueHeader: false, ...extra }),
    dispose: () => worker.dispose(),
  };
}
