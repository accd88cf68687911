/**
 * Where a test file's time goes, measured from inside its node worker (vitest.config.ts sets
 * SHARDGATE_TEST_TIMES_DIR for every run): processes it starts (workerd, s3rver, the clients) and how
 * long they ran, and timers that fired after waiting 250 ms or more (sleeps, polls, grace
 * periods: time a driven clock would save), and the CPU it used: its worker's own, and that of
 * the processes it started once they ended (Linux: the suite is CPU-bound on 2 cores, so CPU,
 * not wall, says what a cut saves: docs/TESTING.md "Where the suite's CPU goes"). Written per
 * file as JSON for the reporter (test/support/time-reporter.ts), which adds vitest's own figures.
 */
import childProcess from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { cpuSecondsWithReaped } from './proc.ts';

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
  // From here, before the test file is imported: its imports are part of its CPU. (With
  // `isolate: false` this module runs again before each file, so each file starts its own count.)
  const cpuAtStart = cpuNow();
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
    const cpu = cpuNow();
    const file = expect.getState().testPath ?? 'unknown';
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, `${Buffer.from(file).toString('base64url')}.json`),
      JSON.stringify({
        file,
        spawns: now.spawns - at.spawns,
        processMs: now.processMs - at.processMs,
        timerWaitMs: now.timerWaitMs - at.timerWaitMs,
        ...(cpu && cpuAtStart ? { cpuMs: cpu.own - cpuAtStart.own, childCpuMs: cpu.children - cpuAtStart.children } : {}),
      }),
    );
  });
}

/** CPU milliseconds of this process and of its reaped children (proc.ts); undefined without /proc. */
function cpuNow(): { own: number; children: number } | undefined {
  try {
    const cpu = cpuSecondsWithReaped('self');
    return { own: cpu.own * 1000, children: cpu.reapedChildren * 1000 };
  } catch {
    return undefined;
  }
}
