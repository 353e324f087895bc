import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/observability/metrics.ts';

describe('per-request metrics', () => {
  it('expose a cumulative histogram and a counter per method, operation and status', async () => {
    const metrics = createMetrics();
    for (const seconds of [0.0005, 0.001, 0.003, 3])
      metrics.httpRequests.observe('GET', 'getAsset', 200, seconds);
    metrics.httpRequests.observe('POST', 'createTransfer', 409, 0.02);
    const text = await metrics.registry.metrics();
    const line = (pattern: string) => text.split('\n').find((row) => row.startsWith(pattern));
    const series = 'method="GET",operation="getAsset",status="200"';
    expect(line(`http_request_duration_seconds_bucket{${series},le="0.001"}`)).toMatch(/ 2$/);
    expect(line(`http_request_duration_seconds_bucket{${series},le="0.005"}`)).toMatch(/ 3$/);
    expect(line(`http_request_duration_seconds_bucket{${series},le="2.5"}`)).toMatch(/ 3$/);
    expect(line(`http_request_duration_seconds_bucket{${series},le="+Inf"}`)).toMatch(/ 4$/);
    expect(line(`http_request_duration_seconds_count{${series}}`)).toMatch(/ 4$/);
    expect(Number(line(`http_request_duration_seconds_sum{${series}}`)?.split(' ')[1])).toBeCloseTo(3.0045);
    expect(line(`http_requests_total{${series}}`)).toMatch(/ 4$/);
    expect(line('http_requests_total{method="POST",operation="createTransfer",status="409"}')).toMatch(/ 1$/);
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(text).toContain('# TYPE http_requests_total counter');
  });
});
