// A TCP proxy between the service and PostgreSQL or Redis that tests and `npm run chaos` drive to make
// faults without touching the shared servers: pause (stop forwarding, connections stay open: a
// dependency that hangs), cut (reset every open connection: backends terminated, a restart), refuse
// (reset every connection and every new one until healed: the server is down), then heal.
// Hand-written (node:net, ~100 lines): the npm options (toxiproxy's client) need a separate Go server.
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

export interface FaultProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  /** `url` with its host and port replaced by the proxy's (`postgres://…`, `redis://…`). */
  via(url: string): string;
  /** Stops forwarding in both directions; connections (and new ones) stay open but silent. */
  pause(): void;
  /** Resets every open connection; new ones are accepted as usual. */
  cut(): void;
  /** Resets every open connection and every new one until `heal()`: the server is down. */
  refuse(): void;
  /** Back to forwarding everything (data held during a pause is delivered). */
  heal(): void;
  /** Connections open through the proxy now. */
  readonly open: number;
  close(): Promise<void>;
}

type Mode = 'forward' | 'paused' | 'refusing';

export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  let mode: Mode = 'forward';
  const pairs = new Set<[Socket, Socket]>();

  const server: Server = createServer((client) => {
    if (mode === 'refusing') {
      client.resetAndDestroy();
      return;
    }
    const upstream = tcpConnect(target.port, target.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      from.setNoDelay(true);
      // No pipe(): it resumes a paused source on 'drain', and a pause must hold.
      from.on('data', (chunk) => to.write(chunk));
      from.on('error', end);
      from.on('close', end);
      if (mode === 'paused') from.pause();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;

  const resetAll = () => {
    for (const [client, upstream] of pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    pairs.clear();
  };

  return {
    port,
    via(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.href;
    },
    pause() {
      mode = 'paused';
      for (const pair of pairs) for (const socket of pair) socket.pause();
    },
    cut() {
      resetAll();
    },
    refuse() {
      mode = 'refusing';
      resetAll();
    },
    heal() {
      mode = 'forward';
      for (const pair of pairs) for (const socket of pair) socket.resume();
    },
    get open() {
      return pairs.size;
    },
    async close() {
      resetAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
