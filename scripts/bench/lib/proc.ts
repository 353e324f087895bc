// What Linux says about a process: resident memory, CPU time, the open-files limit.
import { readFileSync } from 'node:fs';

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

/** This process's soft limit on open files. */
export function openFilesLimit(): number {
  const match = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return !match || match[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(match[1]);
}

export function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
