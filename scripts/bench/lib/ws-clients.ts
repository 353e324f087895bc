// Many WebSocket clients in this process: opened a bounded number at a time, each subscribed to every
// event kind, closed together. Unexpected closes are counted by code (4008 = slow consumer).
import WebSocket from 'ws';
import { forEachLimit } from './concurrency.ts';
import { openFilesLimit } from './proc.ts';

const HANDSHAKES_IN_FLIGHT = 100;

export interface ClientFleet {
  sockets: WebSocket[];
  /** Closes that we did not ask for, by close code. */
  unexpectedCloses: Map<number, number>;
  /** Sends `subscribe` (all event kinds, live) on every socket and waits for every `subscribed`. */
  subscribeAll(): Promise<void>;
  closeAll(): Promise<void>;
}

const SUBSCRIBED = Buffer.from('"type":"subscribed"');

/**
 * Opens `count` sockets to `url`; `onMessage` sees every message after the first `subscribed`, as the
 * received bytes (UTF-8 JSON): decoding and validating hundreds of thousands of messages a second
 * would be the load generator's own cost, added to every latency it measures.
 */
export async function openClients(
  url: string,
  count: number,
  headers: Record<string, string>,
  onMessage: (data: Buffer) => void = () => {},
): Promise<ClientFleet> {
  const limit = openFilesLimit();
  if (count + 200 > limit) {
    throw new Error(
      `${count} sockets need more open files than this process may have (${limit}): raise ulimit -n`,
    );
  }
  const sockets: WebSocket[] = [];
  const unexpectedCloses = new Map<number, number>();
  const subscribed = new Set<WebSocket>();
  let closing = false;
  let wakeSubscribers = () => {};

  await forEachLimit(Array.from({ length: count }), HANDSHAKES_IN_FLIGHT, async () => {
    // perMessageDeflate off: the load generator should not spend its CPU inflating frames.
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, skipUTF8Validation: true });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_request, response) =>
        reject(new Error(`handshake refused: ${response.statusCode}`)),
      );
      ws.once('error', reject);
    });
    ws.on('error', () => {}); // a close follows; counted there
    ws.on('close', (code) => {
      if (!closing) unexpectedCloses.set(code, (unexpectedCloses.get(code) ?? 0) + 1);
    });
    ws.on('message', (data: Buffer) => {
      if (!subscribed.has(ws) && data.includes(SUBSCRIBED)) {
        subscribed.add(ws);
        if (subscribed.size === sockets.length) wakeSubscribers();
        return;
      }
      onMessage(data);
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
      await forEachLimit(sockets, HANDSHAKES_IN_FLIGHT, async (ws) => {
        await new Promise<void>((resolve, reject) =>
          ws.send(JSON.stringify({ type: 'subscribe' }), (error) => (error ? reject(error) : resolve())),
        );
      });
      await all;
    },
    async closeAll() {
      closing = true;
      await Promise.all(
        sockets.map(
          (ws) =>
            new Promise<void>((resolve) => {
              if (ws.readyState === WebSocket.CLOSED) return resolve();
              ws.once('close', () => resolve());
              ws.terminate();
            }),
        ),
      );
    },
  };
}
