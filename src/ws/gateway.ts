// The WebSocket gateway for /ws and /assets/subscribe (AsyncAPI contract): the upgrade (admission by
// handshake.ts, credentials by credentials.ts), the connections, their client messages (rate-limited
// here, answered by subscriptions.ts) and the live events of this instance's relay (a sink wired in
// src/after-commit.ts), handed to every connection (connection.ts writes them; replay.ts serves
// resumes; heartbeat.ts pings).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Config } from '../config/index.ts';
import type { PublishedEvent } from '../events/filter.ts';
import type { EventStore } from '../events/store.ts';
import type { OutboxTail } from '../events/tail.ts';
import type { Logger } from '../observability/logger.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { RedisLink } from '../redis/link.ts';
import { CLOSE, Connection } from './connection.ts';
import type { UpgradeCredentials } from './credentials.ts';
import { type Admission, Handshake, refuse, shuttingDown } from './handshake.ts';
import { beat } from './heartbeat.ts';
import { MESSAGE_BURST, MESSAGE_RATE } from './message-rate.ts';
import { type MessageParser, ProtocolError } from './protocol.ts';
import { Replayer } from './replay.ts';
import { Subscriptions } from './subscriptions.ts';

export interface GatewayDeps extends UpgradeCredentials {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  store: EventStore;
  tail: OutboxTail;
  parser: MessageParser;
  /** Redis (REDIS_URL), for the connection cap across instances. */
  redis?: RedisLink;
}

export class Gateway {
  private readonly wss: WebSocketServer;
  private readonly connections = new Set<Connection>();
  private readonly handshake: Handshake;
  private readonly subscriptions: Subscriptions;
  private connectionsMade = 0;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly deps: GatewayDeps;
  private closing = false;

  constructor(deps: GatewayDeps) {
    this.deps = deps;
    this.handshake = new Handshake(deps.config, deps.logger, deps.authenticate, deps.redis);
    this.subscriptions = new Subscriptions({
      config: deps.config.ws,
      logger: deps.logger,
      tail: deps.tail,
      replayer: new Replayer(deps.store, deps.tail, deps.config.ws),
    });
    // Frames up to 4x the limit are read so the client gets a `message_too_large` error first;
    // larger ones are cut off by ws itself with 1009.
    // No compression: live events are written as ready-made frames (see connection.ts).
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: deps.config.ws.maxMessageBytes * 4,
      perMessageDeflate: false,
    });
    this.heartbeat = setInterval(
      () => void beat(this.connections, deps.stillValid),
      deps.config.ws.heartbeatMs,
    );
    this.heartbeat.unref();
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Handles an HTTP upgrade on the server; answers plain HTTP errors for refused handshakes. */
  async handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    if (this.closing) {
      refuse(socket, shuttingDown());
      return;
    }
    const admission = await this.handshake.admit(request, socket);
    if (!admission) return;
    if (this.closing || socket.destroyed) {
      // Shut down, or the client left, while the checks waited.
      admission.release();
      refuse(socket, shuttingDown());
      return;
    }
    // The reservation is given back when the connection closes, or here if the handshake never completes.
    let accepted = false;
    const abandoned = () => {
      if (!accepted) admission.release();
    };
    socket.once('close', abandoned);
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      accepted = true;
      socket.off('close', abandoned);
      this.accept(ws, socket, admission);
    });
  }

  /** Graceful shutdown: tell every client to reconnect elsewhere (1001) and resume. */
  close(): void {
    this.closing = true;
    clearInterval(this.heartbeat);
    for (const connection of this.connections) connection.end(CLOSE.goingAway, 'server shutting down');
    this.wss.close();
    void this.handshake.close();
  }

  private accept(ws: WebSocket, socket: Duplex, admission: Admission): void {
    const connection = new Connection(ws, socket, admission, ++this.connectionsMade, this.deps.config.ws);
    this.connections.add(connection);
    this.deps.metrics.wsConnections.inc();
    ws.on('pong', () => {
      connection.alive = true;
    });
    ws.on('message', (data, isBinary) => this.receive(connection, data as Buffer, isBinary));
    ws.on('close', () => {
      connection.closed = true;
      this.connections.delete(connection);
      admission.release();
      this.deps.metrics.wsConnections.dec();
    });
    ws.on('error', (error) => this.deps.logger.debug({ err: error }, 'websocket error'));
  }

  private receive(connection: Connection, data: Buffer, isBinary: boolean): void {
    const { maxMessageBytes } = this.deps.config.ws;
    if (data.length > maxMessageBytes) {
      connection.error(
        'message_too_large',
        `Messages are limited to ${maxMessageBytes} bytes; this one has ${data.length}.`,
        null,
      );
      connection.end(CLOSE.messageTooBig, 'message too large');
      return;
    }
    const verdict = connection.rate.take();
    if (verdict === 'close') {
      connection.end(CLOSE.policyViolation, 'message rate limit exceeded');
      return;
    }
    if (verdict === 'refuse') {
      connection.error(
        'rate_limited',
        `At most ${MESSAGE_RATE} messages per second (bursts of ${MESSAGE_BURST}).`,
        null,
      );
      return;
    }
    // One message at a time: answers keep the order of the requests, and the checks of a subscribe
    // (subscription limit, resume point), which wait on the database, cannot interleave with
    // another subscribe's. A replay runs on its own, so it never holds up later messages.
    connection.queue = connection.queue.then(() => this.process(connection, data, isBinary));
  }

  private async process(connection: Connection, data: Buffer, isBinary: boolean): Promise<void> {
    if (connection.closed) return;
    try {
      if (isBinary) throw new ProtocolError('invalid_message', 'Messages are JSON text frames.');
      const message = this.deps.parser.parse(connection.channel, data.toString('utf8'));
      await this.subscriptions.handle(connection, message);
    } catch (error) {
      if (error instanceof ProtocolError) {
        connection.error(error.code, error.message, error.requestId, error.extra);
      } else {
        this.deps.logger.error({ err: error }, 'websocket message failed');
        connection.error('invalid_message', 'The message could not be processed.', null);
      }
    }
  }

  /** The relay's sink (src/after-commit.ts): live events to every connection, until the gateway closes. */
  dispatch(events: readonly PublishedEvent[]): void {
    if (this.closing) return;
    for (const connection of this.connections) connection.offer(events);
  }
}
