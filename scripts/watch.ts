// Watch a wallet (or everything) live from the command line:
//   npm run watch -- --user alice --password alice-demo-password [--wallet 0x...] [--asset gold]
//                    [--events newTransfer,priceUpdate] [--url http://localhost:3000]
// Logs in, creates an API key for the session, subscribes on /ws and prints every event. When the
// connection drops it reconnects and resumes with lastEventId, so nothing is missed; Ctrl-C revokes
// the key and exits.
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.GATS_URL ?? 'http://localhost:3000' },
    user: { type: 'string' },
    password: { type: 'string' },
    wallet: { type: 'string' },
    asset: { type: 'string' },
    collection: { type: 'string' },
    events: { type: 'string' },
  },
});
if (!values.user || !values.password) {
  process.stderr.write(
    'usage: npm run watch -- --user NAME --password PASSWORD [--wallet 0x..] [--asset ID]\n',
  );
  process.exit(2);
}
const base = values.url as string;

async function call<T>(
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<T> {
  const response = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

const login = await call<{ access_token: string }>('POST', '/api/v1/auth/login', {
  username: values.user,
  password: values.password,
});
const bearer = { authorization: `Bearer ${login.access_token}` };
const apiKey = await call<{ id: string; key: string }>(
  'POST',
  '/api/v1/api-keys',
  { name: 'watch (cli)' },
  bearer,
);
const credentials = { ...bearer, 'x-api-key': apiKey.key };

let lastEventId: string | undefined;
let stopping = false;

function open(): void {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws`, { headers: credentials });
  ws.on('open', () => {
    const subscribe: Record<string, unknown> = { type: 'subscribe', requestId: 'watch' };
    if (values.wallet) subscribe.walletId = values.wallet;
    if (values.asset) subscribe.assetId = values.asset;
    if (values.collection) subscribe.collection = values.collection;
    if (values.events) subscribe.events = values.events.split(',');
    if (lastEventId) subscribe.lastEventId = lastEventId;
    ws.send(JSON.stringify(subscribe));
  });
  ws.on('message', (data) => {
    const message = JSON.parse(String(data)) as { type: string; id?: string; data?: unknown };
    if (message.id && 'subscriptionIds' in message) lastEventId = message.id; // an event, of any type
    process.stdout.write(`${JSON.stringify(message)}\n`);
  });
  ws.on('close', (code, reason) => {
    if (stopping) return;
    process.stderr.write(
      `connection closed (${code} ${String(reason)}); resuming after ${lastEventId ?? 'now'}\n`,
    );
    setTimeout(open, 1000);
  });
  ws.on('error', (error) => process.stderr.write(`${error.message}\n`));
}

process.on('SIGINT', async () => {
  stopping = true;
  await call('DELETE', `/api/v1/api-keys/${apiKey.id}`, undefined, bearer).catch(() => undefined);
  process.exit(0);
});
open();
