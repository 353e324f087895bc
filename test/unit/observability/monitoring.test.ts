// The monitoring files (deploy/monitoring/): the alert rules pass `promtool check rules` and their
// unit tests (`promtool test rules`), and the rules and the Grafana dashboard name only metrics of the
// reference (docs/reference/metrics.md, generated from the registry), while the dashboard shows every metric
// the service itself defines. promtool comes with Debian's `prometheus` package (.ci/run installs it).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { documentedMetrics, metricsTableIsCurrent } from '../../../scripts/lib/metrics-docs.ts';

const run = promisify(execFile);
const MONITORING = path.resolve(import.meta.dirname, '../../../deploy/monitoring');

interface RuleFile {
  groups: { name: string; rules: { alert: string; expr: string }[] }[];
}
const rules = parse(readFileSync(path.join(MONITORING, 'alerts.yaml'), 'utf8')) as RuleFile;
const dashboard = JSON.parse(readFileSync(path.join(MONITORING, 'grafana-dashboard.json'), 'utf8')) as {
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
};
const ruleExpressions = rules.groups.flatMap((group) => group.rules.map((rule) => rule.expr));
const dashboardExpressions = dashboard.panels.flatMap((panel) =>
  (panel.targets ?? []).map((target) => target.expr),
);

/** The metric names a PromQL expression selects (every selector here has a `{...}` matcher). */
function selected(expression: string, histograms: Set<string>): string[] {
  return [...expression.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{/g)].map(([, name]) => {
    const base = name.replace(/_(bucket|sum|count)$/, '');
    return histograms.has(base) ? base : name;
  });
}

async function promtool(args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run('promtool', args, { cwd: MONITORING });
    return stdout + stderr;
  } catch (error) {
    const failure = error as { code?: string; stdout?: string; stderr?: string };
    if (failure.code === 'ENOENT') throw new Error('promtool is missing: apt-get install prometheus');
    throw new Error(`promtool ${args.join(' ')} failed:\n${failure.stdout}${failure.stderr}`);
  }
}

describe('alert rules and dashboard', () => {
  it('pass promtool check rules', async () => {
    expect(await promtool(['check', 'rules', 'alerts.yaml'])).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('fire as their promtool unit tests say', async () => {
    expect(await promtool(['test', 'rules', 'alerts.test.yaml'])).toMatch(/SUCCESS/);
  });

  it('name only metrics the reference lists', async () => {
    const metrics = await documentedMetrics();
    const names = new Set([...metrics.map((metric) => metric.name), 'up']);
    const histograms = new Set(
      metrics.filter((metric) => metric.type === 'histogram').map((metric) => metric.name),
    );
    const unknown = [...ruleExpressions, ...dashboardExpressions]
      .flatMap((expression) => selected(expression, histograms))
      .filter((name) => !names.has(name));
    expect(unknown).toEqual([]);
  });

  it('cover every metric the service defines on the dashboard, and the issue list in the rules', async () => {
    const metrics = await documentedMetrics();
    const histograms = new Set(
      metrics.filter((metric) => metric.type === 'histogram').map((metric) => metric.name),
    );
    const own = metrics.map((metric) => metric.name).filter((name) => !/^(process|nodejs)_/.test(name));
    const shown = new Set(dashboardExpressions.flatMap((expression) => selected(expression, histograms)));
    expect(own.filter((name) => !shown.has(name))).toEqual([]);
    const alerted = new Set(ruleExpressions.flatMap((expression) => selected(expression, histograms)));
    for (const name of [
      'http_requests_total',
      'http_request_duration_seconds',
      'db_pool_waiting_requests',
      'redis_fallbacks_total',
      'ws_connections',
      'events_relay_lag_seconds',
      'events_relay_read_age_seconds',
      'webhook_backlog',
      'webhook_attempts_total',
      'chain_lag_blocks',
      'chain_indexer_paused',
    ])
      expect(alerted, name).toContain(name);
  });

  it('the metrics reference is what the registry gives (npm run gen writes it)', async () => {
    expect(await metricsTableIsCurrent()).toBe(true);
  });
});
