/**
 * The files of the `unit` project (one module graph per test worker, shared-graph-files.ts) start
 * no process and build no gateway: a workerd started from a shared graph shares wrangler's module
 * state with every file before it, and one such file answered its first request with a 500 in CI
 * (test/s3/raw-input.test.ts, Node 22, 2026-12-05) that it never gives alone. Checked by the
 * calls that do it, so a listed file that starts calling one fails here, not now and then in CI.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from './worker.ts';
import { SHARED_GRAPH_FILES } from './shared-graph-files.ts';

/** What starts a process or a gateway in this suite's harnesses. */
const STARTS = new RegExp(
  String.raw`\b(startTestWorker|runWorker|startWorker|startDirectWorker|startGateway|startServers|startS3rver|appFor|gatewayFor)\(|node:child` + '_process',
);

it('lists only files that exist, start no process and build no gateway', () => {
  const wrong = SHARED_GRAPH_FILES.flatMap((file) => {
    const path = join(ROOT, file);
    if (!existsSync(path)) return [`${file}: no such file`];
    const hit = STARTS.exec(readFileSync(path, 'utf8'));
    return hit ? [`${file}: ${hit[0]}`] : [];
  });
  expect(wrong).toEqual([]);
});
