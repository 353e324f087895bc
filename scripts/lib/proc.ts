// What Linux says about a process: resident memory, CPU time, the open-files limit.
import { readdirSync, readFileSync } from 'node:fs';

/** Resident set size (VmRSS) in bytes. */
export function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]) * 1024;
}

/** User + system CPU seconds the process has used so far. */
export function cpuSeconds(pid: number): number {
  // Fields after the parenthesized command name; utime and stime are fields 14 and 15 of the line,
  // in clock ticks, which the kernel reports in USER_HZ = 100 per second on Linux.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * CPU seconds per thread of the process, grouped: `main` (the thread whose id is the pid) and the
 * others by their name in /proc (worker threads, libuv's pool, V8's helpers).
 */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const groups = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const name = Number(tid) === pid ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    groups.set(name, (groups.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100);
  }
  return groups;
}

/** This process's soft limit on open files. */
export function openFilesLimit(): number {
  const match = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return !match || match[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(match[1]);
}

export function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
