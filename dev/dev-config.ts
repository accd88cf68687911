/**
 * The gateway config `npm start` runs with: SHARDGATE_CONFIG from wrangler.toml's [vars] (or an
 * override), parsed by the Worker's own schema, for what the banner prints.
 */
import { join } from 'node:path';
import { unstable_readConfig } from 'wrangler';
import { parseConfig, type GatewayConfig } from '../worker/config.ts';
import { ROOT } from './local-gateway.ts';

/** SHARDGATE_CONFIG as wrangler.toml has it (JSON text). */
export function devConfigSource(): string {
  return String(unstable_readConfig({ config: join(ROOT, 'wrangler.toml') }).vars.SHARDGATE_CONFIG ?? '');
}

export function readDevConfig(source = devConfigSource()): GatewayConfig {
  return parseConfig(source);
}

/** The first access key whose secret is in the config itself (not a Worker secret). */
export function inlineCredential(config: GatewayConfig): { accessKeyId: string; secretAccessKey: string } | null {
  const c = config.credentials.find((k) => typeof k.secretAccessKey === 'string');
  return c ? { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey! } : null;
}
