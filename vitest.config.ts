/**
 * Two test projects: `node` runs test/**\/*.test.ts in Node (with relaxed SIMD enabled, so every
 * coder kernel is exercised), `workerd` runs test/**\/*.workerd.test.ts inside workerd through
 * @cloudflare/vitest-pool-workers, the runtime the gateway ships on.
 */
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * Node 20 needs a flag for wasm relaxed SIMD; Node 22 has it on by default and refuses the flag
 * ("bad option"), which kills every test worker before it starts and leaves vitest waiting.
 */
const RELAXED_SIMD_FLAGS = Number(process.versions.node.split('.')[0]) < 22 ? ['--experimental-wasm-relaxed-simd'] : [];

/**
 * Poison mode (worker/model/lent-chunks.ts) is on in the tests, in-process (setupFiles) and in
 * the gateways they start (the env var): `SHARDGATE_POISON_BUFFERS=0 npm test` turns it off.
 */
process.env.SHARDGATE_POISON_BUFFERS ??= '1';
const POISON_SETUP = ['test/support/poison-setup.ts'];

export default defineConfig({
  test: {
    projects: [
      {
        // The product's Durable Object classes run in-process in Node tests (the catalog over
        // SQLite in wasm: test/support/local-catalog.ts); this is all they take from the runtime.
        resolve: { alias: { 'cloudflare:workers': fileURLToPath(new URL('./test/support/cloudflare-workers.ts', import.meta.url)) } },
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          // Includes test/engine-s3rver (six s3rver processes killed and restarted, a 1 GiB
          // stream: ~15-30 s on 2 cores); `npm run test:outage` runs just that folder.
          exclude: ['test/**/*.workerd.test.ts', 'node_modules/**'],
          setupFiles: POISON_SETUP,
          execArgv: RELAXED_SIMD_FLAGS,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        plugins: [
          cloudflareTest({
            main: './worker/index.ts',
            wrangler: { configPath: './wrangler.toml' },
            miniflare: {
              compatibilityDate: '2026-04-20',
              compatibilityFlags: ['nodejs_compat', 'enable_request_signal'],
              // As wrangler does: .wasm imports are compiled modules, not Vite's fs-reading shim.
              modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
              r2Buckets: ['TEST_R2'],
            },
          }),
        ],
        test: {
          name: 'workerd',
          include: ['test/**/*.workerd.test.ts'],
          setupFiles: POISON_SETUP,
          globalSetup: ['test/backends/s3rver.global-setup.ts'],
          testTimeout: 120_000,
        },
      },
    ],
  },
});
