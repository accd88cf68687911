// Entry point of the backend layer: re-exports, the plain config types, and createBackend(),
// which turns one config object into a Backend. The zod schema that validates these objects
// lives with the gateway config; the types here are its target shape.
// Secrets: an S3 backend takes its keys either inline or, better, from the Worker env by name
// (accessKeyIdSecret / secretAccessKeySecret), so the config itself can be committed.
// Known gaps: memory backends live per isolate (dev only); faults are a fixed plan from config,
// tests that switch faults at run time build a FaultyBackend themselves.

import { FaultyBackend } from './faulty.ts';
import { MemoryBackend } from './memory.ts';
import { R2Backend } from './r2.ts';
import { S3Backend, type S3BackendOptions } from './s3.ts';
import type { Backend } from './types.ts';

export * from './types.ts';
export { FaultyBackend } from './faulty.ts';
export { MeteredBackend } from './metered.ts';
export { DeadlineBackend } from './deadline.ts';
export { MemoryBackend } from './memory.ts';
export { R2Backend } from './r2.ts';
export { S3Backend } from './s3.ts';

/** Faults to inject from config (local dev: e.g. run with one backend down). */
export interface FaultConfig {
  offline?: boolean;
  /** Fraction of calls, 0..1, that fail with 'Unavailable'. */
  failRate?: number;
  latencyMs?: number;
  seed?: number;
}

interface BackendConfigBase {
  id: string;
  /** Failure-domain label, e.g. "r2/weur", "aws/eu-west-1/acct-a". */
  domain: string;
  faults?: FaultConfig;
}

export interface MemoryBackendConfig extends BackendConfigBase {
  kind: 'memory';
}

export interface R2BackendConfig extends BackendConfigBase {
  kind: 'r2';
  /** Name of the R2 bucket binding in the Worker env (wrangler [[r2_buckets]] binding). */
  binding: string;
}

export interface S3BackendConfig
  extends BackendConfigBase,
    Omit<S3BackendOptions, 'id' | 'domain' | 'accessKeyId' | 'secretAccessKey' | 'sessionToken' | 'fetch'> {
  kind: 's3';
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Env names (Worker secrets) holding the keys, used when the inline value is absent. */
  accessKeyIdSecret?: string;
  secretAccessKeySecret?: string;
}

export type BackendConfig = MemoryBackendConfig | R2BackendConfig | S3BackendConfig;
export type BackendEnv = Record<string, unknown>;

const memoryStores = new Map<string, MemoryBackend>();

/** Builds the Backend a config describes. Throws Error with an actionable message when the env
 *  lacks a binding or secret the config names. */
export function createBackend(config: BackendConfig, env: BackendEnv): Backend {
  const backend = createPlain(config, env);
  const f = config.faults;
  if (!f) return backend;
  const faulty = new FaultyBackend(backend, { seed: f.seed });
  if (f.offline) faulty.goOffline();
  if (f.failRate) faulty.failAtRate(f.failRate);
  if (f.latencyMs) faulty.delayWhen(f.latencyMs);
  return faulty;
}

function createPlain(config: BackendConfig, env: BackendEnv): Backend {
  const { id, domain } = config;
  switch (config.kind) {
    case 'memory': {
      let store = memoryStores.get(id);
      if (!store) memoryStores.set(id, (store = new MemoryBackend({ id, domain })));
      return store;
    }
    case 'r2': {
      const bucket = env[config.binding] as R2Bucket | undefined;
      if (!bucket || typeof bucket.put !== 'function') {
        throw new Error(`backend "${id}": no R2 bucket binding "${config.binding}" in the Worker env; add it under [[r2_buckets]] in wrangler.toml`);
      }
      return new R2Backend({ id, domain, bucket });
    }
    case 's3': {
      const { kind: _kind, faults: _faults, accessKeyIdSecret, secretAccessKeySecret, ...settings } = config;
      const accessKeyId = config.accessKeyId ?? secret(env, id, accessKeyIdSecret, 'accessKeyId');
      const secretAccessKey = config.secretAccessKey ?? secret(env, id, secretAccessKeySecret, 'secretAccessKey');
      return new S3Backend({ ...settings, accessKeyId, secretAccessKey });
    }
    default:
      throw new Error(`backend "${(config as { id?: string }).id}": unknown kind "${(config as { kind?: string }).kind}" (expected r2, s3 or memory)`);
  }
}

function secret(env: BackendEnv, id: string, name: string | undefined, field: string): string {
  const value = name === undefined ? undefined : env[name];
  if (typeof value !== 'string' || value === '') {
    const hint = name === undefined ? `set ${field} or ${field}Secret` : `set the secret with \`wrangler secret put ${name}\``;
    throw new Error(`backend "${id}": no ${field} (${hint})`);
  }
  return value;
}
