/**
 * Starts a test worker in workerd (fixtures/worker.ts with the development pass-through gate, or
 * fixtures/worker-sigv4.ts with the real SigV4 gate) and builds S3 clients against it. One worker
 * per test file: starting workerd is slow.
 * The fixture is bundled once with esbuild into a private temp dir and handed to wrangler's
 * unstable_startWorker unbundled: wrangler always bundles in watch mode, and a rebuild (another
 * session editing a shared source file mid-run) restarts the worker, losing the MemoryStore and
 * answering 503 meanwhile. The fixture's own wrangler.toml keeps the project config out.
 */
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { build } from 'esbuild';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unstable_startWorker } from 'wrangler';

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
  const dir = await mkdtemp(join(tmpdir(), 'shardgate-s3-'));
  const entrypoint = join(dir, 'worker.mjs');
  await build({
    entryPoints: [fixture(gate.startsWith('engine') ? 'worker-engine.ts' : gate === 'sigv4' ? 'worker-sigv4.ts' : 'worker.ts')],
    outfile: entrypoint,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'import'],
    external: ['node:*', 'cloudflare:*'],
    logLevel: 'error',
    plugins: [
      {
        // .wasm imports stay modules (wrangler loads them as CompiledWasm): copy them alongside.
        name: 'wasm-alongside',
        setup(b) {
          b.onResolve({ filter: /\.wasm$/ }, async (args) => {
            const source = resolve(args.resolveDir, args.path);
            await copyFile(source, join(dir, basename(source)));
            return { path: `./${basename(source)}`, external: true };
          });
        },
      },
    ],
  });
  // The engine needs the project's bindings (R2 buckets, catalog Durable Object, repair queue).
  const engine = gate.startsWith('engine');
  const worker = await unstable_startWorker({
    config: engine ? fileURLToPath(new URL('../../wrangler.toml', import.meta.url)) : fixture('wrangler.toml'),
    entrypoint,
    bindings: engine ? { SHARDGATE_CONFIG: { type: 'plain_text', value: JSON.stringify({ ...ENGINE_CONFIG, credentials: [{ ...CREDENTIALS }], allowAnonymous: gate === 'engine-anonymous' }) } } : undefined,
    build: { bundle: false, moduleRoot: dirname(entrypoint) },
    dev: { inspector: false, server: { hostname: '127.0.0.1', port: 0 }, watch: false, persist: engine ? join(dir, 'state') : false, logLevel: 'warn' },
  });
  await worker.ready;
  const url = await worker.url;
  return {
    url,
    dispose: async () => {
      await worker.dispose();
      await rm(dir, { recursive: true, force: true });
    },
  };
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
