// The campaign's figures as text: requests per operation with their statuses, the status histogram,
// the mutations tried, and each 5xx or contract violation with the request that caused it.
import type { CampaignReport, Finding } from './campaign.ts';

const histogram = (counts: Map<number | string, number>): string =>
  [...counts.entries()]
    .sort(([a], [b]) => String(a).localeCompare(String(b)))
    .map(([key, count]) => `${key}×${count}`)
    .join(' ');

const clip = (text: string, length: number): string =>
  text.length > length ? `${text.slice(0, length)}… (${text.length} chars)` : text;

function describe(finding: Finding): string {
  const { request } = finding;
  const body =
    request.body === undefined
      ? ''
      : typeof request.body === 'string'
        ? clip(request.body, 400)
        : `<${request.body.length} bytes: ${Buffer.from(request.body).toString('hex').slice(0, 80)}>`;
  return [
    `  ${request.operationId} [${request.mutation}] ${request.method} ${clip(request.url, 200)} -> ${finding.status}`,
    `    headers: ${clip(JSON.stringify(request.headers), 300)}`,
    body ? `    body: ${body}` : '',
    `    ${clip(finding.message, 600)}`,
  ]
    .filter(Boolean)
    .join('\n');
}

/** Findings grouped by operation, mutation and first line of the message: one example of each. */
function distinct(findings: Finding[]): Finding[] {
  const seen = new Map<string, Finding>();
  for (const finding of findings) {
    const key = `${finding.request.operationId} ${finding.status} ${finding.message.split(':').slice(0, 2).join(':')}`;
    if (!seen.has(key)) seen.set(key, finding);
  }
  return [...seen.values()];
}

export function formatReport(report: CampaignReport, limit = 15): string {
  const width = Math.max(...[...report.perOperation.keys()].map((id) => id.length));
  const lines = [
    `Contract fuzzing: ${report.requests} requests in ${(report.durationMs / 1000).toFixed(1)} s (seed ${report.seed})`,
    '',
    'Requests per operation (status×count):',
    ...[...report.perOperation.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([id, counts]) => {
        const total = [...counts.values()].reduce((sum, count) => sum + count, 0);
        return `  ${id.padEnd(width)} ${String(total).padStart(5)}  ${histogram(counts)}`;
      }),
    '',
    `Statuses: ${histogram(report.statuses)}`,
    `Mutations: ${histogram(report.mutations)}`,
    '',
    `5xx responses: ${report.serverErrors.length}`,
    ...distinct(report.serverErrors).slice(0, limit).map(describe),
    `Contract violations: ${report.violations.length}`,
    ...distinct(report.violations).slice(0, limit).map(describe),
    `GET /readyz afterwards: ${report.readiness}`,
    `Ledger invariants afterwards: ${report.invariants.length === 0 ? 'hold' : report.invariants.join('; ')}`,
  ];
  return lines.join('\n');
}

/** True when the run found nothing wrong. */
export function passed(report: CampaignReport): boolean {
  return (
    report.serverErrors.length === 0 &&
    report.violations.length === 0 &&
    report.readiness === 200 &&
    report.invariants.length === 0
  );
}
