// The outage scenarios, short: one PostgreSQL outage and one Redis outage of 1 s each under
// concurrent transfers and reads (`npm run chaos -- --scenario outages` is the long version).
import { describe, expect, it } from 'vitest';
import { printOutageReport, runOutageTest } from '../../scripts/chaos/lib/outage-run.ts';
import { DB_KINDS } from '../helpers/db.ts';

describe.runIf(DB_KINDS.includes('postgres'))('outage scenarios (PostgreSQL + Redis)', () => {
  it('14.1/14.2: serves normally within 5 s of each outage, with no 5xx but the outage types', async () => {
    const report = await runOutageTest({
      outages: ['database', 'redis'],
      outageMs: 1_000,
      clients: 4,
      log: () => {},
    });
    printOutageReport(report);
    expect(report.failures).toEqual([]);
    expect(report.outages.map((outage) => outage.kind)).toEqual(['database', 'redis']);
    for (const outage of report.outages) expect(outage.recoveryMs).toBeLessThan(5_000);
  }, 120_000);
});
