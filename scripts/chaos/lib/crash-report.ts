// The crash test's figures as plain text.
import { table } from '../../bench/lib/report.ts';
import type { CrashReport } from './crash-run.ts';

export function printCrashReport(report: CrashReport): void {
  const print = (line: string) => console.log(line);
  const { requests, findings } = report;
  const { transfers, prices } = findings;
  print(`\n=== crash test: ${report.options.db}${report.options.redisUrl ? ' + Redis' : ''} ===`);
  print(
    `kills: ${report.restartMs.length}, restarts answered in ${report.restartMs.join(', ')} ms; ` +
      `${report.options.clients} writers, ${report.options.durationSeconds} s`,
  );
  print(
    `requests: ${requests.sent} sent (${requests.attempts} sends), ${requests.ok} 2xx, ` +
      `4xx ${JSON.stringify(requests.rejected)}, 5xx ${JSON.stringify(requests.serverErrors)}, ` +
      `never answered ${requests.neverAnswered}`,
  );
  print(
    `retries: ${requests.retried} requests re-sent with the same key after ${requests.unansweredSends} ` +
      `unanswered sends; ${requests.replayed} final answers were replays of a committed first try`,
  );
  print(
    `transfers (incl. mints): ${transfers.acknowledged} acknowledged, ${transfers.found} found by id, ` +
      `${transfers.events} newTransfer events; ${transfers.missingEvents.length} without event, ` +
      `${transfers.unacknowledged.length} unacknowledged, ${transfers.duplicateEvents.length} with duplicate events; ` +
      `wallet histories ${transfers.walletsChecked - transfers.walletHistoryMismatches.length}/${transfers.walletsChecked} exact`,
  );
  print(
    `prices: ${prices.acknowledged} acknowledged, ${prices.events} priceUpdate events (${prices.missing} missing, ${prices.extra} extra)`,
  );
  table(
    ['currency', 'totalSupply', 'expected', 'sum of balances', 'holders', 'negative', 'balance mismatches'],
    findings.supplies.map((supply) => [
      supply.currency,
      String(supply.totalSupply),
      String(supply.expectedSupply),
      String(supply.sumOfBalances),
      supply.holders,
      supply.negativeBalances,
      supply.balanceMismatches,
    ]),
  );
  table(
    [
      'subscriber',
      'expected',
      'received',
      'gaps',
      'duplicates',
      'out of order',
      'unexpected',
      'resumes',
      'slow handshakes',
    ],
    findings.subscribers.map((subscriber) => [
      subscriber.name,
      subscriber.expected,
      subscriber.received,
      subscriber.gaps,
      subscriber.duplicates,
      subscriber.outOfOrder,
      subscriber.unexpected,
      subscriber.resumes,
      subscriber.slowHandshakes,
    ]),
  );
  if (report.failures.length === 0) print('verdict: PASS (nothing lost, duplicated or broken)');
  else for (const failure of report.failures) print(`FAIL: ${failure}`);
}
