// Watch a wallet (or everything) live from the command line:
//   npm run watch -- --user alice --password alice-demo-password [--wallet 0x...] [--asset gold]
//                    [--collection ID] [--events newTransfer,priceUpdate] [--url http://localhost:3000]
// Logs in, creates an API key for the session and follows the events with the official client's
// event stream (clients/typescript, `streamEvents`): every event once and in order on stdout, with
// the service's protocol messages (subscribed, replayed, resync_required); what happens to the
// connection on stderr. It resumes after any disconnection from the last event it printed; when the
// service cannot resume from there (`resync_required`) it says why and goes on: after reading the
// missed events over REST (too far back), or from now on (events pruned, or undone by a restore from
// a backup). Ctrl-C revokes the key and exits.
import { parseArgs } from 'node:util';
import {
  createGatsClient,
  EventStream,
  type EventType,
  nodeWebSocket,
  unwrap,
} from '../clients/typescript/src/node.ts';

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
const print = (message: unknown): void => {
  process.stdout.write(`${JSON.stringify(message)}\n`);
};
const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

const credentials: { token?: string; apiKey?: string } = {};
const gats = createGatsClient({
  baseUrl: values.url as string,
  token: () => credentials.token,
  apiKey: () => credentials.apiKey,
});
const login = await unwrap(
  gats.POST('/api/v1/auth/login', { body: { username: values.user, password: values.password } }),
);
credentials.token = login.access_token;
const apiKey = await unwrap(gats.POST('/api/v1/api-keys', { body: { name: 'watch (cli)' } }));
credentials.apiKey = apiKey.key;

let stopping = false;
// Constructed, then started: onState is called from start() and reads `stream`.
const stream = new EventStream({
  client: gats,
  auth: 'headers',
  webSocket: nodeWebSocket,
  walletId: values.wallet,
  assetId: values.asset,
  collection: values.collection,
  events: values.events?.split(',') as EventType[] | undefined,
  onEvent: print,
  // The protocol's own messages; events come through onEvent (once, in order), pongs are noise.
  onFrame: (message) => {
    if ('subscriptionIds' in message || message.type === 'pong') return;
    print(message);
    if (message.type === 'resync_required') say(`resync required (${message.reason}): ${message.detail}`);
  },
  onResync: () =>
    say(
      'events seen so far may no longer be part of the ledger: re-read the state you keep; watching from now on',
    ),
  onState: (state) => {
    if (state === 'offline' || state === 'connecting')
      say(`${state}; resuming after ${stream.position ?? 'now'}`);
    else say(state);
    // The service refused the subscription itself (an unknown event type, say): nothing to wait for.
    if (state === 'closed' && !stopping) process.exit(1);
  },
  onError: (error) => say(error instanceof Error ? error.message : String(error)),
});
stream.start();

process.on('SIGINT', async () => {
  stopping = true;
  await stream.stop();
  await gats
    .DELETE('/api/v1/api-keys/{key_id}', { params: { path: { key_id: apiKey.id } } })
    .catch(() => undefined);
  process.exit(0);
});
