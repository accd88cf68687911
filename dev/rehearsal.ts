/**
 * A rehearsal of a production deployment on this machine (`npm run rehearse`, docs/DEPLOY.md):
 * the production wrangler config (wrangler.production.toml: its bindings, its SHARDGATE_CONFIG)
 * run as a DEPLOYED gateway (no local-development signal, so worker/config/deployment.ts reviews it as
 * Cloudflare would run it), with every S3 backend replaced by a local s3rver process and every
 * R2 binding by a local R2 bucket. The config keeps its shape: same backends, ids, failure
 * domains, policies, credentials and secret names; only each S3 backend's endpoint, bucket and
 * addressing change, and its prices stay those of the provider it stands for. The secrets are
 * given as bindings, as `wrangler secret put` would: the s3rver keys, a fresh random key per
 * encryption key, and a fresh random secret
 * for each client access key (printed, for the clients).
 * An outage can be rehearsed: `control` stops, starts and wipes any s3rver backend (rehearse.ts
 * reads those commands from the terminal), and the cron (collector, scrubber, repair sweeps)
 * runs every `cronSeconds` as Cloudflare would run it. Everything it made on disk (the Worker's
 * state unless a `stateDir` was given, every s3rver's data) is removed by `close`.
 * Known gaps: s3rver is not AWS, B2, Wasabi or GCS (their quirks are not rehearsed); routes,
 * custom domains and the plan's body limit exist only on Cloudflare; R2 bindings are local R2
 * buckets inside the Worker's state and cannot be stopped on their own.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wrangler } from './wrangler.ts';
import { S3rverProcess } from '../test/backends/s3rver-harness.ts';
import { defaultPreset } from '../worker/config/price-list.ts';
import { ROOT } from './paths.ts';
import { startLocalGateway, type LocalGateway } from './local-gateway.ts';
import { snapshotWranglerToml } from './worker-bundle.ts';

export interface Rehearsal {
  gateway: LocalGateway;
  /** Each client access key of the config with the secret this rehearsal gave it. */
  credentials: { accessKeyId: string; secretAccessKey: string }[];
  /**
   * Each encryption key id with the key this rehearsal gave its secret (base64), in the form
   * `shardgate rescue` and `verify` read (SHARDGATE_KEYS): without them a rescue of the
   * rehearsal's backends cannot open a sealed object.
   */
  encryptionKeys: Record<string, string>;
  /** The Worker's source it runs: the config's `main`, or this checkout's when that names no file. */
  entry: string;
  region: string;
  /** The config the Worker runs (the production one with local endpoints). */
  config: Record<string, unknown>;
  /** Each S3 backend of the config with the local s3rver that stands for it. */
  backends: RehearsedBackend[];
  /** Where the Worker's state (catalog, local R2 buckets) is. */
  stateDir: string;
  /** Runs one operator command (CONTROL_HELP): what happened, one line. */
  control(command: string): Promise<string>;
  /** Stops the gateway and every s3rver and removes what they stored. */
  close(): Promise<void>;
}

export interface RehearsedBackend {
  id: string;
  domain: string;
  endpoint: string;
  server: S3rverProcess;
}

export const CONTROL_HELP = [
  'list              the backends: id, failure domain, endpoint, running or stopped',
  "stop ID           stop the backend's server (connections refused: a backend down)",
  'start ID          start it again, with what it held',
  'wipe ID           empty it and start it again (a replaced disk: every shard there is lost)',
].join('\n');

interface RawBackend {
  id: string;
  kind: string;
  endpoint?: string;
  prices?: unknown;
  accessKeyIdSecret?: string;
  secretAccessKeySecret?: string;
  [field: string]: unknown;
}

export interface RehearsalOptions {
  port: number;
  configFile?: string;
  /** The wrangler environment (`[env.NAME]`) to rehearse, as `wrangler deploy --env NAME`. */
  env?: string;
  /** Bindings over the file's, as `wrangler secret put` or `wrangler deploy --var` would add them. */
  bindings?: Record<string, { type: 'plain_text' | 'secret_text'; value: string }>;
  /** Changes the config before it runs (a test adding what an operator might). */
  editConfig?: (config: Record<string, unknown>) => void;
  /** Kept (not removed by close) when given. */
  stateDir?: string;
  /** The cron's period (collector, scrubber, repair sweeps); 0 or absent: no cron. */
  cronSeconds?: number;
  log?: (line: string) => void;
}

