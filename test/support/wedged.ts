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
import { cpuSeconds, descendants } from './proc.ts';

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
  let failure = '';
  for (let attempt = 0; attempt < 2; attempt++) {
    const signal = AbortSignal.timeout(ms);
    try {
      const res = await fetchImpl(url, { method: 'HEAD', signal });
      await res.body?.cancel();
      return undefined;
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      failure = `${(err as Error).message}${cause ? `: ${cause.code ?? cause.message}` : ''}`;
      // Our own deadline passed: no answer. Any other failure (a keep-alive socket the gateway
      // closed after 5 s idle, reset as it was reused) is asked once more before it counts.
      if (signal.aborted) break;
    }
  }
  return `the gateway did not answer a HEAD within ${ms / 1000} s (${failure}); ${await workerdCpu()}`;
}

/**
 * CPU use of every workerd process over two seconds: whether it is this test process's own (a
 * descendant) or another file's, and for a busy one (50% or more) which of its threads burn it
 * and, for this file's own, the native frames of the busiest. The main thread in `epoll_pwait`
 * while the process is busy means an event loop kept busy, not one stuck in a loop; a busy other
 * thread is V8's compiler or GC, or SQLite.
 */
export async function workerdCpu(): Promise<string> {
  const secondsOf = (pid: string, tid?: string): number | null => {
    try {
      return cpuSeconds(pid, tid);
    } catch {
      return null; // gone meanwhile
    }
  };
  // CPU seconds over the two-second window, as a percentage of one core.
  const percent = (now: number, before: number | undefined) => Math.round(((now - (before ?? now)) * 100) / 2);
  const sample = () => {
    const seconds = new Map<string, { total: number; threads: Map<string, number> }>();
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      try {
        if (!readFileSync(`/proc/${pid}/stat`, 'utf8').includes('(workerd)')) continue;
        const threads = new Map<string, number>();
        for (const tid of readdirSync(`/proc/${pid}/task`)) {
          const t = secondsOf(pid, tid);
          if (t !== null) threads.set(tid, t);
        }
        seconds.set(pid, { total: secondsOf(pid) ?? 0, threads });
      } catch {
        // gone meanwhile
      }
    }
    return seconds;
  };
  try {
    const ours = new Set(descendants(process.pid).map((p) => String(p.pid)));
    const before = sample();
    await new Promise((r) => setTimeout(r, 2000));
    const after = sample();
    const lines: string[] = [];
    for (const [pid, t] of after) {
      const was = before.get(pid);
      const busy = percent(t.total, was?.total);
      let line = `workerd ${pid} (${ours.has(pid) ? "this file's" : "another file's"}): ${busy}% CPU, ${Math.round(t.total)} s in all`;
      if (busy >= 50) {
        const threads = [...t.threads]
          .map(([tid, n]) => ({ tid, busy: percent(n, was?.threads.get(tid)) }))
          .filter((x) => x.busy > 0)
          .sort((a, b) => b.busy - a.busy);
        const top = threads[0];
        line += `; busy threads: ${threads.map((x) => `${x.tid}${x.tid === pid ? ' (main)' : ''} ${x.busy}%`).join(', ') || 'none seen'}`;
        // gdb stops the process while it reads the stacks: never another file's, whose test it would disturb.
        if (top && ours.has(pid)) line += `; thread ${top.tid}'s frames: ${await nativeStack(pid, top.tid)}`;
      }
      lines.push(line);
    }
    return lines.length ? lines.join(', ') : 'no workerd process found';
  } catch (err) {
    return `workerd CPU unknown (${(err as Error).message})`;
  }
}

/**
 * The function names of thread `tid`'s innermost frames in a busy workerd (gdb, which .ci/run installs; the
 * binary keeps its symbols): native code (SQLite, kj) or V8 running JavaScript tells which kind of
 * loop it is.
 */
function nativeStack(pid: string, tid: string): Promise<string> {
  return new Promise((resolve) => {
    execFile('gdb', ['-p', pid, '-batch', '-ex', 'thread apply all bt 30'], { timeout: 60_000, maxBuffer: 16 << 20 }, (err, stdout) => {
      resolve(threadFrames(String(stdout ?? ''), tid) ?? `no stack (${err ? err.message.split('\n')[0] : 'gdb printed none'})`);
    });
  });
}

/**
 * Thread `tid`'s frames from gdb's `thread apply all bt` (function names only), or undefined if it
 * printed none; with the one cause found so far named when its frames are there (docs/TESTING.md
 * "A gateway that stopped answering").
 */
export function threadFrames(gdbOutput: string, tid: string): string | undefined {
  // Each thread's frames follow its header: Thread N (Thread 0x... (LWP <tid>) "name"):
  const sections = gdbOutput.split(/\n(?=Thread \d+ )/);
  const own = sections.find((sec) => sec.includes(`(LWP ${tid})`)) ?? sections.find((sec) => sec.startsWith('Thread 1 ')) ?? '';
  const frames = own
    .split('\n')
    .filter((l) => /^#\d+/.test(l))
    .map((l) =>
      l
        .replace(/^#(\d+)\s+(0x[0-9a-f]+ in )?/, '#$1 ')
        .replace(/\s*\(.*$/, '')
        .slice(0, 100),
    );
  if (!frames.length) return undefined;
  const knownDeadlock =
    frames.some((f) => f.includes('PumpMessageLoop')) && sections.some((sec) => sec.includes('AwaitCollectionBackground'))
      ? ' (a V8 thread waits for a garbage collection while the main thread pumps V8 tasks: the deadlock that --single-threaded-gc prevents; is SHARDGATE_WORKERD_V8_FLAGS set without it?)'
      : '';
  return frames.join(' | ') + knownDeadlock;
}
