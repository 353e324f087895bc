// The metrics reference (docs/reference/metrics.md) cannot drift from what the service exposes: a running app,
// with Redis on each database the suite runs on, serves at /metrics only metrics of the reference's
// registry (scripts/lib/metrics-docs.ts, whose table `npm run gen:check` holds docs/reference/metrics.md to),
// each with the reference's type and labels.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentedMetrics } from '../../scripts/lib/metrics-docs.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Name -> { type, labels } of a text exposition (histogram series folded into their metric). */
function exposed(text: string): Map<string, { type: string; labels: Set<string> }> {
  const metrics = new Map<string, { type: string; labels: Set<string> }>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm))
    metrics.set(name, { type, labels: new Set() });
  for (const [, series, labels] of text.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? /gm)) {
    const metric = metrics.get(series) ?? metrics.get(series.replace(/_(bucket|sum|count)$/, ''));
    for (const [, label] of (labels ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g))
      if (label !== 'le') metric?.labels.add(label);
  }
  return metrics;
}

describe.each(DB_KINDS)('the metrics reference on %s', (kind) => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp(kind, {
      REDIS_URL,
      REDIS_KEY_PREFIX: `metrics-ref-${randomBytes(4).toString('hex')}:`,
    });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('lists every metric /metrics serves, with its type and labels', async () => {
    await app.http('GET', '/healthz');
    const response = await app.http<string>('GET', '/metrics');
    expect(response.status).toBe(200);
    const reference = new Map((await documentedMetrics()).map((metric) => [metric.name, metric]));
    const served = exposed(response.text);
    expect(served.size).toBeGreaterThan(20);
    for (const [name, metric] of served) {
      const documented = reference.get(name);
      expect(documented, `${name} is served but not in docs/reference/metrics.md`).toBeDefined();
      expect(metric.type, name).toBe(documented?.type);
      for (const label of metric.labels) expect(documented?.labels, `${name}{${label}}`).toContain(label);
    }
  });
});
