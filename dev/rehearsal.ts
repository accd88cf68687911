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
 * Known gaps: s3rver is not AWS, B2, Wasabi or GCS (their quirks are not rehearsed); routes,
 * custom domains and the plan's body limit exist only on Cloudflare.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unstable_readConfig } from 'wrangler';
import { S3rverProcess } from '../test/backends/s3rver-harness.ts';
import { defaultPreset } from '../worker/config/price-list.ts';
import { ROOT, startLocalGateway, type LocalGateway } from './local-gateway.ts';

export interface Rehearsal {
  gateway: LocalGateway;
  /** Each client access key of the config with the secret this rehearsal gave it. */
  credentials: { accessKeyId: string; secretAccessKey: string }[];
  region: string;
  /** The config the Worker runs (the production one with local endpoints). */
  config: Record<string, unknown>;
  close(): Promise<void>;
}

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
  stateDir?: string;
  log?: (line: string) => void;
}

export async function startRehearsal(o: RehearsalOptions): Promise<Rehearsal> {
  const configFile = o.configFile ?? join(ROOT, 'wrangler.production.toml');
  const source = unstable_readConfig({ config: configFile, env: o.env }).vars.SHARDGATE_CONFIG;
  if (typeof source !== 'string') throw new Error(`${configFile}: no SHARDGATE_CONFIG in [vars]`);
  const config = JSON.parse(source) as { backends: RawBackend[]; credentials?: { accessKeyId: string; secretAccessKeySecret?: string }[]; region?: string };
  o.editConfig?.(config as unknown as Record<string, unknown>);
  const s3 = config.backends.filter((b) => b.kind === 's3');
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
    for (const k of (config as { encryption?: { keys: { secret?: string }[] } }).encryption?.keys ?? []) if (k.secret) secrets[k.secret] = randomBytes(32).toString('base64');
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
      port: o.port, hosts: ['127.0.0.1'], config: configFile, env: o.env, localDevelopment: false, bindings, cronSeconds: 0,
      // The routes name the production host: wrangler dev would rewrite each request's host to
      // it, and a client signs the host it connects to (127.0.0.1 here).
      triggers: [],
      stateDir: o.stateDir ?? mkdtempSync(join(tmpdir(), 'shardgate-rehearsal-')), log: o.log,
    });
    const g = gateway;
    return {
      gateway: g, credentials, region: config.region ?? 'us-east-1', config: config as unknown as Record<string, unknown>,
      close: async () => {
        await g.close();
        await Promise.allSettled(servers.map((s) => s.dispose()));
      },
    };
  } catch (err) {
    await gateway?.close();
    await Promise.allSettled(servers.map((s) => s.dispose()));
    throw err;
  }
}
