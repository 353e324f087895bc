// The baseline every benchmark is compared with: a plain Koa server on the same Node, answering a
// tiny JSON "hello" to every request. For the WebSocket benchmarks it also accepts any WebSocket,
// answers `subscribe` with `subscribed`, and on POST /publish sends the posted JSON, wrapped as a
// `priceUpdate` event, to every socket: the least work a fan-out can do (one serialization, no
// database, no filters), so the service's fan-out can be put beside it.
import { createServer } from 'node:http';
import Koa from 'koa';
import { WebSocketServer } from 'ws';

const app = new Koa();
const wss = new WebSocketServer({ noServer: true });
let nextEventId = 1;

app.use(async (ctx) => {
  if (ctx.method === 'POST' && ctx.path === '/publish') {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    const data = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    const message = JSON.stringify({
      subscriptionIds: ['sub_1'],
      id: String(nextEventId++),
      type: 'priceUpdate',
      occurredAt: new Date().toISOString(),
      data,
    });
    for (const socket of wss.clients) socket.send(message);
    ctx.status = 201;
    ctx.body = data;
    return;
  }
  ctx.body = { hello: 'world' };
});

wss.on('connection', (socket) => {
  socket.on('message', (raw) => {
    const message = JSON.parse(String(raw)) as { type?: string; requestId?: string };
    if (message.type === 'subscribe') {
      socket.send(
        JSON.stringify({ type: 'subscribed', requestId: message.requestId ?? null, subscriptionId: 'sub_1' }),
      );
    }
  });
});

const server = createServer(app.callback());
server.on('upgrade', (request, socket, head) => {
  wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  for (const socket of wss.clients) socket.terminate();
  server.close(() => process.exit(0));
});
