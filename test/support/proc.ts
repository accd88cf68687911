/**
 * What the OS says about a process (Linux /proc), for the benchmark and the process-level tests:
 * CPU time (utime + stime), resident memory (VmRSS, sampled; VmHWM cannot be reset), the
 * processes below ours, the TCP ports a process listens on, the load average. Everything the
 * benchmark reports as CPU or memory comes from here.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds (user + system) that `pid` (or its thread `tid`) has used so far. */
export function cpuSeconds(pid: number | string, tid?: number | string): number {
  return cpuTimes(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`).own;
}

/**
 * CPU seconds (user + system) of `pid` so far, and of its children that have ended and been
 * waited for (the kernel adds theirs, with their own children's, when the parent reaps them).
 */
export function cpuSecondsWithReaped(pid: number | string): { own: number; reapedChildren: number } {
  return cpuTimes(`/proc/${pid}/stat`);
}

function cpuTimes(statPath: string): { own: number; reapedChildren: number } {
  const stat = readFileSync(statPath, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields after "(comm)": state is f[0], so field N of the whole line is f[N - 3]: utime (14)
  // f[11], stime f[12], cutime (16) f[13], cstime f[14].
  return { own: (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND, reapedChildren: (Number(f[13]) + Number(f[14])) / TICKS_PER_SECOND };
}

/** VmRSS of `pid` in bytes, or null once it is gone. */
export function rssBytes(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Samples VmRSS of `pid` every `everyMs` until stopped: the peak and every sample, in order
 *  (samples of a process already gone are left out). */
export function rssSampler(pid: number, everyMs = 5): { stop(): { peak: number; series: number[] } } {
  const series: number[] = [];
  let peak = 0;
  const take = () => {
    const rss = rssBytes(pid);
    if (rss === null) return;
    series.push(rss);
    peak = Math.max(peak, rss);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return { peak, series };
    },
  };
}

export function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

export function cpuModel(): string {
  const m = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'));
  return m ? m[1]!.trim() : 'unknown';
}

export interface ProcInfo {
  pid: number;
  ppid: number;
  comm: string;
}

/** Every live process whose parent chain leads to `root`. */
export function descendants(root: number): ProcInfo[] {
  const all = new Map<number, ProcInfo>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      all.set(Number(name), { pid: Number(name), ppid, comm });
    } catch {
      // exited while we looked
    }
  }
  const below = (p: ProcInfo): boolean => {
    for (let q: ProcInfo | undefined = p, hops = 0; q && hops < 64; q = all.get(q.ppid), hops++) {
      if (q.ppid === root) return true;
    }
    return false;
  };
  return [...all.values()].filter(below);
}

/** The workerd processes below `root` (this process by default). */
export function workerdPids(root = process.pid): number[] {
  return descendants(root)
    .filter((p) => p.comm === 'workerd')
    .map((p) => p.pid);
}

/** TCP ports (IPv4/IPv6) on which `pid` listens. */
export function listenersOf(pid: number): number[] {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    return [];
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue; // 0A: LISTEN
      if (inodes.has(f[9]!)) ports.push(parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return [...new Set(ports)];
}

/** Which of `pids` listens on TCP `port`, if any. */
export function listenerOf(port: number, pids: number[]): number | undefined {
  return pids.find((pid) => listenersOf(pid).includes(port));
}
