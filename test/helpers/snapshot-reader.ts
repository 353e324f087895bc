// A thread that reads a SQLite file through the service's read statements (src/db/sqlite-read-statements.ts,
// as the holdings listings' thread does) for `ms` milliseconds, each read one statement over a table of
// balances whose sum every commit keeps, and reports how many reads saw another sum
// (test/integration/db/sqlite-one-library.test.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { sqliteReadStatements } from '../../src/db/sqlite-read-statements.ts';

const { path, ms, total } = workerData as { path: string; ms: number; total: number };
const reads = sqliteReadStatements(path);
let count = 0;
let torn = 0;
parentPort?.postMessage('reading');
const until = performance.now() + ms;
while (performance.now() < until) {
  const [row] = await reads.all<{ total: number }>('select sum(balance) as total from probe_balance', []);
  count++;
  if (row.total !== total) torn++;
}
reads.close();
parentPort?.postMessage({ count, torn });
