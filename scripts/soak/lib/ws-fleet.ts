// The parent side of ws-fleet-worker.ts: N WebSocket clients subscribed to every event, counted.
import path from 'node:path';
import { Worker } from 'node:worker_threads';

export interface WsFleet {
  /** Frames received so far (updated every second). */
  deliveries(): number;
  /** Closes every client; returns the closes they did not ask for, by code, and the final count. */
  stop(): Promise<{ deliveries: number; unexpectedCloses: Record<string, number> }>;
}

export async function startWsFleet(
  url: string,
  count: number,
  headers: Record<string, string>,
): Promise<WsFleet> {
  const worker = new Worker(path.join(import.meta.dirname, 'ws-fleet-worker.ts'), {
    workerData: { url, count, headers },
  });
  let deliveries = 0;
  let finished: (result: { deliveries: number; unexpectedCloses: Record<string, number> }) => void = () => {};
  worker.on('message', (message: { deliveries?: number; closes?: Record<string, number> }) => {
    if (message.deliveries !== undefined) deliveries = message.deliveries;
    if (message.closes) finished({ deliveries, unexpectedCloses: message.closes });
  });
  await new Promise<void>((resolve, reject) => {
    const onMessage = (message: { ready?: boolean }) => {
      if (!message.ready) return;
      worker.off('message', onMessage);
      resolve();
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
    worker.once('exit', (code) =>
      reject(new Error(`WebSocket worker exited with code ${code} before it was ready`)),
    );
  });
  return {
    deliveries: () => deliveries,
    async stop() {
      const result = new Promise<{ deliveries: number; unexpectedCloses: Record<string, number> }>(
        (resolve) => {
          finished = resolve;
        },
      );
      worker.postMessage('stop');
      const outcome = await result;
      await new Promise((resolve) => worker.once('exit', resolve));
      return outcome;
    },
  };
}
