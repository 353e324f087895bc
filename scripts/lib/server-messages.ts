// The server's WebSocket messages as the AsyncAPI contract declares them: each message type's schema,
// and a check that a message matches it. Shared by the tests' client (test/helpers/ws.ts) and the
// crash test's resuming subscribers (scripts/chaos/lib/subscriber.ts).
import { asyncApiValidators } from '../../src/ws/protocol.ts';

const SERVER_MESSAGES: Record<string, string> = {
  subscribed: 'SubscribedMessage',
  unsubscribed: 'UnsubscribedMessage',
  newNFT: 'NewNftEventMessage',
  newTransfer: 'NewTransferEventMessage',
  priceUpdate: 'PriceUpdateEventMessage',
  assetUpdated: 'AssetUpdatedEventMessage',
  chainTransferPending: 'ChainTransferPendingEventMessage',
  chainTransferRemoved: 'ChainTransferRemovedEventMessage',
  listingCreated: 'ListingCreatedEventMessage',
  listingEnded: 'ListingEndedEventMessage',
  sale: 'SaleEventMessage',
  offerCreated: 'OfferCreatedEventMessage',
  offerEnded: 'OfferEndedEventMessage',
  storePurchase: 'StorePurchaseEventMessage',
  lootBoxOpened: 'LootBoxOpenedEventMessage',
  auctionCreated: 'AuctionCreatedEventMessage',
  auctionBid: 'AuctionBidEventMessage',
  auctionEnded: 'AuctionEndedEventMessage',
  itemExpired: 'ItemExpiredEventMessage',
  replayed: 'ReplayedMessage',
  resync_required: 'ResyncRequiredMessage',
  error: 'ErrorMessage',
  pong: 'PongMessage',
};
const validators = asyncApiValidators(Object.values(SERVER_MESSAGES));

// biome-ignore lint/suspicious/noExplicitAny: a message's fields are checked by the contract's schema
export type ServerMessage = Record<string, any> & { type: string };

export function validateServerMessage(message: ServerMessage): void {
  const title = SERVER_MESSAGES[message.type];
  if (!title)
    throw new Error(`server sent a message type the contract does not declare: ${JSON.stringify(message)}`);
  const validate = validators.get(title);
  if (!validate?.(message)) {
    throw new Error(
      `server message breaks the contract (${title}): ${JSON.stringify(validate?.errors)}; ${JSON.stringify(message)}`,
    );
  }
}
