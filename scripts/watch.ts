// Watch a wallet (or everything) live from the command line:
//   npm run watch -- --user alice --password alice-demo-password [--wallet 0x...] [--asset gold]
//                    [--events newTransfer,priceUpdate] [--url http://localhost:3000]
// Logs in, creates an API key for the session, subscribes on /ws and prints every event. When the
// connection drops it reconnects and resumes with lastEventId, so nothing is missed. When the service
// cannot resume from there (`resync_required`), it says why on stderr and goes on: after reading the
// missed events over REST (too far back), or live from now on (events pruned, or undone by a restore
// from a backup). Ctrl-C revokes the key and exits.
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

/** The subscription's filters, as `subscribe` and `GET /api/v1/events` name them. */
const filters: Record<string, string | undefined> = {
  walletId: values.wallet,
  assetId: values.asset,
  collection: values.collection,
};

function subscribe(ws: WebSocket): void {
  const message: Record<string, unknown> = { type: 'subscribe', requestId: 'watch' };
  for (const [name, value] of Object.entries(filters)) if (value) message[name] = value;
  if (values.events) message.events = values.events.split(',');
  if (lastEventId) message.lastEventId = lastEventId;
  ws.send(JSON.stringify(message));
}

/** Reads the missed events over REST from `catchUp` (too far back to replay), printing each. */
async function catchUp(path: string): Promise<void> {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value) query.set(name, value);
  if (values.events) query.set('types', values.events);
  let after = new URL(path, base).searchParams.get('after') as string;
  for (;;) {
    query.set('after', after);
    const page = await call<{ data: { id: string }[]; next_cursor: string | null }>(
      'GET',
      `/api/v1/events?${query}`,
      undefined,
      credentials,
    );
    for (const event of page.data) process.stdout.write(`${JSON.stringify(event)}\n`);
    if (page.data.length > 0) lastEventId = page.data[page.data.length - 1].id;
    if (!page.next_cursor) return;
    after = page.next_cursor;
  }
}

/**
 * `resync_required` (32.4: before, the watch printed it and then nothing more, silently). Too far
 * back: the missed events are read over REST, then the watch subscribes from the last one. Otherwise
 * (events removed by retention or undone by a restore from a backup, or an id not yet given) the
 * events since `lastEventId` cannot be had: it says so and watches live events from now on.
 */
async function resync(
  ws: WebSocket,
  message: { reason: string; detail: string; catchUp: string | null },
): Promise<void> {
  process.stderr.write(`resync required (${message.reason}): ${message.detail}\n`);
  if (message.reason === 'too_far_back' && message.catchUp) {
    await catchUp(message.catchUp);
    process.stderr.write(`caught up over REST to ${lastEventId}; resuming live\n`);
  } else {
    lastEventId = undefined;
    process.stderr.write(
      'events seen so far may no longer be part of the ledger: re-read the state you keep; watching live events from now on\n',
    );
  }
  subscribe(ws);
}

function open(): void {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws`, { headers: credentials });
  ws.on('open', () => subscribe(ws));
  ws.on('message', (data) => {
    const message = JSON.parse(String(data)) as {
      type: string;
      id?: string;
      reason: string;
      detail: string;
      catchUp: string | null;
    };
    if (message.id && 'subscriptionIds' in message) lastEventId = message.id; // an event, of any type
    process.stdout.write(`${JSON.stringify(message)}\n`);
    if (message.type === 'resync_required')
      resync(ws, message).catch((error: unknown) => {
        process.stderr.write(`resync failed: ${(error as Error).message}; reconnecting\n`);
        ws.close();
      });
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