export async function startRehearsal(o: RehearsalOptions): Promise<Rehearsal> {
  const configFile = o.configFile ?? join(ROOT, 'wrangler.production.toml');
  const source = wrangler.unstable_readConfig({ config: configFile, env: o.env }).vars.SHARDGATE_CONFIG;
  if (typeof source !== 'string') throw new Error(`${configFile}: no SHARDGATE_CONFIG in [vars]`);
  const config = JSON.parse(source) as { backends: RawBackend[]; credentials?: { accessKeyId: string; secretAccessKeySecret?: string }[]; region?: string };
  o.editConfig?.(config as unknown as Record<string, unknown>);
  const s3 = config.backends.filter((b) => b.kind === 's3');
  // A config kept outside this checkout (an operator's own repository) names a `main` relative to
  // itself that is not there: it is rehearsed with this checkout's Worker.
  const main = snapshotWranglerToml(configFile).entry;
  const entry = existsSync(main) ? main : join(ROOT, 'worker/index.ts');
  if (entry !== main) (o.log ?? console.log)(`rehearsal: ${configFile} names main ${main}, which is not there: running this checkout's Worker (${entry})`);
  const stateDir = o.stateDir ?? mkdtempSync(join(tmpdir(), 'shardgate-rehearsal-'));
  const removeState = () => {
    if (!o.stateDir) rmSync(stateDir, { recursive: true, force: true });
  };
  const servers = s3.map(() => new S3rverProcess());
  const secrets: Record<string, string> = {};
  let gateway: LocalGateway | undefined;
  try {
    await Promise.all(servers.map((s) => s.start()));
    s3.forEach((b, i) => {
      // Same prices as the provider it stands for (the endpoint no longer says which).
      const preset = b.prices === undefined && b.endpoint ? defaultPreset({ kind: 's3', endpoint: b.endpoint }) : null;
      if (preset) b.prices = preset;
      Object.assign(b, { endpoint: servers[i]!.endpoint, bucket: 'b', region: 'us-east-1', pathStyle: true });
      for (const name of [b.accessKeyIdSecret, b.secretAccessKeySecret]) if (name) secrets[name] = 'S3RVER';
    });
    // Each encryption key's secret: a fresh random key, as `openssl rand -base64 32 | wrangler secret put` would.
    const encryptionKeys: Record<string, string> = {};
    for (const k of (config as { encryption?: { keys: { id: string; secret?: string }[] } }).encryption?.keys ?? []) {
      if (k.secret) encryptionKeys[k.id] = secrets[k.secret] = randomBytes(32).toString('base64');
    }
    const credentials = (config.credentials ?? []).flatMap((c) => {
      if (!c.secretAccessKeySecret) return [];
      const secret = randomBytes(24).toString('base64url');
      secrets[c.secretAccessKeySecret] = secret;
      return [{ accessKeyId: c.accessKeyId, secretAccessKey: secret }];
    });
    const bindings = Object.fromEntries([
      ['SHARDGATE_CONFIG', { type: 'plain_text' as const, value: JSON.stringify(config) }],
      ...Object.entries(secrets).map(([name, value]) => [name, { type: 'secret_text' as const, value }]),
      ...Object.entries(o.bindings ?? {}),
    ]);
    gateway = await startLocalGateway({
      port: o.port,
      hosts: ['127.0.0.1'],
      config: configFile,
      entry,
      env: o.env,
      localDevelopment: false,
      bindings,
      cronSeconds: o.cronSeconds ?? 0,
      // The routes name the production host: wrangler dev would rewrite each request's host to
      // it, and a client signs the host it connects to (127.0.0.1 here).
      triggers: [],
      stateDir,
      log: o.log,
    });
    const g = gateway;
    const backends = s3.map((b, i) => ({ id: b.id, domain: String(b.domain ?? ''), endpoint: servers[i]!.endpoint, server: servers[i]! }));
    return {
      gateway: g,
      credentials,
      encryptionKeys,
      entry,
      region: config.region ?? 'us-east-1',
      config: config as unknown as Record<string, unknown>,
      backends,
      stateDir,
      control: (command) => control(backends, command),
      // Every step runs whatever the one before did: a workerd already gone (Ctrl-C reaches the
      // whole process group) must not leave the backends' data and the state behind.
      close: async () => {
        try {
          await g.close();
        } finally {
          await Promise.allSettled(servers.map((s) => s.dispose()));
          removeState();
        }
      },
    };
  } catch (err) {
    try {
      await gateway?.close();
    } finally {
      await Promise.allSettled(servers.map((s) => s.dispose()));
      removeState();
    }
    throw err;
  }
}

/** One operator command on the rehearsal's backends (CONTROL_HELP). */
async function control(backends: RehearsedBackend[], command: string): Promise<string> {
  const [verb = '', id] = command.trim().split(/\s+/);
  if (verb === 'list' || verb === '')
    return backends.map((b) => `${b.id.padEnd(16)} ${b.domain.padEnd(24)} ${b.endpoint}  ${b.server.running ? 'running' : 'STOPPED'}`).join('\n');
  if (!['stop', 'start', 'wipe'].includes(verb)) return `unknown command "${verb}"; commands:\n${CONTROL_HELP}`;
  const b = backends.find((x) => x.id === id);
  if (!b) return `no s3 backend "${id ?? ''}" (have: ${backends.map((x) => x.id).join(', ')})`;
  if (verb === 'stop') {
    await b.server.stop();
    return `${b.id} stopped: ${b.endpoint} refuses connections`;
  }
  if (verb === 'start') {
    if (b.server.running) return `${b.id} is already running`;
    await b.server.start();
    return `${b.id} started again on ${b.endpoint}, with what it held`;
  }
  await b.server.wipe();
  return `${b.id} wiped: started empty on ${b.endpoint} (its shards are lost; repair and the scrubber restore them)`;
}
