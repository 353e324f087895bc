// English auctions (issue 35), built from the offers' parts: reserved balances and guarded plans.
//
//   open:    guards: the seller controls its wallet, holds the NFT free, it may move;
//            rows:   the auction (open), the item escrowed (reserved in the seller's holding), the
//                    item's active listings ended, `auctionCreated`.
//   bid:     guards: `auctionOpen` at now (not ended) against the best bid the domain read (a bid in
//                    between: read again), the bidder controls its wallet and holds the amount free;
//            rows:   the previous best bid's reservation released to its bidder (refunded at once),
//                    the new bid reserved, the best bid, `endsAt` pushed to now + the extension when
//                    the bid lands inside it, `auctionBid`.
//   settle:  guards: `auctionOpen` with `ended` (endsAt <= now), then as an accepted offer: the item
//                    leg and the split legs paid from their reservations;
//            rows:   the auction sold, the sale, the market price, `auctionEnded`, `sale`,
//                    `priceUpdate`; with no bid (or an item frozen meanwhile) the item released, the
//                    best bid refunded, the auction unsold, `auctionEnded`.
//   cancel:  guards: `auctionOpen` at now (not ended) with no best bid (a bid landed: refused, the
//                    auction runs to its end), the seller's wallet controlled by the caller;
//            rows:   the item released, the auction cancelled, `auctionEnded`.
// The market keeper (./market-keeper.ts) settles ended auctions on every instance: the guard makes a
// second settlement of the same auction a rejected no-op, so each settles exactly once.
import type { FilterQuery } from '@mikro-orm/core';
import { Auction, type AuctionStatus } from '../../db/entities/Auction.ts';
import { controlsWallet } from '../authorization.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress } from './addresses.ts';
import { formatAmount, parseAmount } from './amounts.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import type { WriteResult } from './idempotency.ts';
import {
  type AssetFacts,
  ItemExpiredError,
  insufficientBalance,
  type Leg,
  legGuards,
  legRefusal,
} from './legs.ts';
import { endListingsOf } from './listings.ts';
import type { OfferContext } from './offers.ts';
import type {
  Guard,
  GuardFailure,
  NewAuction,
  NewEvent,
  NewSale,
  Plan,
  ReservedChange,
} from './store/plan.ts';
import type { AuctionView, MarketSettingsView } from './views.ts';
import { WalletNotControlledError } from './wallets.ts';
import { applyWrite, earlierAnswerOr } from './writes.ts';

export interface CreateAuctionInput {
  wallet: StoredAddress;
  assetId: string;
  currency: string;
  reservePrice: string;
  minIncrement: string;
  duration: number;
  extension?: number;
}

export interface AuctionFilters {
  collection?: string;
  seller?: StoredAddress;
  assetId?: string;
  status?: AuctionView['status'];
  limit: number;
  cursor?: string;
}

export interface AuctionMethods {
  createAuction(
    actor: Actor,
    input: CreateAuctionInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<AuctionView>>;
  getAuction(id: string): Promise<AuctionView>;
  listAuctions(filters: AuctionFilters): Promise<Page<AuctionView>>;
  bid(
    actor: Actor,
    id: string,
    input: { wallet: StoredAddress; amount: string },
    idempotencyKey?: string,
  ): Promise<WriteResult<AuctionView>>;
  /** The seller wallet's controller cancels an open auction before its end and before any bid. */
  cancelAuction(actor: Actor, id: string): Promise<AuctionView>;
  /** Settles the open auctions whose end passed (at most `limit`), each in its own plan; how many. */
  settleAuctions(now: Date, limit: number): Promise<number>;
}

const DEFAULT_EXTENSION_SECONDS = 300;
/** Bids read the auction again when another bid landed in between, at most this many times. */
const ATTEMPTS = 5;

export class AuctionNotOpenError extends ConflictError {
  constructor(id: string, status: string) {
    super(
      status === 'expired' ? `The auction ${id} has ended.` : `The auction ${id} is ${status}.`,
      '/problems/auction-not-open',
    );
  }
}

class AuctionHasBidsError extends ConflictError {
  constructor(id: string) {
    super(`The auction ${id} has a bid: it runs to its end.`, '/problems/auction-has-bids');
  }
}

class BidTooLowError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/bid-too-low');
  }
}

const auctionNotFound = (id: string) => new NotFoundError(`No auction with id ${id}.`);

interface AuctionRow extends NewAuction {
  status: AuctionStatus;
  bestBid: bigint | null;
  bestBidder: StoredAddress | null;
  bestBidderUserId: string | null;
  bids: number;
  updatedAt: Date;
  operationId: string | null;
}

