// The HTTP server below Koa, with the limits that protect it from slow and oversized clients: a
// client that trickles its headers or body (slowloris) is answered 408 and disconnected, a request
// head larger than `maxHeaderSize` is answered 431, and a client that stops reading its responses
// is disconnected (13.11: such connections stayed open forever, each holding a response in memory).
// src/server.ts and the security tests build their servers here, so the tests prove what production
// runs.
import { createServer, type RequestListener, type Server } from 'node:http';

export interface ServerLimits {
  /** Time a client has to send the complete request head. */
  headersTimeoutMs: number;
  /** Time a client has to send the complete request (head and body). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
  /**
   * A connection on which no byte moves either way for this long while a request is in progress
   * (typically a client that stopped reading its response) is closed. WebSocket connections are
   * exempt: the ws library clears the socket time-out on upgrade and has its own heartbeat.
   */
  idleTimeoutMs: number;
  /**
   * Response bytes one connection may have waiting for its client to read them (Node's buffer above
   * the kernel's); past this, the connection is closed. Node stops reading pipelined requests while
   * a response waits, so this bounds one connection's memory; it is above the largest response the
   * service sends (the 2.8 MB HTML reference).
   */
  maxUnreadOutputBytes: number;
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
  idleTimeoutMs: 30_000,
  maxUnreadOutputBytes: 4 * 1024 * 1024,
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
  // With no 'timeout' listener, Node destroys a socket that idles past this (socketOnTimeout).
  server.setTimeout(limits.idleTimeoutMs);
  server.on('request', (_request, response) => {
    // Checked after each write lands in the socket's buffer: a response is written in one go or
    // streamed (which waits for the buffer to drain), so unread output grows only by whole writes.
    const check = () => {
      const socket = response.socket;
      if (socket && !socket.destroyed && socket.writableLength > limits.maxUnreadOutputBytes)
        socket.destroy();
    };
    response.on('prefinish', check);
    response.on('finish', check);
  });
  return server;
}
