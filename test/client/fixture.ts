// The official client (clients/typescript) pointed at an app under test: every answer it receives is
// checked against the OpenAPI contract, every WebSocket message against the AsyncAPI contract.
import type { Duplex } from 'node:stream';
import {
  createGatsClient,
  type GatsClient,
  type GatsClientOptions,
} from '../../clients/typescript/src/index.ts';
import { type ServerMessage, validateServerMessage } from '../../scripts/lib/server-messages.ts';
import type { TestApp } from '../helpers/app.ts';
import { contractCheckedFetch } from '../helpers/contract.ts';
import type { HttpUser } from '../helpers/ledger-fixtures.ts';

/** The client as `user`; each answer (of `send`, default fetch) is checked against the contract. */
export function clientFor(
  t: TestApp,
  user: HttpUser,
  options: Partial<GatsClientOptions> = {},
  send?: (request: Request) => Promise<Response>,
): GatsClient {
  return createGatsClient({
    baseUrl: t.baseUrl,
    token: user.headers.authorization.slice('Bearer '.length),
    apiKey: user.headers['x-api-key'],
    fetch: contractCheckedFetch(t.app.router.implemented, send),
    ...options,
  });
}

/** For the events client's onFrame: a message that breaks the AsyncAPI contract fails the test. */
export function checkFrame(message: object): void {
  validateServerMessage(message as ServerMessage);
}

export const METADATA = {
  image: 'https://cdn.example-game.com/items/1.png',
  attributes: [{ trait_type: 'rarity', value: 'rare' }],
  creator: 'Example Studio',
};

/** One app per database for the client's tests against the service (test/client/client.test.ts). */
export interface SharedApp {
  t: TestApp;
  player: HttpUser;
  friend: HttpUser;
  /** The events tests' user: only their own events are in its wallet's stream. */
  watcher: HttpUser;
  /** The service's ends of the open WebSocket connections, to drop them as a crash would. */
  sockets: Set<Duplex>;
}
