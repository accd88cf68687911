/**
 * The suite's time table (issue 38), printed at the end of every `npm test`. After the run it prints the slowest
 * test files, each with its share of the summed file time and where that time went: vitest's
 * import and hooks (gateways and fleets started in beforeAll), the tests themselves, processes
 * started, timers waited on, and CPU used, its worker's and its processes' (test/support/time-probe.ts,
 * Node projects only), and writes the whole table as JSON (SHARDGATE_TEST_TIMES_OUT, default
 * .vitest-times.json). docs/TESTING.md
 * keeps the last table with its machine.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

export interface FileTime {
  file: string;
  project: string;
  tests: number;
  /** The file's wall time in its worker (import, hooks, tests). */
  ms: number;
  importMs: number;
  testsMs: number;
  /** Hooks (beforeAll/afterAll: gateways, fleets) and the rest: ms - importMs - testsMs. */
  hooksMs: number;
  spawns?: number;
  processMs?: number;
  timerWaitMs?: number;
  /** CPU of the file's worker from before its import to its last hook (time-probe.ts; Linux). */
  cpuMs?: number;
  /** CPU of the processes the file started that ended within it (workerd, s3rver, clients). */
  childCpuMs?: number;
}

export default class TimeReporter implements Reporter {
  private started = performance.now();

  onTestRunStart(): void {
    this.started = performance.now();
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const root = process.cwd();
    const dir = process.env.SHARDGATE_TEST_TIMES_DIR;
    /** This run's files' probes only (a vitest run inside a test shares the dir): read, then removed. */
    const probeOf = (moduleId: string) => {
      if (!dir) return {};
      const path = join(dir, `${Buffer.from(moduleId).toString('base64url')}.json`);
      if (!existsSync(path)) return {};
      const p = JSON.parse(readFileSync(path, 'utf8'));
      rmSync(path, { force: true });
      return {
        spawns: p.spawns as number,
        processMs: p.processMs as number,
        timerWaitMs: p.timerWaitMs as number,
        ...(p.cpuMs === undefined ? {} : { cpuMs: p.cpuMs as number, childCpuMs: p.childCpuMs as number }),
      };
    };
    const rows: FileTime[] = modules
      .map((m) => {
        const d = m.diagnostic();
        const tests = [...m.children.allTests()];
        const testsMs = tests.reduce((n, t) => n + (t.diagnostic()?.duration ?? 0), 0);
        const file = relative(root, m.moduleId);
        const importMs = d.collectDuration + d.setupDuration + d.environmentSetupDuration + d.prepareDuration;
        return {
          file,
          project: m.project.name,
          tests: tests.length,
          ms: d.duration + importMs,
          importMs,
          testsMs,
          hooksMs: Math.max(0, d.duration - testsMs),
          ...probeOf(m.moduleId),
        };
      })
      .sort((a, b) => b.ms - a.ms);
    const total = rows.reduce((n, r) => n + r.ms, 0);
    const wall = performance.now() - this.started;
    const out = process.env.SHARDGATE_TEST_TIMES_OUT ?? '.vitest-times.json';
    writeFileSync(out, JSON.stringify({ wallMs: Math.round(wall), fileMsSum: Math.round(total), machine: machine(), files: rows }, null, 1));
    const s = (ms?: number) => (ms === undefined ? '-' : (ms / 1000).toFixed(1));
    const cpu = rows.reduce((n, r) => n + (r.cpuMs ?? 0), 0);
    const childCpu = rows.reduce((n, r) => n + (r.childCpuMs ?? 0), 0);
    const lines = [
      `\nTest time table: wall ${s(wall)} s for ${rows.length} files (file times summed: ${s(total)} s; CPU summed: ${s(cpu)} s in the test workers, ${s(childCpu)} s in the processes they started; ${machine()}); all rows in ${out}`,
      `${'file'.padEnd(52)} ${'s'.padStart(7)} ${'share'.padStart(6)} ${'import'.padStart(7)} ${'hooks'.padStart(7)} ${'tests'.padStart(7)} ${'procs'.padStart(5)} ${'proc s'.padStart(7)} ${'timer s'.padStart(7)} ${'cpu s'.padStart(7)} ${'proc cpu'.padStart(8)}`,
      ...rows
        .slice(0, 20)
        .map(
          (r) =>
            `${r.file.slice(-52).padEnd(52)} ${s(r.ms).padStart(7)} ${`${((100 * r.ms) / total).toFixed(1)}%`.padStart(6)} ${s(r.importMs).padStart(7)} ${s(r.hooksMs).padStart(7)} ${s(r.testsMs).padStart(7)} ${String(r.spawns ?? '-').padStart(5)} ${s(r.processMs).padStart(7)} ${s(r.timerWaitMs).padStart(7)} ${s(r.cpuMs).padStart(7)} ${s(r.childCpuMs).padStart(8)}`,
        ),
    ];
    console.log(lines.join('\n'));
  }
}

function machine(): string {
  return `${cpus().length} cores, ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, Node ${process.version}`;
}
