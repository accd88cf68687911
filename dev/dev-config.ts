/**
 * The gateway config `npm start` runs with: SHARDGATE_CONFIG from the environment when set (your
 * own config, locally), else wrangler.toml's [vars]; parsed by the Worker's own schema before
 * workerd starts, so a mistake stops `npm start` with the message naming the field instead of
 * surfacing on the first request. R2 backends must name a binding wrangler.toml declares.
 */
import { join } from 'node:path';
import { wrangler } from './wrangler.ts';
import { ConfigError, parseConfig, type GatewayConfig } from '../worker/config/config.ts';
import { ROOT } from './paths.ts';

function wranglerConfig() {
  return wrangler.unstable_readConfig({ config: join(ROOT, 'wrangler.toml') });
}

/** SHARDGATE_CONFIG as `npm start` uses it (JSON text): the environment's, else wrangler.toml's. */
export function devConfigSource(env: Record<string, string | undefined> = {}): string {
  return env.SHARDGATE_CONFIG ?? String(wranglerConfig().vars.SHARDGATE_CONFIG ?? '');
}

/**
 * npm start's config with its backends swapped for memory ones (same ids and domains, shards in
 * the Worker's heap): the gateway's own cost without the local R2 emulation (bench:peer, bench:profile).
 */
export function memoryBackendsConfig(source = devConfigSource()): string {
  const config = JSON.parse(source) as { backends: { id: string; domain: string }[] };
  config.backends = config.backends.map((b) => ({ id: b.id, kind: 'memory', domain: b.domain }));
  return JSON.stringify(config);
}

export function readDevConfig(source = devConfigSource()): GatewayConfig {
  return parseConfig(source);
}

/** Parses the config and checks its R2 bindings against wrangler.toml; throws ConfigError saying what is wrong. */
export function checkDevConfig(source: string): GatewayConfig {
  const config = parseConfig(source);
  const bindings = new Set<string>(wranglerConfig().r2_buckets.map((b: { binding: string }) => b.binding));
  for (const b of config.backends) {
    if (b.kind === 'r2' && !bindings.has(b.binding)) {
      throw new ConfigError(
        `SHARDGATE_CONFIG: backend "${b.id}" names R2 binding "${b.binding}", which wrangler.toml does not declare (have: ${[...bindings].join(', ')}); add it under [[r2_buckets]]`,
      );
    }
  }
  return config;
}

/** The first access key whose secret is in the config itself (not a Worker secret). */
export function inlineCredential(config: GatewayConfig): { accessKeyId: string; secretAccessKey: string } | null {
  const c = config.credentials.find((k) => typeof k.secretAccessKey === 'string');
  return c ? { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey! } : null;
}
