// Runs the soak's WebSocket clients in a worker thread, so that receiving thousands of frames a
// second does not delay the HTTP load generator's own event loop (and with it the latencies it
// measures). Protocol: workerData { url, count, headers }; posts { ready } once all are subscribed,
// { deliveries } every second; on a 'stop' message it closes every client and posts { closes }.
import { parentPort, workerData } from 'node:worker_threads';
import { openClients } from '../../lib/ws-clients.ts';

const { url, count, headers } = workerData as { url: string; count: number; headers: Record<string, string> };
const port = parentPort;
if (!port) throw new Error('ws-fleet-worker.ts runs as a worker thread');

let deliveries = 0;
const fleet = await openClients(url, count, headers, {
  onMessage: () => {
    deliveries++;
  },
});
await fleet.subscribeAll();
port.postMessage({ ready: true });
const ticker = setInterval(() => port.postMessage({ deliveries }), 1000);
port.on('message', async (message) => {
  if (message !== 'stop') return;
  clearInterval(ticker);
  port.postMessage({ deliveries, closes: Object.fromEntries(fleet.unexpectedCloses) });
  await fleet.closeAll();
  port.close();
});
