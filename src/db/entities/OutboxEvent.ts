import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { bigintAutoincrementId } from '../columns.ts';

/** Every event type, the one list (readers that ask for no type get all of these). */
export const EVENT_TYPES = [
  'newNFT',
  'newTransfer',
  'priceUpdate',
  'assetUpdated',
  // Advisory, before an on-chain transfer's confirmation (src/chain/announce.ts): `from`/`to` wallets.
  'chainTransferPending',
  'chainTransferRemoved',
  // The marketplace (issue 35, src/domain/ledger/market.ts): a listing created, ended (cancelled,
  // its item moved, burned or froze), a listing bought (its moves are the operation's newTransfers).
  'listingCreated',
  'listingEnded',
  'sale',
  // Offers (issue 35): made (price reserved), closed (accepted, cancelled, expired).
  'offerCreated',
  'offerEnded',
  // Stores (issue 36, src/domain/ledger/stores.ts): an offer bought (its moves and mints are the
  // operation's newTransfers and newNFTs).
  'storePurchase',
  // Loot boxes (issue 36, src/domain/ledger/loot-boxes.ts): a box opened (the draw; its burn and mints
  // are the operation's newTransfers and newNFTs).
  'lootBoxOpened',
  // Auctions (issue 35): opened (item escrowed), a new best bid, settled (sold or unsold).
  'auctionCreated',
  'auctionBid',
  'auctionEnded',
  // Items that expire (issue 36, src/domain/ledger/expiries.ts): an NFT at its end time returned to
  // its lender or burned (its move is the operation's newTransfer).
  'itemExpired',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The transactional outbox: every state change inserts its event here in the same transaction, and
 * the relay publishes rows in id order. The id is the global event id clients resume from.
 *
 * Commit order caveat: an autoincrement id is taken at INSERT time, not at COMMIT. On PostgreSQL two
 * concurrent transactions can commit ids 8 then 7; a relay that already passed 8 would skip 7 for
 * ever. Writers must therefore be serialized for the rest of their transaction once they take an id
 * (e.g. `pg_advisory_xact_lock` before the insert, owned by the events module), or the relay must
 * wait for in-flight ids. SQLite has a single writer, so its ids are already in commit order.
 */
export const OutboxEvent = defineEntity({
  name: 'OutboxEvent',
  /**
   * Every filtered read (src/events/reads.ts) walks one of these in id order from its resume point
   * and stops after a page: one index per filter column, each ending with the id, so a filter's
   * matches come out already ordered and a page costs its own rows, not the log's (issue 34).
   */
  indexes: [
    { properties: ['type', 'id'] },
    { properties: ['assetId', 'id'] },
    { properties: ['collectionId', 'id'] },
    { properties: ['fromWallet', 'id'] },
    { properties: ['toWallet', 'id'] },
  ],
  properties: {
    id: bigintAutoincrementId(),
    /**
     * One of EVENT_TYPES. Plain text, no check constraint: a new event type needs no table rebuild
     * (SQLite cannot alter a check); the writers are typed (NewEvent in src/domain/ledger/store/plan.ts).
     */
    type: p.text().$type<EventType>(),
    occurredAt: p.datetime(),
    /** The envelope's `data`: the Asset, Transfer or Price resource as published. */
    data: p.json<Record<string, unknown>>(),
    assetId: p.string().length(32),
    collectionId: p.string().nullable(),
    /** Every lowercase address the event concerns, as published to wallet subscribers. */
    wallets: p.json<string[]>(),
    /**
     * The same addresses as indexed columns, so a wallet filter (`from_wallet = ?`, `to_wallet = ?`)
     * uses an index during catch-up: `from`/`to` of a transfer, the first owner of a new NFT (as `to`,
     * a mint), none for a price update.
     */
    fromWallet: p.string().length(42).nullable(),
    toWallet: p.string().length(42).nullable(),
    /** The `op_` id of the multi-part operation the event belongs to (the envelope's `operationId`). */
    operationId: p.text().nullable(),
  },
});
export type OutboxEvent = InferEntity<typeof OutboxEvent>;
