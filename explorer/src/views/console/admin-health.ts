// The deployment's health in words: what GET /readyz says (database, Redis, shutdown, chains), and,
// when this listener serves it, a few lines read from GET /metrics (it moves to the management port
// when MANAGEMENT_PORT is set, and is then out of the browser's reach: said so).
import { problemOf } from '../../api/problem.ts';
import { h, replace, skeleton } from '../../ui/dom.ts';
import { formatTime } from '../../ui/format.ts';
import { problemBox } from '../../ui/problem-view.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { consolePage, panel } from './frame.ts';

type Samples = Map<string, number>;

/** Prometheus text format 0.0.4: `name{labels} value` lines; sums the samples of each name. */
export function sumSamples(text: string): Samples {
  const sums: Samples = new Map();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const value = Number(match[3]);
    if (Number.isFinite(value)) sums.set(match[1], (sums.get(match[1]) ?? 0) + value);
  }
  return sums;
}

function duration(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} seconds`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} minutes`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} hours`;
  return `${Math.round(seconds / 86400)} days`;
}

function metricWords(samples: Samples): string[] {
  const lines: string[] = [];
  const started = samples.get('process_start_time_seconds');
  if (started)
    lines.push(
      `This instance started ${formatTime(new Date(started * 1000).toISOString())} (up ${duration(Date.now() / 1000 - started)}).`,
    );
  const requests = samples.get('http_requests_total');
  if (requests !== undefined) lines.push(`It has answered ${requests.toLocaleString()} HTTP requests since.`);
  const memory = samples.get('process_resident_memory_bytes');
  if (memory) lines.push(`It uses ${Math.round(memory / 1048576)} MiB of memory.`);
  const sockets = samples.get('ws_connections');
  if (sockets !== undefined) lines.push(`${sockets} WebSocket connections are open.`);
  const published = samples.get('events_published_total');
  if (published !== undefined)
    lines.push(`The outbox relay has published ${published.toLocaleString()} events.`);
  const readAge = samples.get('events_relay_read_age_seconds');
  if (readAge !== undefined)
    lines.push(
      readAge > 30
        ? `The relay last read the outbox ${duration(readAge)} ago: events are late.`
        : 'The relay reads the outbox on time.',
    );
  const redis = samples.get('redis_up');
  if (redis !== undefined)
    lines.push(
      redis === 1
        ? 'Redis is usable.'
        : 'Redis is away: rate limits and tickets are per instance until it returns.',
    );
  const backlog = samples.get('webhook_backlog');
  if (backlog !== undefined)
    lines.push(`${backlog} webhook deliveries are outstanding (pending or given up).`);
  const lag = samples.get('nodejs_eventloop_lag_p99_seconds');
  if (lag !== undefined)
    lines.push(
      `Event loop delay (p99): ${Math.round(lag * 1000)} ms${lag > 0.2 ? ': the instance is overloaded.' : '.'}`,
    );
  return lines;
}

export function healthView(ctx: ViewContext): Cleanup {
  const readiness = h('div', { 'data-testid': 'readiness' }, skeleton('line', 3));
  const metrics = h('div', { 'data-testid': 'metrics' }, skeleton('line', 4));
  if (
    !consolePage(
      ctx,
      'admin',
      'Health',
      panel('readiness', 'Readiness (/readyz)', readiness),
      panel('metrics', 'Metrics (/metrics)', metrics),
    )
  )
    return () => undefined;

  void (async () => {
    try {
      // 503 carries the same body: read it either way.
      const result = await ctx.session.api.GET('/readyz', { signal: ctx.signal });
      const status = result.data ?? (result.error as unknown as typeof result.data);
      if (!status || typeof status !== 'object' || !('checks' in status))
        throw result.error ?? new Error(`/readyz answered ${result.response.status}`);
      const checks = status.checks;
      const lines = [
        status.status === 'ok'
          ? 'Ready: this instance takes traffic.'
          : 'Not ready: a load balancer should send it no traffic.',
        checks.database === 'ok'
          ? 'The database answers.'
          : 'The database does not answer (requests get 503 until it returns).',
        checks.redis === undefined
          ? 'No Redis configured (one instance, in-process events).'
          : checks.redis === 'ok'
            ? 'Redis answers.'
            : 'Redis is away: per-instance fallbacks in use.',
        checks.shutdown ? 'The instance is shutting down.' : null,
        ...(status.chains ?? []).map(
          (chain) =>
            `Chain ${chain.chainId}: ${chain.state}${chain.head === null ? '' : `, head block ${chain.head}, indexed ${chain.indexedBlock ?? '—'} (${chain.lag ?? '?'} behind)`}.`,
        ),
      ];
      replace(
        readiness,
        h(
          'p',
          {},
          h(
            'span',
            { class: `badge ${status.status === 'ok' ? 'good' : 'bad'}` },
            status.status === 'ok' ? 'Ready' : 'Not ready',
          ),
        ),
        h(
          'ul',
          {},
          lines.filter((line) => line !== null).map((line) => h('li', {}, line)),
        ),
      );
    } catch (error) {
      if (!ctx.signal.aborted) replace(readiness, problemBox(problemOf(error)));
    }
  })();

  void (async () => {
    try {
      const response = await fetch('/metrics', { signal: ctx.signal });
      if (response.status === 404) {
        replace(
          metrics,
          h(
            'p',
            {},
            'Not served on this address: the deployment serves /metrics on its management port (MANAGEMENT_PORT), for Prometheus, out of the browser’s reach.',
          ),
        );
        return;
      }
      if (!response.ok) throw new Error(`/metrics answered ${response.status}.`);
      const lines = metricWords(sumSamples(await response.text()));
      replace(
        metrics,
        h(
          'ul',
          {},
          lines.map((line) => h('li', {}, line)),
        ),
        h(
          'p',
          { class: 'muted small' },
          'Public on this listener (no credentials needed): restrict it at the network edge or move it with MANAGEMENT_PORT.',
        ),
      );
    } catch (error) {
      if (!ctx.signal.aborted) replace(metrics, problemBox(problemOf(error)));
    }
  })();
  return () => undefined;
}
