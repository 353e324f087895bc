// The fan-out producer, in a worker thread of its own: the main thread is busy receiving hundreds of
// thousands of WebSocket frames a second, and a producer sharing its event loop would fall behind its
// rate for reasons that have nothing to do with the server. It writes each event's send time
// (epoch ms) into the shared `sentAt` array, indexed by sequence number.
import { parentPort, workerData } from 'node:worker_threads';
import { produceSteadily } from './producer.ts';

export interface ProducerJob {
  url: string;
  headers: Record<string, string>;
  /** Fields added to every posted body (the hello baseline wants the asset id in the body). */
  extraBody: Record<string, string>;
  rate: number;
  seconds: number;
  /** Sequence number of the first event (warm-up events are numbered past the measured ones). */
  firstSequence: number;
  sentAt: SharedArrayBuffer;
}

const job = workerData as ProducerJob;
const sentAt = new Float64Array(job.sentAt);

const result = await produceSteadily(job.rate, job.seconds, async (index) => {
  const sequence = job.firstSequence + index;
  if (sequence < sentAt.length) sentAt[sequence] = performance.timeOrigin + performance.now();
  // The event's `source` carries its sequence number, which the clients read back.
  const body = {
    ...job.extraBody,
    price: `${sequence + 1}.25`,
    currency: 'USD',
    source: `bench-${sequence}`,
  };
  const response = await fetch(job.url, {
    method: 'POST',
    headers: { ...job.headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.ok;
});
parentPort?.postMessage(result);
