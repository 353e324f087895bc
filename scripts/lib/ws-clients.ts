// Many WebSocket clients in this process: opened a bounded number at a time, each subscribed to every
// event kind, closed together. Unexpected closes are counted by code (4008 = slow consumer).
import WebSocket from 'ws';
import { forEachLimit } from './concurrency.ts';
import { connectLean, type LeanHandlers, type LeanWebSocket } from './lean-ws.ts';
import { openFilesLimit } from './proc.ts';

/** The WebSocket client of the load generators: `lean` (lean-ws.ts) or `ws` (the library). */
export type WsClientKind = 'lean' | 'ws';

const HANDSHAKES_IN_FLIGHT = 100;

export interface ClientFleet {
  sockets: LeanWebSocket[];
  /** Closes that we did not ask for, by close code. */
  unexpectedCloses: Map<number, number>;
  /** Sends `subscribe` (all event kinds, live) on every socket and waits for every `subscribed`. */
  subscribeAll(): Promise<void>;
  closeAll(): Promise<void>;
}

const SUBSCRIBED = Buffer.from('"type":"subscribed"');

/**
 * The `ws` client library behind the lean client's interface, to compare the two in one run
 * (`--ws-client ws`).
 */
async function connectWs(
  url: string,
  headers: Record<string, string>,
  handlers: LeanHandlers,
): Promise<LeanWebSocket> {
  // perMessageDeflate off: the load generator should not spend its CPU inflating frames.
  const ws = new WebSocket(url, { headers, perMessageDeflate: false, skipUTF8Validation: true });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_request, response) =>
      reject(new Error(`handshake refused: ${response.statusCode}`)),
    );
    ws.once('error', reject);
  });
  ws.on('error', () => {}); // a close follows
  ws.on('close', (code) => handlers.close(code));
  ws.on('message', (data: Buffer) => handlers.message(data, 0, data.length));
  return {
    send: (text) => ws.send(text),
    terminate: () => ws.terminate(),
    get closed() {
      return ws.readyState === WebSocket.CLOSED;
    },
  };
}

/**
 * Opens `count` sockets to `url` (lean clients, see lean-ws.ts, unless `client` is 'ws');
 * `onMessage` sees every message after the first `subscribed`, as the received bytes
 * `data[start..end)` (UTF-8 JSON, valid during the call only): decoding and validating hundreds of
 * thousands of messages a second would be the load generator's own cost, added to every latency it
 * measures.
 */
export async function openClients(
  url: string,
  count: number,
  headers: Record<string, string>,
  options: {
    onMessage?: (data: Buffer, start: number, end: number) => void;
    client?: WsClientKind;
  } = {},
): Promise<ClientFleet> {
  const { onMessage = () => {}, client = 'lean' } = options;
  const connect = client === 'ws' ? connectWs : connectLean;
  const limit = openFilesLimit();
  if (count + 200 > limit) {
    throw new Error(
      `${count} sockets need more open files than this process may have (${limit}): raise ulimit -n`,
    );
  }
  const sockets: LeanWebSocket[] = [];
  const unexpectedCloses = new Map<number, number>();
  const subscribed = new Set<LeanWebSocket>();
  let closing = false;
  let wakeSubscribers = () => {};

  await forEachLimit(Array.from({ length: count }), HANDSHAKES_IN_FLIGHT, async () => {
    // No compression is offered: the load generator should not spend its CPU inflating frames.
    let ws: LeanWebSocket | null = null;
    ws = await connect(url, headers, {
      message(data, start, end) {
        if (ws === null) return; // nothing is sent before the subscription
        if (!subscribed.has(ws)) {
          if (data.subarray(start, end).includes(SUBSCRIBED)) {
            subscribed.add(ws);
            if (subscribed.size === sockets.length) wakeSubscribers();
          }
          return;
        }
        onMessage(data, start, end);
      },
      close(code) {
        if (!closing) unexpectedCloses.set(code, (unexpectedCloses.get(code) ?? 0) + 1);
      },
    });
    sockets.push(ws);
  });

  return {
    sockets,
    unexpectedCloses,
    async subscribeAll() {
      const all = new Promise<void>((resolve, reject) => {
        wakeSubscribers = resolve;
        setTimeout(
          () =>
            reject(
              new Error(`only ${subscribed.size} of ${sockets.length} subscriptions acknowledged in 120 s`),
            ),
          120_000,
        ).unref();
      });
      const subscribe = JSON.stringify({ type: 'subscribe' });
      for (const ws of sockets) ws.send(subscribe);
      await all;
    },
    async closeAll() {
      closing = true;
      for (const ws of sockets) ws.terminate();
    },
  };
}
