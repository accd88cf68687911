/**
 * Why a gateway under test stopped answering, in seconds instead of every later test's timeout.
 * A suite that shares one gateway between its tests asks `unanswered` after each test; once it
 * says why, the suite fails the rest at once with that reason (CI has a deadline; a wedged workerd
 * once cost it hours). The reason carries each workerd's CPU use (100%: a loop that never yields,
 * 0%: waiting on something) and, for a spinning one, the native frames where it spins.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, beforeEach } from 'vitest';

/**
 * Registers the suite's guard: after each test (and, with `beforeToo`, before it) `why()` is asked
 * whether the gateway still answers; once it says why not, that test and every later one fail at
 * once with the reason. `why` is never asked again after it answered.
 */
export function failFastOnceUnanswered(why: () => Promise<string | undefined>, o: { timeoutMs: number; beforeToo?: boolean }): void {
  let wedged: string | undefined;
  const check = async () => {
    if (wedged) throw new Error(wedged);
    wedged = await why();
    if (wedged) throw new Error(wedged);
  };
  if (o.beforeToo) beforeEach(check, o.timeoutMs);
  else
    beforeEach(() => {
      if (wedged) throw new Error(wedged);
    });
  afterEach(check, o.timeoutMs);
}

/**
 * Undefined when `url` gets any HTTP answer to an unsigned HEAD within `ms` (an error status is
 * an answer: the gateway is alive), else why not.
 */
export async function unanswered(url: URL, ms: number, fetchImpl: typeof fetch = fetch): Promise<string | undefined> {
  try {
    const res = await fetchImpl(url, { method: 'HEAD', signal: AbortSignal.timeout(ms) });
    await res.body?.cancel();
    return undefined;
  } catch (err) {
    return `the gateway did not answer a HEAD within ${ms / 1000} s (${(err as Error).message}); ${await workerdCpu()}`;
  }
}

/** CPU use of every workerd process over two seconds, with a spinning one's native stack. */
export async function workerdCpu(): Promise<string> {
  const sample = () => {
    const ticks = new Map<string, number>();
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        if (!stat.includes('(workerd)')) continue;
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        ticks.set(pid, Number(fields[11]) + Number(fields[12])); // utime + stime
      } catch {
        // gone meanwhile
      }
    }
    return ticks;
  };
  try {
    const before = sample();
    await new Promise((r) => setTimeout(r, 2000));
    const after = sample();
    const lines: string[] = [];
    for (const [pid, t] of after) {
      const busy = Math.round((t - (before.get(pid) ?? t)) / 2);
      lines.push(`workerd ${pid}: ${busy}% CPU, ${Math.round(t / 100)} s in all${busy >= 80 ? `; where it spins: ${await nativeStack(pid)}` : ''}`);
    }
    return lines.length ? lines.join(', ') : 'no workerd process found';
  } catch (err) {
    return `workerd CPU unknown (${(err as Error).message})`;
  }
}

/**
 * The function names of a spinning workerd's innermost frames (gdb, which .ci/run installs; the
 * binary keeps its symbols): native code (SQLite, kj) or V8 running JavaScript tells which kind of
 * loop it is.
 */
function nativeStack(pid: string): Promise<string> {
  return new Promise((resolve) => {
    execFile('gdb', ['-p', pid, '-batch', '-ex', 'bt 30'], { timeout: 60_000, maxBuffer: 4 << 20 }, (err, stdout) => {
      const frames = String(stdout ?? '')
        .split('\n')
        .filter((l) => /^#\d+/.test(l))
        .map((l) =>
          l
            .replace(/^#(\d+)\s+(0x[0-9a-f]+ in )?/, '#$1 ')
            .replace(/\s*\(.*$/, '')
            .slice(0, 100),
        );
      resolve(frames.length ? frames.join(' | ') : `no stack (${err ? err.message.split('\n')[0] : 'gdb printed none'})`);
    });
  });
}
