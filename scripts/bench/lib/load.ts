// HTTP load with autocannon, in this process: the same load against the service and the Koa hello
// baseline, summarized the same way.
import { cpuSeconds, threadCpuTimes } from '../../lib/proc.ts';
import { type AutocannonClient, autocannon } from '../../lib/untyped.ts';

export interface LoadOptions {
  label: string;
  url: string;
  connections: number;
  durationSeconds: number;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  setupClient?: (client: AutocannonClient) => void;
  /**
   * The process answering (service or baseline): its CPU time over the run, per 2xx answer, is
   * reported beside the rates. On a shared machine the rate moves with what else runs; the CPU an
   * answer costs moves much less (it still counts background work of that process, such as writes).
   */
  serverPid?: number;
}

export interface LoadResult {
  label: string;
  /** Successful (2xx) responses per second over the whole run. */
  okPerSecond: number;
  /** Latency of the 2xx responses, in milliseconds (autocannon records whole milliseconds). */
  p50: number;
  p99: number;
  mean: number;
  ok: number;
  /** Responses that were not 2xx, by status, plus connection errors and timeouts. */
  failures: Record<string, number>;
  /** CPU microseconds (user + system) of `serverPid` per 2xx answer, when it was given. */
  serverCpuMicros?: number;
  /**
   * The same by thread: `main` (the event loop) and the others by their name in /proc (worker threads
   * are `WorkerThread`, V8's GC helpers `V8Worker`), those that used any CPU.
   */
  serverThreadMicros?: Record<string, number>;
  /** The system (kernel) part of `serverThreadMicros`: socket writes and reads, page faults. */
  serverThreadSystemMicros?: Record<string, number>;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const cpuBefore = options.serverPid === undefined ? 0 : cpuSeconds(options.serverPid);
  const threadsBefore = options.serverPid === undefined ? undefined : threadCpuTimes(options.serverPid);
  // autocannon merges options with Object.assign: an explicit `undefined` would erase its defaults.
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.durationSeconds,
    ...(options.method && { method: options.method }),
    ...(options.headers && { headers: options.headers }),
    ...(options.body !== undefined && { body: options.body }),
    ...(options.setupClient && { setupClient: options.setupClient }),
  });
  const failures: Record<string, number> = {};
  for (const [status, { count }] of Object.entries(result.statusCodeStats)) {
    if (!status.startsWith('2')) failures[status] = count;
  }
  if (result.errors > 0) failures.errors = result.errors;
  if (result.timeouts > 0) failures.timeouts = result.timeouts;
  const cpu = options.serverPid === undefined ? undefined : cpuSeconds(options.serverPid) - cpuBefore;
  let threads: Record<string, number> | undefined;
  let threadsSystem: Record<string, number> | undefined;
  if (options.serverPid !== undefined && threadsBefore && result['2xx'] > 0) {
    threads = {};
    threadsSystem = {};
    for (const [name, { user, system }] of threadCpuTimes(options.serverPid)) {
      const before = threadsBefore.get(name) ?? { user: 0, system: 0 };
      const used = user + system - before.user - before.system;
      if (used <= 0) continue;
      threads[name] = (used * 1e6) / result['2xx'];
      threadsSystem[name] = ((system - before.system) * 1e6) / result['2xx'];
    }
  }
  return {
    label: options.label,
    okPerSecond: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    mean: result.latency.average,
    ok: result['2xx'],
    failures,
    ...(cpu !== undefined && result['2xx'] > 0 && { serverCpuMicros: (cpu * 1e6) / result['2xx'] }),
    ...(threads && { serverThreadMicros: threads, serverThreadSystemMicros: threadsSystem }),
  };
}

/** A short run whose figures are thrown away: JIT, connection pools and caches warm up first. */
export async function warmUp(options: LoadOptions, seconds = 2): Promise<void> {
  await runLoad({ ...options, durationSeconds: seconds });
}
