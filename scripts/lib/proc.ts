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
 * CPU seconds per thread of the process, user and system apart, grouped: `main` (the thread whose id
 * is the pid) and the others by their name in /proc (worker threads, libuv's pool, V8's helpers).
 */
export function threadCpuTimes(pid: number): Map<string, { user: number; system: number }> {
  const groups = new Map<string, { user: number; system: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const name = Number(tid) === pid ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const group = groups.get(name) ?? { user: 0, system: 0 };
    group.user += Number(fields[11]) / 100;
    group.system += Number(fields[12]) / 100;
    groups.set(name, group);
  }
  return groups;
}

/** CPU seconds (user + system) per thread of the process, grouped as `threadCpuTimes`. */
export function threadCpuSeconds(pid: number): Map<string, number> {
  return new Map([...threadCpuTimes(pid)].map(([name, { user, system }]) => [name, user + system]));
}

/** The whole machine's CPU time so far, in clock ticks (USER_HZ), from the first line of /proc/stat. */
export interface MachineCpu {
  /** Running anything: user, nice, system, interrupts. */
  busy: number;
  /** Idle while a disk read or write was outstanding. */
  iowait: number;
  /** Wanted by this machine but given by the host to another (a virtual machine's neighbours). */
  steal: number;
  total: number;
}

export function machineCpu(): MachineCpu {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const busy = user + nice + system + irq + softirq;
  return { busy, iowait, steal, total: busy + idle + iowait + steal };
}

/** File data written but not yet on disk (Dirty + Writeback of /proc/meminfo), in bytes. */
export function unwrittenBytes(): number {
  const meminfo = readFileSync('/proc/meminfo', 'utf8');
  const kilobytes = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(meminfo)?.[1] ?? 0);
  return (kilobytes('Dirty') + kilobytes('Writeback')) * 1024;
}

/** This process's soft limit on open files. */
export function openFilesLimit(): number {
  const match = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return !match || match[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(match[1]);
}

export function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
