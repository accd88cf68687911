// `npm run test:times`: the whole suite (or the paths given) with the time table of
// test/support/time-reporter.ts printed at the end and written to .vitest-times.json.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'shardgate-test-times-'));
const vitest = join('node_modules', '.bin', 'vitest');
const run = spawnSync(vitest, ['run', '--reporter=default', '--reporter=./test/support/time-reporter.ts', ...process.argv.slice(2)], {
  stdio: 'inherit', env: { ...process.env, SHARDGATE_TEST_TIMES_DIR: dir },
});
rmSync(dir, { recursive: true, force: true });
process.exit(run.status ?? 1);
