// The webhook benchmark's receiver, in a worker thread of its own: the main thread is busy receiving
// tens of thousands of WebSocket frames a second, and a receiver sharing its event loop would add
// that loop's delays to every webhook's round trip (and so to the service's per-subscription pace).
// It answers 204 at once and, while measuring, records each request's commit-to-receipt latency
// (receipt minus the event's occurredAt; same host, same clock) and its event id.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { parentPort } from 'node:worker_threads';

export type ReceiverCommand = { measuring: boolean } | { report: true };
export type ReceiverMessage =
  | { port: number }
  | { progress: { received: number; events: number } }
  | {
      report: {
        received: number;
        events: number;
        latencies: Float64Array;
        receivedAt: Float64Array;
        /** This thread's CPU (user + system) while measuring, µs. */
        cpuMicros: number;
      };
    };

const port = parentPort;
if (!port) throw new Error('webhook-receiver-worker runs as a worker thread');

let measuring = false;
let received = 0;
const events = new Set<string>();
let latencies = new Float64Array(1 << 16);
/** When each sample arrived (ms, same clock as latencies' occurredAt). */
let arrivals = new Float64Array(1 << 16);
let count = 0;
/** This thread's CPU use when measuring began, and the total of the measured stretches. */
let cpuAtStart = process.threadCpuUsage();
let cpuMicros = 0;
const OCCURRED_AT = /"occurredAt":"([^"]+)"/;
const ID = /"id":"([^"]+)"/;

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    res.writeHead(204).end();
    if (!measuring) return;
    const body = Buffer.concat(chunks).toString('utf8');
    const occurredAt = Date.parse(OCCURRED_AT.exec(body)?.[1] ?? '');
    if (count === latencies.length) {
      const grown = new Float64Array(latencies.length * 2);
      grown.set(latencies);
      latencies = grown;
      const grownArrivals = new Float64Array(arrivals.length * 2);
      grownArrivals.set(arrivals);
      arrivals = grownArrivals;
    }
    arrivals[count] = at;
    latencies[count++] = at - occurredAt;
    events.add(ID.exec(body)?.[1] ?? '');
    received++;
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => {
  port.postMessage({ port: (server.address() as { port: number }).port } satisfies ReceiverMessage);
});
setInterval(() => {
  port.postMessage({ progress: { received, events: events.size } } satisfies ReceiverMessage);
}, 50).unref();
port.on('message', (command: ReceiverCommand) => {
  if ('measuring' in command) {
    if (command.measuring && !measuring) cpuAtStart = process.threadCpuUsage();
    if (!command.measuring && measuring) {
      const used = process.threadCpuUsage(cpuAtStart);
      cpuMicros += used.user + used.system;
    }
    measuring = command.measuring;
  } else
    port.postMessage({
      report: {
        received,
        events: events.size,
        latencies: latencies.slice(0, count),
        receivedAt: arrivals.slice(0, count),
        cpuMicros,
      },
    } satisfies ReceiverMessage);
});
port.on('close', () => server.close());
