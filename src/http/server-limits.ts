// The HTTP server below Koa, with the limits that protect it from slow and oversized clients: a
// client that trickles its headers or body (slowloris) is answered 408 and disconnected, a request
// head larger than `maxHeaderSize` is answered 431. src/server.ts and the security tests build their
// servers here, so the tests prove what production runs.
import { createServer, type RequestListener, type Server } from 'node:http';

export interface ServerLimits {
  /** Time a client has to send the complete request head. */
  headersTimeoutMs: number;
  /** Time a client has to send the complete request (head and body). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
  /** Largest request head (request line and headers), in bytes. */
  maxHeaderSize: number;
  maxHeadersCount: number;
  /**
   * How often the two time-outs above are checked. Node's default (30 s) would let a slow client
   * hold its connection up to that much longer than the time-out says.
   */
  connectionsCheckingIntervalMs: number;
}

export const DEFAULT_SERVER_LIMITS: Readonly<ServerLimits> = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxHeaderSize: 16 * 1024,
  maxHeadersCount: 100,
  connectionsCheckingIntervalMs: 1_000,
};

export function createHttpServer(
  listener: RequestListener,
  limits: ServerLimits = DEFAULT_SERVER_LIMITS,
): Server {
  const server = createServer(
    {
      maxHeaderSize: limits.maxHeaderSize,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: limits.connectionsCheckingIntervalMs,
    },
    listener,
  );
  server.maxHeadersCount = limits.maxHeadersCount;
  return server;
}
