// A checkpoint thread that fails (test/integration/db/sqlite-checkpoints.test.ts): it reports a failed
// checkpoint twice, as the real thread does at each tick while its checkpoints fail, then ends with an
// error, as a thread whose connection broke would.
import { parentPort } from 'node:worker_threads';
import type { CheckpointThreadMessage } from '../../src/db/sqlite-checkpoints.ts';

for (let tick = 0; tick < 2; tick++)
  parentPort?.postMessage({ failure: 'SqliteError: disk I/O error' } satisfies CheckpointThreadMessage);
throw new Error('the checkpoint connection broke');