function rowOf(a: Auction): AuctionRow {
  return {
    id: a.id,
    status: a.status,
    sellerUserId: a.sellerUserId,
    sellerWallet: a.sellerWallet as StoredAddress,
    assetId: a.assetId,
    collectionId: a.collectionId,
    currencyId: a.currencyId,
    reservePrice: a.reservePrice as bigint,
    minIncrement: a.minIncrement as bigint,
    endsAt: a.endsAt,
    extensionSeconds: a.extensionSeconds,
    bestBid: (a.bestBid as bigint | null | undefined) ?? null,
    bestBidder: (a.bestBidder as StoredAddress | null | undefined) ?? null,
    bestBidderUserId: a.bestBidderUserId ?? null,
    bids: a.bids,
    createdAt: a.createdAt,
    updatedAt: a.updatedAt,
    operationId: a.operationId ?? null,
  };
}

function auctionView(a: AuctionRow, decimals: number): AuctionView {
  const money = (units: bigint) => formatAmount(units, decimals);
  return {
    id: a.id,
    status: a.status,
    seller: formatAddress(a.sellerWallet),
    assetId: a.assetId,
    collection: a.collectionId,
    currency: a.currencyId,
    reservePrice: money(a.reservePrice),
    minIncrement: money(a.minIncrement),
    endsAt: a.endsAt.toISOString(),
    extensionSeconds: a.extensionSeconds,
    bestBid: a.bestBid === null ? null : money(a.bestBid),
    bestBidder: a.bestBidder === null ? null : formatAddress(a.bestBidder),
    bids: a.bids,
    createdAt: a.createdAt.toISOString(),
    updatedAt: a.updatedAt.toISOString(),
    operationId: a.operationId,
  };
}

/** An auction's event: concerns its seller and its best bidder (and the one it outbid). */
function auctionEvent(
  type: 'auctionCreated' | 'auctionBid' | 'auctionEnded',
  view: AuctionView,
  at: Date,
  also: (string | null)[] = [],
): NewEvent {
  const seller = view.seller.toLowerCase();
  const wallets = [
    ...new Set([seller, ...[view.bestBidder, ...also].flatMap((w) => (w ? [w.toLowerCase()] : []))]),
  ];
  return {
    type,
    occurredAt: at,
    data: view,
    assetId: view.assetId,
    collectionId: view.collection,
    wallets,
    fromWallet: seller,
    toWallet: view.bestBidder?.toLowerCase() ?? null,
  };
}

