/**
 * The console's tests' gateway: the product (test/s3/fixtures/worker-engine.ts: the real gate, the
 * erasure-coded store over six local R2 buckets, the catalog Durable Object) with two keys, one
 * without a scope (every bucket, the admin API) and one scoped to the prefix `team-a/` of the
 * bucket `shared`.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CREDENTIALS, ENGINE_CONFIG } from '../s3/harness.ts';
import { LOCAL_DEV, ROOT, runWorker, type RunningWorker } from '../support/worker.ts';

export const ROOT_KEY = { ...CREDENTIALS };
export const SCOPED_KEY = {
  accessKeyId: 'AKIDTEAMA',
  secretAccessKey: 'team-a-secret-key-0123456789abcdefghij',
  scope: [{ buckets: ['shared'], prefixes: ['team-a/'], actions: ['read', 'list', 'write', 'delete'] }],
};

export function consoleConfig(extra: object = {}): object {
  return { ...ENGINE_CONFIG, credentials: [ROOT_KEY, SCOPED_KEY], ...extra };
}

/** `extra`: config keys that replace the suite's (a larger maxObjectSize for the full-size proof). */
export async function startConsoleGateway(extra: object = {}): Promise<RunningWorker> {
  return runWorker(
    fileURLToPath(new URL('../s3/fixtures/worker-engine.ts', import.meta.url)),
    { prefix: 'shardgate-console-' },
    {
      config: join(ROOT, 'wrangler.toml'),
      bindings: { ...LOCAL_DEV, SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify(consoleConfig(extra)) } },
      persist: true,
    },
  );
}
