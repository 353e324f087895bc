// A real WebSocket client for tests: every message the server sends is checked against the AsyncAPI
// contract before the test sees it.
import WebSocket from 'ws';
import { type ServerMessage, validateServerMessage } from '../../scripts/lib/server-messages.ts';
import { assertProblemDocumented, channelProblemTypes } from './contract.ts';

export type { ServerMessage };

export interface TestSocket {
  ws: WebSocket;
  messages: ServerMessage[];
  send(message: unknown): void;
  /** Resolves with the first message (from the start of the connection) matching `predicate` that was not taken before. */
  next(predicate?: (message: ServerMessage) => boolean, timeoutMs?: number): Promise<ServerMessage>;
  /** Resolves once `count` messages matching `predicate` have arrived (all of them, in order). */
  collect(
    count: number,
    predicate: (message: ServerMessage) => boolean,
    timeoutMs?: number,
  ): Promise<ServerMessage[]>;
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

export async function connect(url: string, headers: Record<string, string> = {}): Promise<TestSocket> {
  const ws = new WebSocket(url, { headers });
  const messages: ServerMessage[] = [];
  const taken = new Set<ServerMessage>();
  const waiters: (() => void)[] = [];
  const violations: Error[] = [];
  ws.on('message', (data) => {
    const message = JSON.parse(String(data)) as ServerMessage;
    try {
      validateServerMessage(message);
    } catch (error) {
      violations.push(error as Error);
    }
    messages.push(message);
    for (const wake of waiters.splice(0)) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.on('close', (code, reason) => {
      resolve({ code, reason: String(reason) });
      for (const wake of waiters.splice(0)) wake();
    });
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    // A refused upgrade's problem must be one the channel documents (its `x-problem-types`).
    ws.once('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const status = response.statusCode ?? 0;
        const text = Buffer.concat(chunks).toString('utf8');
        const where = `WebSocket handshake ${new URL(url).pathname} -> ${status}`;
        let problem: unknown;
        try {
          if (!/^application\/problem\+json/.test(response.headers['content-type'] ?? ''))
            throw new Error(`${where}: not application/problem+json: ${text}`);
          problem = JSON.parse(text);
          assertProblemDocumented(where, status, problem, channelProblemTypes(new URL(url).pathname));
        } catch (violation) {
          reject(violation);
          return;
        }
        reject(Object.assign(new Error(`handshake refused: ${status}`), { status, problem }));
      });
    });
    ws.once('error', reject);
  });

  function check(): void {
    if (violations.length > 0) throw violations[0];
  }

  async function waitFor<T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      check();
      const found = probe();
      if (found !== undefined) return found;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`timed out waiting for ${what}; received: ${JSON.stringify(messages.slice(-5))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  return {
    ws,
    messages,
    send(message) {
      ws.send(typeof message === 'string' ? message : JSON.stringify(message));
    },
    next(predicate = () => true, timeoutMs = 5000) {
      return waitFor(
        () => {
          const found = messages.find((message) => !taken.has(message) && predicate(message));
          if (found) taken.add(found);
          return found;
        },
        timeoutMs,
        'a matching message',
      );
    },
    collect(count, predicate, timeoutMs = 10_000) {
      return waitFor(
        () => {
          const found = messages.filter(predicate);
          return found.length >= count ? found : undefined;
        },
        timeoutMs,
        `${count} matching messages`,
      );
    },
    closed,
    close() {
      ws.close();
    },
  };
}