export function createAuctionMethods(ctx: OfferContext): AuctionMethods {
  const { orm, reads, idempotency, store, writer } = ctx;

  async function readAuction(id: string): Promise<AuctionRow> {
    const auction = await orm.em.fork().findOne(Auction, { id });
    if (!auction) throw auctionNotFound(id);
    return rowOf(auction);
  }

  const decimalsOf = async (a: Pick<AuctionRow, 'currencyId'>) =>
    (await writer.factsOf(a.currencyId)).decimals;

  function notOpen(id: string, failure: GuardFailure): Error | undefined {
    if (failure.guard.kind !== 'auctionOpen') return undefined;
    if (failure.reason === 'missing') return auctionNotFound(id);
    return new AuctionNotOpenError(id, failure.reason ?? 'closed');
  }

  /**
   * Closes an auction without a sale (`unsold` at its end, or `cancelled` by its seller): the item
   * released from escrow, the best bid (if any) refunded, `auctionEnded`, one `op_` id.
   */
  function releasePlan(
    auction: AuctionRow,
    status: 'unsold' | 'cancelled',
    decimals: number,
    at: Date,
    guards: Guard[],
  ): { view: AuctionView; plan: Plan } {
    const operationId = newId('op');
    const view = auctionView({ ...auction, status, operationId, updatedAt: at }, decimals);
    const reserves: ReservedChange[] = [
      { assetId: auction.assetId, wallet: auction.sellerWallet, delta: -1n },
    ];
    if (auction.bestBid !== null && auction.bestBidder !== null)
      reserves.push({ assetId: auction.currencyId, wallet: auction.bestBidder, delta: -auction.bestBid });
    return {
      view,
      plan: {
        at,
        guards,
        auctionStatuses: [{ auctionId: auction.id, status, operationId, at }],
        reserves,
        events: [auctionEvent('auctionEnded', view, at)],
        operationId,
      },
    };
  }

  /** Settles one ended auction; false when another settlement (or none due) got there first. */
  async function settle(auction: AuctionRow): Promise<boolean> {
    const at = new Date();
    const operationId = newId('op');
    const decimals = await decimalsOf(auction);
    const item = await writer.factsOf(auction.assetId);
    const currency = await writer.factsOf(auction.currencyId);
    const seller: Actor = { userId: auction.sellerUserId, role: 'player' };
    const guard = {
      kind: 'auctionOpen' as const,
      auctionId: auction.id,
      at,
      ended: true,
      bestBid: auction.bestBid,
    };
    const unsold = async () => {
      const outcome = await store.apply(releasePlan(auction, 'unsold', decimals, at, [guard]).plan);
      return outcome.outcome === 'applied';
    };
    if (auction.bestBid === null || auction.bestBidder === null) return unsold();
    const winner = auction.bestBidder;
    const settings = await ctx.settingsOf(auction.collectionId);
    const { royaltyWallet, feeWallet, split } = await ctx.shares(settings, auction.bestBid);
    const place = { pointer: '/path/auction_id', label: '' };
    const legs: Leg[] = [
      { asset: item, amount: 1n, from: auction.sellerWallet, to: winner, place, fromReserved: true },
    ];
    let released = 0n;
    const pay = (to: StoredAddress | null | undefined, amount: bigint) => {
      if (amount <= 0n) return;
      if (!to || to === winner) {
        released += amount;
        return;
      }
      legs.push({ asset: currency, amount, from: winner, to, place, fromReserved: true });
    };
    pay(auction.sellerWallet, split.sellerProceeds);
    pay(royaltyWallet, split.royalty);
    pay(feeWallet, split.fee);
    const sale: NewSale = {
      id: operationId,
      listingId: auction.id,
      assetId: item.id,
      collectionId: auction.collectionId,
      amount: 1n,
      currencyId: currency.id,
      price: auction.bestBid,
      ...split,
      sellerWallet: auction.sellerWallet,
      buyerWallet: winner,
      createdAt: at,
    };
    const view = auctionView({ ...auction, status: 'sold', operationId, updatedAt: at }, decimals);
    const saleBody = await ctx.saleView(sale);
    const price = ctx.marketPrice(sale, saleBody, currency.decimals, auction.sellerUserId);
    try {
      await writer.apply(seller, legs, undefined, at, () => ({ status: 200, body: null, headers: {} }), {
        leading: [guard],
        auctionStatuses: [{ auctionId: auction.id, status: 'sold', operationId, at }],
        reserves: released > 0n ? [{ assetId: currency.id, wallet: winner, delta: -released }] : [],
        sales: [sale],
        prices: [price.row],
        events: [
          auctionEvent('auctionEnded', view, at),
          {
            type: 'sale',
            occurredAt: at,
            data: saleBody,
            assetId: item.id,
            collectionId: auction.collectionId,
            wallets: [auction.sellerWallet, winner],
            fromWallet: auction.sellerWallet,
            toWallet: winner,
          },
          price.event,
        ],
        operationId,
        refuse: (failure) => notOpen(auction.id, failure),
      });
      return true;
    } catch (error) {
      // Settled meanwhile (another instance): nothing to do. The item frozen meanwhile cannot move:
      // the auction ends unsold, the item released to its seller and the best bid refunded.
      if (error instanceof AuctionNotOpenError || error instanceof NotFoundError) return false;
      if (error instanceof ConflictError && error.type === '/problems/asset-frozen') return unsold();
      throw error;
    }
  }

  return {
    async createAuction(actor, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createAuction',
        key: idempotencyKey,
        request: input,
      });
      let auction: NewAuction;
      let item: AssetFacts;
      let currency: AssetFacts;
      try {
        await writer.assertControls(actor, [
          { from: input.wallet, place: { pointer: '/body/wallet', label: '' } },
        ]);
        item = await writer.factsOf(input.assetId);
        if (item.kind !== 'nft')
          throw new ValidationError(`${input.assetId} is not an NFT: auctions sell NFTs.`, [
            { pointer: '/body/assetId', detail: 'must be an NFT' },
          ]);
        const settings: MarketSettingsView = await ctx.settingsOf(item.collectionId);
        if (!settings.tradingEnabled)
          throw new ConflictError(
            `The studio of ${item.collectionId} turned trading off: its items cannot be auctioned.`,
            '/problems/trading-disabled',
          );
        currency = await ctx.acceptedCurrency(settings, input.currency);
        const amount = (text: string, pointer: string, positive: boolean) =>
          parseAmount(text, currency.decimals, { pointer, positive, label: pointer.slice(6) });
        const at = new Date();
        auction = {
          id: newId('auc'),
          sellerUserId: actor.userId,
          sellerWallet: input.wallet,
          assetId: item.id,
          collectionId: item.collectionId,
          currencyId: currency.id,
          reservePrice: amount(input.reservePrice, '/body/reservePrice', true),
          minIncrement: amount(input.minIncrement, '/body/minIncrement', true),
          endsAt: new Date(at.getTime() + input.duration * 1000),
          extensionSeconds: input.extension ?? DEFAULT_EXTENSION_SECONDS,
          createdAt: at,
        };
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      const at = auction.createdAt;
      const view = auctionView(
        {
          ...auction,
          status: 'open',
          bestBid: null,
          bestBidder: null,
          bestBidderUserId: null,
          bids: 0,
          updatedAt: at,
          operationId: null,
        },
        currency.decimals,
      );
      const leg: Leg = {
        asset: item,
        amount: 1n,
        from: input.wallet,
        to: input.wallet,
        place: { pointer: '/body', label: '' },
      };
      // The item's listings end: it is escrowed (a purchase could not move it anyway).
      const ended = await endListingsOf(
        reads,
        (l) => writer.listingDecimals(l),
        [{ assetId: item.id, reason: 'unavailable' }],
        at,
      );
      return applyWrite(
        store,
        idempotency,
        key,
        {
          at,
          // Issue 36: an NFT with an end time is never escrowed (the auction could outlast it).
          guards: [...legGuards(actor, [leg]), { kind: 'assetExpiry', assetId: item.id, expiresAt: null }],
          auctions: [auction],
          reserves: [{ assetId: item.id, wallet: input.wallet, delta: 1n }],
          listingStatuses: ended.listingStatuses,
          events: [auctionEvent('auctionCreated', view, at), ...ended.events],
        },
        { status: 201, body: view, headers: { Location: `/api/v1/auctions/${auction.id}` } },
        (failure) =>
          legRefusal([leg], failure) ??
          (failure.guard.kind === 'assetExpiry'
            ? new ItemExpiredError(
                `${item.id} has an end time (a timed grant or a loan): an auction could outlast it, so it cannot be auctioned.`,
              )
            : new Error(`Unexpected guard ${failure.guard.kind}.`)),
      );
    },

    async getAuction(id) {
      const auction = await readAuction(id);
      return auctionView(auction, await decimalsOf(auction));
    },

    async listAuctions({ collection, seller, assetId, status, limit, cursor }) {
      const where: FilterQuery<Auction>[] = [];
      if (collection) where.push({ collectionId: collection });
      if (seller) where.push({ sellerWallet: seller });
      if (assetId) where.push({ assetId });
      if (status) where.push({ status });
      const rows = await pageById(orm.em.fork(), Auction, where, {
        list: 'auctions',
        order: 'newest',
        limit,
        cursor,
      });
      return mapPage(rows, async (row) => {
        const auction = rowOf(row);
        return auctionView(auction, await decimalsOf(auction));
      });
    },

    async bid(actor, id, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'bidAuction',
        key: idempotencyKey,
        request: { id, ...input },
      });
      for (let attempt = 1; ; attempt++) {
        let auction: AuctionRow;
        let currency: AssetFacts;
        let amount: bigint;
        const at = new Date();
        try {
          auction = await readAuction(id);
          if (auction.status !== 'open') throw new AuctionNotOpenError(id, auction.status);
          if (auction.endsAt <= at) throw new AuctionNotOpenError(id, 'expired');
          await writer.assertControls(actor, [
            { from: input.wallet, place: { pointer: '/body/wallet', label: '' } },
          ]);
          if (input.wallet === auction.sellerWallet || actor.userId === auction.sellerUserId)
            throw new ConflictError(
              `The auction ${id} is your own: you cannot bid on it.`,
              '/problems/own-auction',
            );
          currency = await writer.factsOf(auction.currencyId);
          amount = parseAmount(input.amount, currency.decimals, { pointer: '/body/amount', positive: true });
          const least =
            auction.bestBid === null ? auction.reservePrice : auction.bestBid + auction.minIncrement;
          if (amount < least)
            throw new BidTooLowError(
              `A bid on ${id} is at least ${formatAmount(least, currency.decimals)} ${currency.id} (${
                auction.bestBid === null ? 'the reserve price' : 'the best bid plus the minimum increment'
              }).`,
            );
        } catch (error) {
          return earlierAnswerOr(idempotency, key, error);
        }
        const extended =
          auction.endsAt.getTime() - at.getTime() < auction.extensionSeconds * 1000
            ? new Date(at.getTime() + auction.extensionSeconds * 1000)
            : auction.endsAt;
        const outbid = auction.bestBidder;
        const next: AuctionRow = {
          ...auction,
          bestBid: amount,
          bestBidder: input.wallet,
          bestBidderUserId: actor.userId,
          bids: auction.bids + 1,
          endsAt: extended,
          updatedAt: at,
        };
        const view = auctionView(next, currency.decimals);
        // The previous best bid is released first, so raising one's own bid needs only the difference.
        const reserves: ReservedChange[] = [];
        if (auction.bestBid !== null && outbid !== null)
          reserves.push({ assetId: currency.id, wallet: outbid, delta: -auction.bestBid });
        reserves.push({ assetId: currency.id, wallet: input.wallet, delta: amount });
        const needed =
          outbid === input.wallet && auction.bestBid !== null ? amount - auction.bestBid : amount;
        const leg: Leg = {
          asset: currency,
          amount: needed,
          from: input.wallet,
          to: input.wallet,
          place: { pointer: '/body/amount', label: '' },
        };
        let changed = false;
        try {
          return await applyWrite(
            store,
            idempotency,
            key,
            {
              at,
              guards: [
                { kind: 'auctionOpen', auctionId: id, at, bestBid: auction.bestBid },
                controlsWallet(actor.userId, input.wallet),
                // Issue 36: timed units of the currency are never escrowed (their lots count out).
                { kind: 'holds', assetId: currency.id, wallet: input.wallet, atLeast: needed, untimed: true },
              ],
              auctionBids: [
                {
                  auctionId: id,
                  amount,
                  bidder: input.wallet,
                  bidderUserId: actor.userId,
                  endsAt: extended,
                  at,
                },
              ],
              reserves,
              events: [auctionEvent('auctionBid', view, at, [outbid])],
            },
            { status: 201, body: view, headers: {} },
            (failure) => {
              if (failure.guard.kind === 'auctionOpen' && failure.reason === 'changed') {
                changed = true;
                return new ConflictError(`The auction ${id} kept changing; bid again.`);
              }
              if (failure.guard.kind === 'controls') return new WalletNotControlledError(input.wallet);
              if (failure.guard.kind === 'holds')
                return insufficientBalance(leg, failure.found ?? 0n, needed);
              return notOpen(id, failure) ?? new Error(`Unexpected guard ${failure.guard.kind}.`);
            },
          );
        } catch (error) {
          // Another bid landed between the read and the plan: read again (it may now be too low).
          if (changed && attempt < ATTEMPTS) continue;
          throw error;
        }
      }
    },

    async cancelAuction(actor, id) {
      const auction = await readAuction(id);
      await writer.assertControls(actor, [
        { from: auction.sellerWallet, place: { pointer: '/path', label: '' } },
      ]);
      const at = new Date();
      if (auction.status !== 'open') throw new AuctionNotOpenError(id, auction.status);
      if (auction.bestBid !== null) throw new AuctionHasBidsError(id);
      if (auction.endsAt <= at) throw new AuctionNotOpenError(id, 'expired');
      // The guard re-checks all three under the row's lock: a first bid racing this cancellation
      // either lands before (`changed`: refused, the auction runs on) or finds it cancelled.
      const { view, plan } = releasePlan(auction, 'cancelled', await decimalsOf(auction), at, [
        { kind: 'auctionOpen', auctionId: id, at, bestBid: null },
        controlsWallet(actor.userId, auction.sellerWallet),
      ]);
      const result = await applyWrite(
        store,
        idempotency,
        undefined,
        plan,
        { status: 200, body: view, headers: {} },
        (failure) => {
          if (failure.guard.kind === 'auctionOpen' && failure.reason === 'changed')
            return new AuctionHasBidsError(id);
          if (failure.guard.kind === 'controls') return new WalletNotControlledError(auction.sellerWallet);
          return notOpen(id, failure) ?? new Error(`Unexpected guard ${failure.guard.kind}.`);
        },
      );
      return result.body;
    },

    async settleAuctions(now, limit) {
      const rows = await orm.em
        .fork()
        .find(
          Auction,
          { status: 'open', endsAt: { $lte: now } },
          { orderBy: [{ endsAt: 'asc' }, { id: 'asc' }], limit },
        );
      let settled = 0;
      for (const row of rows) if (await settle(rowOf(row))) settled++;
      return settled;
    },
  };
}
