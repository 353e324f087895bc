// The benchmarks' lean WebSocket client must speak RFC 6455 as `ws` does, or the fan-out figures
// would measure a broken client: messages of every length form, split across reads and fragmented,
// masking of what it sends, pongs, close codes, and a refused handshake.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { connectLean, type LeanHandlers } from '../../../scripts/lib/lean-ws.ts';

let server: Server;
let wss: WebSocketServer;
let url: string;
let accepted: Promise<WebSocket>;

beforeEach(async () => {
  server = createServer();
  wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    if (request.headers['x-api-key'] !== 'secret') {
      socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws));
  });
  accepted = new Promise((resolve) => wss.once('connection', resolve));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws?x=1`;
});

afterEach(async () => {
  for (const client of wss.clients) client.terminate();
  wss.close();
  server.close();
});

/** Handlers that collect messages (as text) and the close code. */
function collector() {
  const messages: string[] = [];
  let closed: (code: number) => void = () => {};
  const closedWith = new Promise<number>((resolve) => {
    closed = resolve;
  });
  const waiters: { count: number; resolve: () => void }[] = [];
  const handlers: LeanHandlers = {
    message(data, start, end) {
      messages.push(data.toString('utf8', start, end));
      for (const waiter of waiters) if (messages.length >= waiter.count) waiter.resolve();
    },
    close: (code) => closed(code),
  };
  const received = (count: number) =>
    new Promise<void>((resolve) => {
      if (messages.length >= count) resolve();
      else waiters.push({ count, resolve });
    });
  return { messages, handlers, closedWith, received };
}

describe('lean WebSocket client', () => {
  it('receives messages of every length encoding, whole and fragmented, and sends masked text', async () => {
    const { messages, handlers, received } = collector();
    const client = await connectLean(url, { 'X-Api-Key': 'secret' }, handlers);
    const peer = await accepted;
    const short = 'a'.repeat(125);
    const medium = 'é'.repeat(3000); // 16-bit length
    const long = 'x'.repeat(300_000); // 64-bit length, more than one read
    peer.send(short);
    peer.send(medium);
    peer.send(long);
    peer.send('part one, ', { fin: false });
    peer.send('part two', { fin: true });
    await received(4);
    expect(messages).toEqual([short, medium, long, 'part one, part two']);

    const heard: string[] = [];
    peer.on('message', (data) => heard.push(String(data)));
    const sent = ['{"type":"subscribe"}', 'y'.repeat(200), 'z'.repeat(70_000)];
    for (const text of sent) client.send(text);
    await expect.poll(() => heard.length).toBe(3);
    expect(heard).toEqual(sent);
  });

  it('answers pings with the same payload', async () => {
    const { handlers } = collector();
    await connectLean(url, { 'X-Api-Key': 'secret' }, handlers);
    const peer = await accepted;
    const pong = once(peer, 'pong');
    peer.ping(Buffer.from('beat'));
    const [payload] = (await pong) as [Buffer];
    expect(String(payload)).toBe('beat');
  });

  it('reports the close code the server sent and answers the close', async () => {
    const { handlers, closedWith } = collector();
    const client = await connectLean(url, { 'X-Api-Key': 'secret' }, handlers);
    const peer = await accepted;
    const peerClosed = once(peer, 'close');
    peer.close(4008, 'slow consumer');
    expect(await closedWith).toBe(4008);
    const [code] = (await peerClosed) as [number];
    expect(code).toBe(4008);
    expect(client.closed).toBe(true);
  });

  it('reports 1006 when the connection drops without a close frame', async () => {
    const { handlers, closedWith } = collector();
    await connectLean(url, { 'X-Api-Key': 'secret' }, handlers);
    (await accepted).terminate();
    expect(await closedWith).toBe(1006);
  });

  it('joins frames and the handshake answer that arrive a byte at a time', async () => {
    const raw = net.createServer((socket) => {
      socket.setNoDelay(true);
      socket.once('data', async (request) => {
        const key = /sec-websocket-key: (\S+)/i.exec(String(request))?.[1] ?? '';
        const accept = createHash('sha1')
          .update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
          .digest('base64');
        const text = Buffer.from('ü'.repeat(100)); // 200 bytes: a 16-bit length
        const bytes = Buffer.concat([
          Buffer.from(
            `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
          ),
          Buffer.from([0x81, 126, 0, text.length]),
          text,
          Buffer.from([0x81, 2]),
          Buffer.from('ok'),
        ]);
        for (const byte of bytes) {
          socket.write(Buffer.from([byte]));
          await new Promise((resolve) => setImmediate(resolve));
        }
      });
    });
    raw.listen(0, '127.0.0.1');
    await once(raw, 'listening');
    try {
      const { messages, handlers, received } = collector();
      const client = await connectLean(
        `ws://127.0.0.1:${(raw.address() as AddressInfo).port}/`,
        {},
        handlers,
      );
      await received(2);
      expect(messages).toEqual(['ü'.repeat(100), 'ok']);
      client.terminate();
    } finally {
      raw.close();
    }
  });

  it('rejects a refused handshake with its status', async () => {
    const { handlers } = collector();
    await expect(connectLean(url, { 'X-Api-Key': 'wrong' }, handlers)).rejects.toThrow(
      'handshake refused: 401',
    );
  });
});
