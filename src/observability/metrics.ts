import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** The Prometheus registry of one app instance (tests build several apps in one process). */
export interface Metrics {
  registry: Registry;
  httpRequestDuration: Histogram<'method' | 'operation' | 'status'>;
  httpRequestsTotal: Counter<'method' | 'operation' | 'status'>;
  wsConnections: Gauge;
  eventsPublished: Counter<'type'>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequestDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by operation',
      labelNames: ['method', 'operation', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    httpRequestsTotal: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by operation and status',
      labelNames: ['method', 'operation', 'status'],
      registers: [registry],
    }),
    wsConnections: new Gauge({
      name: 'ws_connections',
      help: 'Open WebSocket connections',
      registers: [registry],
    }),
    eventsPublished: new Counter({
      name: 'events_published_total',
      help: 'Events published by the outbox relay',
      labelNames: ['type'],
      registers: [registry],
    }),
  };
}
