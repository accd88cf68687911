/**
 * Two test projects: `node` runs test/**\/*.test.ts in Node (with relaxed SIMD enabled, so every
 * coder kernel is exercised), `workerd` runs test/**\/*.workerd.test.ts inside workerd through
 * @cloudflare/vitest-pool-workers, the runtime the gateway ships on.
 *
 * Before either, the root's global setup prints which system tools the suite uses are here (and
 * fails the run under SHARDGATE_REQUIRE_ALL_TOOLS=1 when one is not); the tests that need a
 * missing one are skipped, and the run ends with how many and the apt-get line that brings them
 * back (test/support/prerequisites.ts).
 */
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import LongestFirst from './test/support/sequencer.ts';
import { SHARED_GRAPH_FILES } from './test/support/shared-graph-files.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { useWorkerdV8Flags } from './dev/workerd/use-v8-flags.ts';

/**
 * Node 20 needs a flag for wasm relaxed SIMD; Node 22 has it on by default and refuses the flag
 * ("bad option"), which kills every test worker before it starts and leaves vitest waiting.
 * Node 20 also needs one for the global WebSocket (test/support/devtools.ts talks to a gateway's
 * DevTools endpoint with it); Node 22 has it by default. Flags for Node 20's test workers only.
 */
const NODE_20_FLAGS = Number(process.versions.node.split('.')[0]) < 22 ? ['--experimental-wasm-relaxed-simd', '--experimental-websocket'] : [];

/**
 * Poison mode (worker/model/lent-chunks.ts) is on in the tests, in-process (setupFiles) and in
 * the gateways they start (the env var): `SHARDGATE_POISON_BUFFERS=0 npm test` turns it off.
 */
process.env.SHARDGATE_POISON_BUFFERS ??= '1';
const POISON_SETUP = ['test/support/poison-setup.ts'];
/**
 * Every run ends with its time table (test/support/time-reporter.ts, docs/TESTING.md); the node
 * workers measure processes and timers per file into this dir (test/support/time-probe.ts).
 */
process.env.SHARDGATE_TEST_TIMES_DIR ??= mkdtempSync(join(tmpdir(), 'shardgate-test-times-'));
const NODE_SETUP = [...POISON_SETUP, 'test/support/time-probe.ts'];

/**
 * Every workerd of the run (the gateways, test Workers, the `workerd` project's pool) with the
 * V8 flags the local runtime needs on a 2-core machine (dev/workerd/use-v8-flags.ts says why).
 */
useWorkerdV8Flags();

/** Run again over split buckets (the `split` project). */
const SPLIT_SUITES = [
  'test/engine/store.test.ts',
  'test/engine/write-rounds.test.ts',
  'test/upkeep/drain.test.ts',
  'test/upkeep/restripe.test.ts',
  'test/upkeep/rotate-keys.test.ts',
  'test/upkeep/lifecycle-job.test.ts',
  'test/upkeep/lifecycle-transition.test.ts',
  'test/upkeep/transition-proof.test.ts',
  'test/upkeep/repair-sweep.test.ts',
  'test/upkeep/journal-restore.test.ts',
  'test/s3/app.test.ts',
  'test/adopt/backfill.test.ts',
  'test/s3/delete-conditions.test.ts',
  'test/s3/storage-class.test.ts',
  'test/ops/redundancy-status.test.ts',
  'test/ops/unreachable-redundancy.test.ts',
  'test/ops/restripe-status.test.ts',
];

export default defineConfig({
  test: {
    // The root project's: run once, whichever projects run (the projects do not inherit them).
    globalSetup: ['test/support/prerequisites.global-setup.ts', 'test/support/worker-bundle.global-setup.ts', 'test/backends/s3rver-bundle.global-setup.ts'],
    reporters: ['default', './test/support/time-reporter.ts', './test/support/prerequisites-reporter.ts'],
    // Two test files at a time (vitest's default on 2 cores is one): most of a file's time is
    // spent waiting on the workerd and s3rver processes it starts, so the second core is idle
    // otherwise. Measured on the 2-core machine (docs/TESTING.md): 21.5 min one at a time, 11.5
    // min two at a time, the same tests failing and passing. SHARDGATE_TEST_WORKERS overrides.
    maxWorkers: Number(process.env.SHARDGATE_TEST_WORKERS ?? 2),
    // Longest files first, on a fresh clone too (test/support/sequencer.ts).
    sequence: { sequencer: LongestFirst },
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
          // test/prerequisites/fixture is run by test/prerequisites/check.test.ts alone, in a
          // vitest of its own with a PATH of its choosing.
          exclude: [
            'test/**/*.workerd.test.ts',
            'node_modules/**',
            ...(process.env.SHARDGATE_PREREQUISITES_FIXTURE === '1' ? [] : ['test/prerequisites/fixture/**']),
            ...SHARED_GRAPH_FILES,
          ],
          setupFiles: NODE_SETUP,
          execArgv: NODE_20_FLAGS,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The unit files that start no process (test/support/shared-graph-files.ts): one module
        // graph per worker instead of a process per file, about a third of the CPU for them.
        resolve: { alias: { 'cloudflare:workers': fileURLToPath(new URL('./test/support/cloudflare-workers.ts', import.meta.url)) } },
        test: {
          name: 'unit',
          include: [...SHARED_GRAPH_FILES],
          isolate: false,
          setupFiles: NODE_SETUP,
          execArgv: NODE_20_FLAGS,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        // Suites written for one-partition buckets, run again with every bucket split into 8
        // partitions as it is made (test/support/local-catalog.ts SHARDGATE_TEST_SPLIT;
        // docs/PARTITIONS.md), and the partition holding a key split on line at its median after
        // every second write, every third time merged into its lower neighbour instead
        // (SHARDGATE_TEST_SPLIT_EVERY; about 1,300 moves a run): the engine, upkeep and status over a partitioned catalog give the
        // same answers. Not here: tests that read one instance's rows directly or count a
        // bucket's calls or journal instances, and repair backoff (kept per partition: one canary
        // per partition).
        resolve: { alias: { 'cloudflare:workers': fileURLToPath(new URL('./test/support/cloudflare-workers.ts', import.meta.url)) } },
        test: {
          name: 'split',
          include: SPLIT_SUITES,
          env: { SHARDGATE_TEST_SPLIT: '1', SHARDGATE_TEST_SPLIT_EVERY: '2' },
          setupFiles: NODE_SETUP,
          execArgv: NODE_20_FLAGS,
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
          // The size of the workerd scale proof (test/catalog/partitions-scale.workerd.test.ts); 0: skipped.
          provide: { partitionKeys: Number(process.env.SHARDGATE_PARTITION_KEYS ?? 0) },
          testTimeout: 120_000,
        },
      },
    ],
  },
});
