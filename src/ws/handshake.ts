// The checks of a WebSocket upgrade before it is accepted, in order: the channel, the browser's
// Origin, the credentials, and the connection caps per API key and per user. A refused upgrade is
// answered with a plain HTTP problem+json response and no WebSocket.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { components } from '../../generated/openapi/types.ts';
import type { AuthContext } from '../auth/caller.ts';
import type { Config } from '../config/index.ts';
import { AppError } from '../domain/errors.ts';
import type { Logger } from '../observability/logger.ts';
import type { RedisLink } from '../redis/link.ts';
import {
  type ConnectionLimiter,
  localConnectionLimiter,
  redisConnectionLimiter,
} from './connection-limit.ts';
import type { Channel } from './protocol.ts';

export interface Admission {
  channel: Channel;
  auth: AuthContext;
  /** The API key (or user, without one) the connection counts against. */
  key: string;
  /** Gives back the connection's place under the caps (call once, when it closes or is abandoned). */
  release(): void;
}

export class Handshake {
  private readonly config: Config['ws'];
  private readonly logger: Logger;
  /** Connections per API key and per user: on this instance, or across instances through Redis (REDIS_URL; per instance while it is away). */
  private readonly limiter: ConnectionLimiter;
  private readonly allowedOrigins: ReadonlySet<string>;
  private readonly authenticate: (request: IncomingMessage, url: URL) => Promise<AuthContext>;

  constructor(
    config: Config,
    logger: Logger,
    authenticate: (request: IncomingMessage, url: URL) => Promise<AuthContext>,
    redis: RedisLink | undefined,
  ) {
    this.config = config.ws;
    this.logger = logger;
    this.authenticate = authenticate;
    this.limiter = redis ? redisConnectionLimiter(redis) : localConnectionLimiter();
    this.allowedOrigins = new Set(config.ws.allowedOrigins);
  }

  /** Runs the checks; on a refusal, answers it on `socket` and returns null. */
  async admit(request: IncomingMessage, socket: Duplex): Promise<Admission | null> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const channel = url.pathname;
    if (!isChannel(channel)) {
      refuse(
        socket,
        new AppError(404, '/problems/route-not-found', {
          detail: `No WebSocket channel at ${url.pathname}.`,
        }),
      );
      return null;
    }
    // A browser always sends Origin on a WebSocket upgrade, and the same-origin policy does not
    // apply to WebSockets: a page elsewhere could open one with the user's ticket or cookies. Clients
    // that are not browsers send no Origin and are not affected. Checked before the credentials, so
    // a refused page does not use up a ticket.
    const origin = request.headers.origin;
    if (origin !== undefined && !this.allowedOrigins.has(origin.toLowerCase())) {
      refuse(
        socket,
        new AppError(403, '/problems/origin-not-allowed', {
          detail: `WebSocket connections from pages at ${JSON.stringify(origin).slice(0, 200)} are not allowed (WS_ALLOWED_ORIGINS).`,
        }),
      );
      return null;
    }
    let auth: AuthContext;
    try {
      auth = await this.authenticate(request, url);
    } catch (error) {
      refuse(
        socket,
        error instanceof AppError
          ? error
          : new AppError(500, '/problems/internal', {
              detail: 'An unexpected error occurred.',
            }),
      );
      if (!(error instanceof AppError)) this.logger.error({ err: error }, 'websocket authentication failed');
      return null;
    }
    const key = auth.apiKeyId ?? auth.userId;
    // 30.6: a service account's connections count against its owner's cap.
    const user = auth.account ?? auth.userId;
    const full = await this.reserve(key, user);
    if (full) {
      refuse(
        socket,
        new AppError(429, '/problems/too-many-connections', {
          detail: full,
          headers: { 'Retry-After': '5' },
        }),
      );
      return null;
    }
    return {
      channel,
      auth,
      key,
      release: () => {
        this.limiter.release(`key:${key}`);
        this.limiter.release(`user:${user}`);
      },
    };
  }

  close(): Promise<void> {
    return this.limiter.close();
  }

  /** Counts a connection against its API key's and its user's caps; the reason when one is full. */
  private async reserve(key: string, user: string): Promise<string | null> {
    const { maxConnectionsPerKey, maxConnectionsPerUser } = this.config;
    if (!(await this.limiter.acquire(`key:${key}`, maxConnectionsPerKey)))
      return `At most ${maxConnectionsPerKey} WebSocket connections per API key.`;
    if (!(await this.limiter.acquire(`user:${user}`, maxConnectionsPerUser))) {
      this.limiter.release(`key:${key}`);
      return `At most ${maxConnectionsPerUser} WebSocket connections per user, whatever the API keys.`;
    }
    return null;
  }
}

export function shuttingDown(): AppError {
  return new AppError(503, '/problems/shutting-down', {
    detail: 'This instance is shutting down; connect again (to another instance) and resume.',
    headers: { 'Retry-After': '1' },
  });
}

/** The channels of the AsyncAPI contract. */
function isChannel(path: string): path is Channel {
  return path === '/ws' || path === '/assets/subscribe';
}

/** Answers a refused upgrade with the problem as a plain HTTP response, and ends the socket. */
export function refuse(socket: Duplex, error: AppError): void {
  if (socket.destroyed) return;
  const problem: components['schemas']['Problem'] = {
    type: error.type,
    title: error.title,
    status: error.status,
    detail: error.detail,
  };
  const body = JSON.stringify(problem);
  const headers = Object.entries(error.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${error.status} ${error.title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n${headers}\r\n${body}`,
  );
}
