// The soak, as a 10-second smoke run: the mixed load and 100 subscribed WebSocket clients against one
// instance on SQLite, with no 5xx and no unexpected error (`npm run soak` runs 10 minutes, 1,000 clients).
import { expect, it } from 'vitest';
import { printSoakReport } from '../../scripts/soak/lib/soak-report.ts';
import { runSoak } from '../../scripts/soak/lib/soak-run.ts';

it('serves 10 s of mixed load with 100 WebSocket subscribers without a 5xx', async () => {
  const report = await runSoak({
    db: 'sqlite',
    durationSeconds: 10,
    intervalSeconds: 5,
    clients: 100,
    rate: 30,
    players: 4,
    log: () => {},
  });
  printSoakReport(report);
  expect(report.failures).toEqual([]);
  expect(report.requests).toBeGreaterThan(150);
  expect(report.deliveries).toBeGreaterThan(0);
}, 120_000);
