/**
 * Starts the gateway in workerd (wrangler's unstable_startWorker, inspector off) with a given
 * SHARDGATE_CONFIG over the wrangler.toml bindings (six local R2 buckets, the catalog Durable
 * Object, the repair queue), persisting to a temp dir, plus an S3 client pointed at the Worker's
 * own workerd (dev/user-worker.ts: not through wrangler's proxy worker).
 */
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDirectWorker } from '../../dev/user-worker.ts';
import { LOCAL_DEV, poisonBinding } from '../support/worker.ts';
import { oneAttemptS3Client } from '../support/s3-connections.ts';

export const CREDENTIALS = { accessKeyId: 'shardgate-test', secretAccessKey: 'shardgate-test-secret' };

export function r2Config(overrides: Record<string, unknown> = {}) {
  return {
    backends: Array.from({ length: 6 }, (_, i) => ({ id: `r2-${i}`, kind: 'r2', domain: `zone-${i}`, binding: `SHARD_${i}`, faults: {} })),
    policies: { ec: { k: 4, m: 2, blockSize: 65536 } },
    defaultPolicy: 'ec',
    credentials: [CREDENTIALS],
    readHedgeMs: 500,
    garbageGraceSeconds: 3600,
    ...overrides,
  };
}

export interface RunningGateway {
  url: string;
  s3(extra?: Partial<S3ClientConfig>): S3Client;
  control(path: string): Promise<unknown>;
  stop(): Promise<void>;
  persistDir: string;
}

export async function startGateway(
  config: object,
  opts: { entrypoint?: string; persistDir?: string; vars?: Record<string, string>; r2Buckets?: Record<string, string> } = {},
): Promise<RunningGateway> {
  const persistDir = opts.persistDir ?? mkdtempSync(join(tmpdir(), 'shardgate-test-'));
  const { worker, address } = await startDirectWorker(
    {
      config: 'wrangler.toml',
      entrypoint: opts.entrypoint ?? 'test/engine/fixtures/worker.ts',
      bindings: {
        ...LOCAL_DEV,
        ...poisonBinding(),
        SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify(config) },
        ...Object.fromEntries(Object.entries(opts.vars ?? {}).map(([k, value]) => [k, { type: 'plain_text' as const, value }])),
        // R2 buckets beyond wrangler.toml's six (binding -> bucket name): a backend added to the fleet.
        ...Object.fromEntries(Object.entries(opts.r2Buckets ?? {}).map(([k, bucket_name]) => [k, { type: 'r2_bucket' as const, bucket_name }])),
      },
      dev: { inspector: false, server: { hostname: '127.0.0.1', port: 0 }, persist: persistDir, watch: false, logLevel: 'warn' },
    },
    (line) => console.warn(line),
  );
  const url = (await address()).origin;
  return {
    url,
    persistDir,
    s3: (extra = {}) => oneAttemptS3Client(url, CREDENTIALS, { expectContinueHeader: false, ...extra }),
    async control(path: string) {
      const r = await fetch(url + path, { method: 'POST' });
      const text = await r.text();
      if (!r.ok) throw new Error(`${path}: ${r.status} ${text}`);
      return JSON.parse(text);
    },
    async stop() {
      await worker.dispose();
    },
  };
}

export function removeDir(dir: string) {
  rmSync(dir, { recursive: true, force: true });
}
