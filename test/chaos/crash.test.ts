// The crash test, short: two SIGKILLs and restarts under concurrent writes and resuming subscribers,
// on each database the suite runs on (`npm run chaos` is the long version: 5 kills in 60 s); and the
// same for the economy's multi-part operations (scripts/chaos/lib/economy-crash.ts): crafts, trade
// acceptances, store purchases, loot box openings, marketplace purchases of listings, auction bids
// and settlements, items ending (timed grants burned, loans returned by the sweep), and timed
// currency grants (lots) spent by transfers and burned by the sweep at their end, while the kills
// happen.
import { describe, expect, it } from 'vitest';
import { printCrashReport } from '../../scripts/chaos/lib/crash-report.ts';
import { runCrashTest } from '../../scripts/chaos/lib/crash-run.ts';
import { runEconomyCrashTest } from '../../scripts/chaos/lib/economy-crash.ts';
import { DB_KINDS } from '../helpers/db.ts';

describe.each(DB_KINDS)('crash test on %s', (db) => {
  it('loses, doubles and breaks nothing across two kill -9 and restarts', async () => {
    const report = await runCrashTest({
      db,
      kills: 2,
      durationSeconds: 10,
      clients: 8,
      players: 6,
      log: () => {},
    });
    printCrashReport(report);
    expect(report.failures).toEqual([]);
    expect(report.restartMs).toHaveLength(2);
    expect(report.requests.ok).toBeGreaterThan(0);
    expect(report.findings.transfers.found).toBe(report.findings.transfers.acknowledged);
  }, 180_000);

  it('applies each craft, trade, purchase, opening, sale and bid in flight at a kill -9 fully or not at all, and each expiry and settlement once', async () => {
    const report = await runEconomyCrashTest({
      db,
      kills: 2,
      durationSeconds: 10,
      clients: 4,
      log: () => {},
    });
    expect(report.failures).toEqual([]);
    expect(report.restartMs).toHaveLength(2);
    expect(report.crafts).toBeGreaterThan(0);
    expect(report.trades).toBeGreaterThan(0);
    expect(report.purchases).toBeGreaterThan(0);
    expect(report.openings).toBeGreaterThan(0);
    expect(report.sales).toBeGreaterThan(0);
    expect(report.expired).toBeGreaterThan(0);
    expect(report.grants).toBeGreaterThan(0);
    expect(report.lotsBurned).toBeGreaterThan(0);
    expect(report.bids).toBeGreaterThan(0);
    expect(report.auctionsSold).toBeGreaterThan(0);
    // Requests were cut by the kills (or sent while the service was down) and resent with their key.
    expect(report.retried).toBeGreaterThan(0);
    // And answered ones resent later with their key, as if their answer was lost: each replayed.
    expect(report.resent).toBeGreaterThan(0);
    console.log(
      `economy crash (${db}): ${report.crafts} crafts, ${report.trades} trades, ${report.purchases} store purchases, ` +
        `${report.openings} openings, ${report.sales} sales, ${report.bids} bids, ${report.auctionsSold} auctions sold, ` +
        `${report.expired} expiries, ${report.grants} timed currency grants (${report.lotsBurned} lots burned); ${report.retried} resent after a cut, ${report.resent} after an answer, ` +
        `refused ${JSON.stringify(report.refused)}; restarts ${report.restartMs.join(', ')} ms`,
    );
  }, 180_000);
});
