// Worker thread entry for jsonld-pool.ts: answers each { id, task } with { id, outcome } or
// { id, error }.
import { parentPort } from 'node:worker_threads';
import { type JsonLdTask, processJsonLd, workerDocumentLoader } from './jsonld-work.ts';

parentPort?.on('message', async ({ id, task }: { id: number; task: JsonLdTask }) => {
  try {
    const outcome = await processJsonLd(task, workerDocumentLoader(task));
    parentPort?.postMessage({ id, outcome });
  } catch (error) {
    parentPort?.postMessage({ id, error: (error as Error).message ?? 'worker failure' });
  }
});
