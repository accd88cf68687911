/**
 * Starts a test worker in workerd (fixtures/worker.ts with the development pass-through gate, or
 * fixtures/worker-sigv4.ts with the real SigV4 gate) and builds S3 clients against it. One worker
 * per test file: starting workerd is slow.
 * The fixture is bundled once into a private temp dir and run unbundled by wrangler
 * (test/support/worker.ts says why: a rebuild mid-run would restart the worker, losing the
 * MemoryStore). The fixture's own wrangler.toml keeps the project config out.
 */
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, runWorker } from '../support/worker.ts';

export const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };

export interface TestWorker {
  url: URL;
  dispose(): Promise<void>;
}

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Which gate the test worker runs: the development pass-through or the real SigV4 verifier. */
export type Gate = 'pass-through' | 'sigv4' | 'engine' | 'engine-anonymous';

const MiB = 1024 * 1024;

/** The gateway config of the 'engine' worker: 4+2 over six local R2 buckets, 64 KiB blocks so
 *  ordinary test objects span several stripes, the suite's limits. */
export const ENGINE_CONFIG = {
  backends: Array.from({ length: 6 }, (_, i) => ({ id: `r2-${i}`, kind: 'r2', domain: `zone-${i}`, binding: `SHARD_${i}` })),
  policies: { ec: { k: 4, m: 2, blockSize: 65536 } },
  defaultPolicy: 'ec',
  credentials: [CREDENTIALS],
  baseDomains: ['s3.shardgate.test'],
  maxObjectSize: 24 * MiB,
  s3: { maxPartSize: 24 * MiB, maxXmlSize: 1 * MiB, errorDrainBytes: 4 * MiB },
};

export async function startTestWorker(gate: Gate = 'pass-through'): Promise<TestWorker> {
  // The engine needs the project's bindings (R2 buckets, catalog Durable Object, repair queue).
  const engine = gate.startsWith('engine');
  const entry = fixture(engine ? 'worker-engine.ts' : gate === 'sigv4' ? 'worker-sigv4.ts' : 'worker.ts');
  return runWorker(entry, { prefix: 'shardgate-s3-' }, {
    config: engine ? join(ROOT, 'wrangler.toml') : fixture('wrangler.toml'),
    bindings: engine ? { SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify({ ...ENGINE_CONFIG, credentials: [{ ...CREDENTIALS }], allowAnonymous: gate === 'engine-anonymous' }) } } : undefined,
    persist: engine,
  });
}

export function s3Client(url: URL, extra: Partial<S3ClientConfig> = {}): S3Client {
  return new S3Client({
    endpoint: url.origin,
    region: 'us-east-1',
    credentials: CREDENTIALS,
    forcePathStyle: true,
    expectContinueHeader: false,
    maxAttempts: 1,
    ...extra,
  } as S3ClientConfig);
}
