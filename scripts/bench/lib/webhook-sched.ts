// How long a process's threads waited for a CPU while runnable (Linux schedstat's run_delay): on a
// machine whose cores are all busy, a thread with work waits its turn on a run queue, and that wait
// is latency no code in the thread can remove. Grouped as threadCpuSeconds (proc.ts): `main` and the
// others by name.
import { readdirSync, readFileSync } from 'node:fs';

/** Seconds each thread group of `pid` has waited on a run queue so far (empty where schedstat is missing). */
export function runQueueSeconds(pid: number): Map<string, number> {
  const groups = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return groups;
  }
  for (const tid of tids) {
    let schedstat: string;
    let comm: string;
    try {
      schedstat = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8');
      comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue; // the thread ended meanwhile, or no schedstat
    }
    const name = Number(tid) === pid ? 'main' : comm;
    const waited = Number(schedstat.split(' ')[1]) / 1e9;
    groups.set(name, (groups.get(name) ?? 0) + waited);
  }
  return groups;
}
