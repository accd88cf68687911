/**
 * Starts a test worker in workerd and builds S3 clients against it: fixtures/worker-sigv4.ts (the
 * real gate over EcStore on memory parts, no bindings), or the product itself (worker-engine.ts:
 * the real gateway over six local R2 buckets and the catalog Durable Object). One worker per test
 * file: starting workerd is slow.
 * The fixture is bundled once into a private temp dir and run unbundled by wrangler
 * (test/support/worker.ts says why: a rebuild mid-run would restart the worker, losing the
 * in-memory state). The sigv4 fixture's own wrangler.toml keeps the project config out.
 */
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOCAL_DEV, ROOT, runWorker } from '../support/worker.ts';
import { TEST_ENCRYPTION } from '../support/dev-encryption.ts';
import { oneAttemptS3Client } from '../support/s3-connections.ts';

export const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };

export interface TestWorker {
  url: URL;
  dispose(): Promise<void>;
}

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Which worker: the real gate over memory parts, or the product (anonymous requests allowed or not). */
export type Gate = 'sigv4' | 'engine' | 'engine-anonymous';

const MiB = 1024 * 1024;

/** The gateway config of the 'engine' worker: 4+2 over six local R2 buckets, 64 KiB blocks so
 *  ordinary test objects span several stripes, the suite's limits. */
export const ENGINE_CONFIG = {
  backends: Array.from({ length: 6 }, (_, i) => ({ id: `r2-${i}`, kind: 'r2', domain: `zone-${i}`, binding: `SHARD_${i}` })),
  policies: { ec: { k: 4, m: 2, blockSize: 65536 } },
  defaultPolicy: 'ec',
  credentials: [CREDENTIALS],
  baseDomains: ['s3.shardgate.localhost'],
  maxObjectSize: 24 * MiB,
  s3: { maxPartSize: 24 * MiB, maxXmlSize: 1 * MiB, errorDrainBytes: 4 * MiB },
  encryption: TEST_ENCRYPTION, // sealed, as npm start is
};

export async function startTestWorker(gate: Gate): Promise<TestWorker> {
  // The engine needs the project's bindings (R2 buckets, catalog Durable Object, repair queue).
  const engine = gate.startsWith('engine');
  const entry = fixture(engine ? 'worker-engine.ts' : 'worker-sigv4.ts');
  return runWorker(
    entry,
    { prefix: 'shardgate-s3-' },
    {
      config: engine ? join(ROOT, 'wrangler.toml') : fixture('wrangler.toml'),
      bindings: engine
        ? {
            ...LOCAL_DEV,
            SHARDGATE_CONFIG: {
              type: 'plain_text',
              value: JSON.stringify({ ...ENGINE_CONFIG, credentials: [{ ...CREDENTIALS }], allowAnonymous: gate === 'engine-anonymous' }),
            },
          }
        : undefined,
      persist: engine,
    },
  );
}

export function s3Client(url: URL, extra: Partial<S3ClientConfig> = {}): S3Client {
  return oneAttemptS3Client(url.origin, CREDENTIALS, { expectContinueHeader: false, ...extra });
}
