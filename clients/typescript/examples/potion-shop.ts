// A game server on @gats/client: the potion shop of Dawn Quest. A player buys a potion by sending
// 5 gold to the studio's wallet; the server watches that wallet's incoming gold and, for each
// payment, airdrops a Dawn Potion to the payer. Run by docs/guides/game-server.md:
//
//   node clients/typescript/examples/potion-shop.ts --url http://localhost:3000 \
//     --user studio --password studio-demo-password --state potion-shop.json
//
// It never grants twice and never misses a payment, whatever stops it: the grant's Idempotency-Key is
// the payment event's id (a grant sent again, after a crash between the grant and saving the
// position, answers the first grant), and the position (the last event handled) is saved after each
// event and resumed from at the next start. Payments made while it was down are delivered when it
// comes back.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
// In a project of your own: import { ... } from '@gats/client/node';
import { createGatsClient, nodeWebSocket, streamEvents, unwrap } from '../src/node.ts';

const PRICE = 5; // gold per potion
const COLLECTION = 'dawn-quest';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://localhost:3000' },
    user: { type: 'string' },
    password: { type: 'string' },
    state: { type: 'string', default: 'potion-shop.json' },
  },
});
const log = (line: string) => process.stdout.write(`${line}\n`);

// Sign in as the studio; the API key lives as long as this process.
const credentials: { token?: string; apiKey?: string } = {};
const gats = createGatsClient({
  baseUrl: values.url as string,
  token: () => credentials.token,
  apiKey: () => credentials.apiKey,
});
credentials.token = (
  await unwrap(
    gats.POST('/api/v1/auth/login', {
      body: { username: values.user ?? '', password: values.password ?? '' },
    }),
  )
).access_token;
const key = await unwrap(gats.POST('/api/v1/api-keys', { body: { name: 'potion shop' } }));
credentials.apiKey = key.key;
const shopWallet = (await unwrap(gats.GET('/api/v1/me'))).wallets[0];

// The position: the last event handled, kept across runs.
const statePath = values.state as string;
const saved: { lastEventId?: string } = existsSync(statePath)
  ? JSON.parse(readFileSync(statePath, 'utf8'))
  : {};
log(saved.lastEventId ? `resuming after event ${saved.lastEventId}` : 'starting from now');

const stream = streamEvents({
  client: gats,
  auth: 'headers',
  webSocket: nodeWebSocket,
  walletId: shopWallet,
  events: ['newTransfer'],
  lastEventId: saved.lastEventId,
  onEvent: async (event) => {
    if (event.type === 'newTransfer') {
      const payment = event.data;
      const potions = Math.floor(Number(payment.amount) / PRICE);
      if (
        payment.assetId === 'gold' &&
        payment.to.toLowerCase() === shopWallet.toLowerCase() &&
        potions > 0
      ) {
        const granted = await unwrap(
          gats.POST('/api/v1/collections/{collection_id}/mint/batch', {
            params: {
              path: { collection_id: COLLECTION },
              // The payment's event id: this grant happens once, however often it is sent.
              header: { 'Idempotency-Key': `potion-${event.id}` },
            },
            body: {
              items: Array.from({ length: potions }, () => ({
                to: payment.from,
                nft: {
                  name: 'Dawn Potion',
                  metadata: {
                    image: 'https://cdn.example-game.com/items/potion.png',
                    attributes: [{ trait_type: 'Heals', value: 50 }],
                    creator: 'Dawn Quest',
                  },
                },
              })),
            },
          }),
        );
        log(
          `event ${event.id}: ${payment.amount} gold from ${payment.from}: granted ${granted.nfts.length} potion(s)`,
        );
      }
    }
    writeFileSync(statePath, JSON.stringify({ lastEventId: event.id }));
  },
  onState: (state) => log(state),
  onError: (error) => log(`error: ${error instanceof Error ? error.message : String(error)}`),
});

process.on('SIGTERM', async () => {
  await stream.stop();
  await gats
    .DELETE('/api/v1/api-keys/{key_id}', { params: { path: { key_id: key.id } } })
    .catch(() => undefined);
  process.exit(0);
});
