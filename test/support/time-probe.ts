/**
 * Where a test file's time goes, measured from inside its node worker (vitest.config.ts sets
 * SHARDGATE_TEST_TIMES_DIR for every run): processes it starts (workerd, s3rver, the clients) and how
 * long they ran, and timers that fired after waiting 250 ms or more (sleeps, polls, grace
 * periods: time a driven clock would save). Written per file as JSON for the reporter
 * (test/support/time-reporter.ts), which adds vitest's own figures.
 */
import childProcess from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';

const dir = process.env.SHARDGATE_TEST_TIMES_DIR;
interface Probe {
  spawns: number;
  processMs: number;
  timerWaitMs: number;
}
const PROBE = Symbol.for('shardgate.time-probe');
type Patched = typeof globalThis & { [PROBE]?: Probe };

if (dir) {
  const g = globalThis as Patched;
  if (!g[PROBE]) {
    const probe: Probe = (g[PROBE] = { spawns: 0, processMs: 0, timerWaitMs: 0 });
    const spawn = childProcess.spawn;
    childProcess.spawn = function patchedSpawn(this: unknown, ...args: unknown[]) {
      const child = (spawn as (...a: unknown[]) => childProcess.ChildProcess).apply(this, args);
      const started = performance.now();
      probe.spawns++;
      child.once('exit', () => (probe.processMs += performance.now() - started));
      return child;
    } as typeof spawn;
    syncBuiltinESMExports();
    const setTimeoutBefore = globalThis.setTimeout;
    globalThis.setTimeout = function patchedSetTimeout(fn: (...a: unknown[]) => void, ms?: number, ...rest: unknown[]) {
      if (typeof fn !== 'function' || !ms || ms < 250) return setTimeoutBefore(fn, ms, ...rest);
      return setTimeoutBefore(
        (...a: unknown[]) => {
          probe.timerWaitMs += ms;
          fn(...a);
        },
        ms,
        ...rest,
      );
    } as typeof setTimeout;
  }
  let at: Probe;
  beforeAll(() => void (at = { ...g[PROBE]! }));
  afterAll(() => {
    const now = g[PROBE]!;
    const file = expect.getState().testPath ?? 'unknown';
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, `${Buffer.from(file).toString('base64url')}.json`),
      JSON.stringify({
        file,
        spawns: now.spawns - at.spawns,
        processMs: now.processMs - at.processMs,
        timerWaitMs: now.timerWaitMs - at.timerWaitMs,
      }),
    );
  });
}
