// The webhook benchmark's receiver, in a worker thread of its own: the main thread is busy receiving
// tens of thousands of WebSocket frames a second, and a receiver sharing its event loop would add
// that loop's delays to every webhook's round trip (and so to the service's per-subscription pace).
// It answers 204 at once and, while measuring, records each request's commit-to-receipt latency
// (receipt minus the event's occurredAt; same host, same clock) and its event id.
// Signatures: every VERIFY_EVERY-th request of each subscription (its first included) is verified
// with the `standardwebhooks` library against the secret the subscription was created with (given
// with `secrets`); a request that fails is counted (`badSignatures`, the report prints it). Not every
// one: verifying is pure-JS HMAC (~10 µs), and this thread shares the machine with the service it
// measures. test/integration/webhooks/ verifies every request its receiver gets (receiver.ts).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { parentPort } from 'node:worker_threads';
import { Webhook } from 'standardwebhooks';

export type ReceiverCommand = { measuring: boolean } | { report: true } | { secrets: Record<string, string> };
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
        /** Requests whose signature was verified, and those that failed. */
        verified: number;
        badSignatures: number;
      };
    };

/** One request in this many per subscription is verified. */
const VERIFY_EVERY = 50;

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
/** By path: the subscription's verifier and how many of its requests came. */
const verifiers = new Map<string, { webhook: Webhook; seen: number }>();
let verified = 0;
let badSignatures = 0;
const OCCURRED_AT = /"occurredAt":"([^"]+)"/;
const ID = /"id":"([^"]+)"/;

function verify(req: IncomingMessage, body: string): void {
  const verifier = verifiers.get(req.url ?? '');
  if (!verifier || verifier.seen++ % VERIFY_EVERY !== 0) return;
  verified++;
  try {
    verifier.webhook.verify(body, {
      'webhook-id': String(req.headers['webhook-id']),
      'webhook-timestamp': String(req.headers['webhook-timestamp']),
      'webhook-signature': String(req.headers['webhook-signature']),
    });
  } catch {
    badSignatures++;
  }
}

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  let chunks: Buffer | Buffer[] | null = null;
  req.on('data', (chunk: Buffer) => {
    if (chunks === null) chunks = chunk;
    else if (Array.isArray(chunks)) chunks.push(chunk);
    else chunks = [chunks, chunk];
  });
  req.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    res.writeHead(204).end();
    if (!measuring) return;
    const body = (
      chunks === null ? '' : Array.isArray(chunks) ? Buffer.concat(chunks) : (chunks as Buffer)
    ).toString('utf8');
    verify(req, body);
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
  if ('secrets' in command) {
    for (const [path, secret] of Object.entries(command.secrets))
      verifiers.set(path, { webhook: new Webhook(secret), seen: 0 });
  } else if ('measuring' in command) {
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
        verified,
        badSignatures,
      },
    } satisfies ReceiverMessage);
});
port.on('close', () => server.close());
