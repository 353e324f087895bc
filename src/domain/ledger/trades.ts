// Two-party trades (issue 21): one party proposes (offer from its wallet for a request from the
// other's), the other accepts within a time limit, either cancels before. A proposal and a
// cancellation are plans without moves (a trade row, a status change); an acceptance is ONE plan:
// the trade still open (the store's `tradeOpen` guard, which locks the row, so of an acceptance and a
// cancellation racing exactly one applies), every leg both ways checked like a transfer (control,
// holds, movable) through the transfer service's leg writer, both sides' transfers under one `op_`
// id, and the trade closed as accepted: all or nothing. A proposal publishes no event (nothing moved;
// the settlement's transfers do).
//
// A user may refuse every proposal from another (issue 30.10): a refusal row, then the refused user's
// open proposals to the refuser closed exactly as a cancellation closes one (a plan each).
import type { FilterQuery } from '@mikro-orm/core';
import { accountMembers, accountOf } from '../../db/account-members.ts';
import { Trade, type TradeItem } from '../../db/entities/Trade.ts';
import { TradeRefusal } from '../../db/entities/TradeRefusal.ts';
import { Wallet } from '../../db/entities/Wallet.ts';
import type { Orm } from '../../db/orm.ts';
import { tradePartyFilter, tradeRelation } from '../authorization.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount, InvalidAmountError, parseAmount } from './amounts.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import { type Leg, type LegPlace, legGuards, legRefusal } from './legs.ts';
import type { GuardFailure, LedgerStore, NewTrade } from './store/plan.ts';
import type { TradeRefusalView, TradeSettlementView, TradeStatusView, TradeView } from './views.ts';
import { WalletNotControlledError } from './wallets.ts';
import { applyWrite, earlierAnswerOr } from './writes.ts';

export interface TradeItemInput {
  assetId: string;
  amount: string;
}

export interface CreateTradeInput {
  fromWallet: StoredAddress;
  toWallet: StoredAddress;
  offer: TradeItemInput[];
  request: TradeItemInput[];
  expiresIn?: number;
}

/** A proposal's default life, in seconds (the contract's `expiresIn`, which also bounds it). */
export const DEFAULT_TRADE_SECONDS = 86_400;

/** Open proposals at once (30.10): per proposer (a user with its service accounts) and per counterparty wallet. */
export interface TradeCaps {
  maxOpenPerProposer: number;
  maxOpenPerCounterparty: number;
}

export const DEFAULT_TRADE_CAPS: TradeCaps = { maxOpenPerProposer: 20, maxOpenPerCounterparty: 50 };

export interface TradeService {
  /** `account`: the user whose cap the proposal counts against (a service account's owner). */
  create(
    actor: Actor,
    input: CreateTradeInput,
    idempotencyKey?: string,
    account?: string,
  ): Promise<WriteResult<TradeView>>;
  list(
    actor: Actor,
    options: { status?: TradeStatusView; limit: number; cursor?: string },
  ): Promise<Page<TradeView>>;
  get(actor: Actor, id: string): Promise<TradeView>;
  accept(actor: Actor, id: string, idempotencyKey?: string): Promise<WriteResult<TradeSettlementView>>;
  cancel(actor: Actor, id: string): Promise<TradeView>;
  /**
   * `account` (the caller's: a service account's owner) refuses every proposal from `userId`'s
   * account; its open proposals to `account` are cancelled, `actor` closing them.
   */
  refuse(actor: Actor, account: string, userId: string): Promise<TradeRefusalView>;
  /** `account` no longer refuses `userId`'s account (404 when it did not). */
  unrefuse(account: string, userId: string): Promise<void>;
  listRefusals(account: string, options: { limit: number; cursor?: string }): Promise<Page<TradeRefusalView>>;
}

export class TradeNotOpenError extends ConflictError {
  constructor(id: string, status: string) {
    super(
      status === 'expired' ? `The trade ${id} has expired.` : `The trade ${id} was ${status}.`,
      '/problems/trade-not-open',
    );
  }
}

function tooManyTrades(detail: string): ConflictError {
  return new ConflictError(detail, '/problems/quota-exceeded');
}

function userNotFound(id: string): NotFoundError {
  return new NotFoundError(`No user with id ${id}.`);
}

function tradeNotFound(id: string): NotFoundError {
  return new NotFoundError(`No trade with id ${id}.`);
}

/** Open and past its expiry reads as `expired`. */
function statusOf(trade: Pick<Trade, 'status' | 'expiresAt'>, now: Date): TradeStatusView {
  return trade.status === 'open' && trade.expiresAt.getTime() <= now.getTime() ? 'expired' : trade.status;
}

type Side = 'offer' | 'request';

function sidePlace(side: Side, i: number): LegPlace {
  return { pointer: `/body/${side}/${i}`, label: `${side === 'offer' ? 'Offer' : 'Request'} ${i}: ` };
}

export function createTradeService(
  orm: Orm,
  idempotency: Idempotency,
  store: LedgerStore,
  writer: LegWriter,
  caps: TradeCaps = DEFAULT_TRADE_CAPS,
): TradeService {
  /**
   * 409 when the proposer's account, or the counterparty wallet, has its cap of open proposals.
   * Checked before the proposal is written: proposals racing each other may pass it by the few in
   * flight at once (each proposer's are bounded by its rate limit).
   */
  async function assertWithinCaps(account: string, toWallet: StoredAddress, now: Date): Promise<void> {
    const em = orm.em.fork();
    const open = { status: 'open' as const, expiresAt: { $gt: now } };
    const proposers = await accountMembers(em, account);
    const mine = await em.count(Trade, { ...open, proposerUserId: { $in: proposers } });
    if (mine >= caps.maxOpenPerProposer)
      throw tooManyTrades(
        `You already have ${caps.maxOpenPerProposer} open trade proposals, the most one user may have; cancel one or wait for one to close.`,
      );
    const theirs = await em.count(Trade, { ...open, counterpartyWallet: toWallet });
    if (theirs >= caps.maxOpenPerCounterparty)
      throw tooManyTrades(
        `The wallet ${formatAddress(toWallet)} already has ${caps.maxOpenPerCounterparty} open trade proposals, the most one wallet may receive; try again once some have closed.`,
      );
  }

  /** The account controlling `wallet` (a service account's owner), or null for a wallet of nobody here. */
  async function accountControlling(wallet: StoredAddress): Promise<string | null> {
    const em = orm.em.fork();
    const row = await em.findOne(Wallet, { address: wallet }, { fields: ['user'] });
    const userId = row?.user?.id;
    return userId ? accountOf(em, userId) : null;
  }

  async function refuses(refuser: string, proposer: string): Promise<boolean> {
    return (await orm.em.fork().count(TradeRefusal, { refuserUserId: refuser, refusedUserId: proposer })) > 0;
  }

  /** 403 `trade-refused` when `refuser` refuses `proposer`'s proposals. */
  async function assertNotRefused(refuser: string | null, proposer: string, toWallet: StoredAddress) {
    if (refuser === null || !(await refuses(refuser, proposer))) return;
    throw new ForbiddenError(
      `Whoever controls ${formatAddress(toWallet)} refuses your trade proposals.`,
      '/problems/trade-refused',
    );
  }

  /** Items as stored (base units) -> as answered (decimal strings of the asset's decimals). */
  async function itemsView(items: TradeItem[]) {
    return Promise.all(
      items.map(async (item) => {
        const { decimals } = await writer.factsOf(item.assetId);
        return { assetId: item.assetId, amount: formatAmount(BigInt(item.amount), decimals) };
      }),
    );
  }

  async function view(trade: NewTrade | Trade, now = new Date()): Promise<TradeView> {
    return {
      id: trade.id,
      status: statusOf(trade, now),
      proposer: trade.proposerUserId,
      fromWallet: formatAddress(trade.proposerWallet),
      toWallet: formatAddress(trade.counterpartyWallet),
      offer: await itemsView(trade.offer),
      request: await itemsView(trade.request),
      expiresAt: trade.expiresAt.toISOString(),
      createdAt: trade.createdAt.toISOString(),
      updatedAt: trade.updatedAt.toISOString(),
      operationId: trade.operationId ?? null,
      closedBy: trade.closedBy ?? null,
    };
  }

  async function controlledWallets(userId: string): Promise<string[]> {
    const wallets = await orm.em.fork().find(Wallet, { user: userId });
    return wallets.map((wallet) => wallet.address);
  }

  /** The trade if the actor is a party (`trade-party`); 404 otherwise, as if it did not exist. */
  async function partyTrade(actor: Actor, id: string) {
    const trade = await orm.em.fork().findOne(Trade, { id });
    if (!trade) throw tradeNotFound(id);
    const { party, counterparty } = tradeRelation(actor, trade, await controlledWallets(actor.userId));
    if (!party) throw tradeNotFound(id);
    return { trade, isCounterparty: counterparty };
  }

  /**
   * Closes an open trade as cancelled by `by`: one plan, the trade still open (the `tradeOpen`
   * guard: of a cancellation and an acceptance racing, exactly one applies), as every cancellation.
   */
  async function cancelTrade(trade: Pick<Trade, keyof NewTrade>, by: string): Promise<TradeView> {
    const { id } = trade;
    const at = new Date();
    const status = statusOf(trade, at);
    if (status !== 'open') throw new TradeNotOpenError(id, status);
    const closed = await view({ ...trade, status: 'cancelled', closedBy: by, updatedAt: at }, at);
    const result = await applyWrite(
      store,
      idempotency,
      undefined,
      {
        at,
        guards: [{ kind: 'tradeOpen', tradeId: id, at }],
        tradeStatuses: [{ tradeId: id, status: 'cancelled', by, operationId: null, at }],
      },
      { status: 200, body: closed, headers: {} },
      (failure) => notOpen(id, failure) ?? new Error(`Unexpected guard ${failure.guard.kind}.`),
    );
    return result.body;
  }

  /** `cancelTrade`, false when the trade was closed (accepted, cancelled, expired) meanwhile. */
  async function closeUnlessClosed(trade: Pick<Trade, keyof NewTrade>, by: string): Promise<boolean> {
    try {
      await cancelTrade(trade, by);
      return true;
    } catch (error) {
      if (error instanceof TradeNotOpenError) return false;
      throw error;
    }
  }

  function notOpen(id: string, failure: GuardFailure): Error | undefined {
    if (failure.guard.kind !== 'tradeOpen') return undefined;
    if (failure.reason === 'missing') return tradeNotFound(id);
    return new TradeNotOpenError(id, failure.reason ?? 'closed');
  }

  /** The legs of one side: checked asset and amount, from `from` to `to`, controlled by `by`. */
  async function sideLegs(
    side: Side,
    items: TradeItemInput[],
    from: StoredAddress,
    to: StoredAddress,
    by?: string,
  ): Promise<Leg[]> {
    const legs: Leg[] = [];
    for (const [i, item] of items.entries()) {
      const place = sidePlace(side, i);
      let asset: Awaited<ReturnType<LegWriter['factsOf']>>;
      try {
        asset = await writer.factsOf(item.assetId);
      } catch (error) {
        if (error instanceof NotFoundError)
          throw new NotFoundError(`${place.label}no asset with id ${item.assetId}.`);
        throw error;
      }
      const pointer = `${place.pointer}/amount`;
      let amount: bigint;
      try {
        amount = parseAmount(item.amount, asset.kind === 'nft' ? 0 : asset.decimals, {
          pointer,
          positive: true,
        });
      } catch (error) {
        if (!(error instanceof InvalidAmountError)) throw error;
        throw new InvalidAmountError(
          `${place.label}${error.detail}`,
          pointer,
          error.errors?.[0]?.detail ?? '',
        );
      }
      if (asset.kind === 'nft' && amount !== 1n)
        throw new InvalidAmountError(
          `${place.label}the amount of an NFT must be 1.`,
          pointer,
          'must be 1 for an NFT',
        );
      legs.push({ asset, amount, from, to, place, by });
    }
    return legs;
  }

  return {
    async create(actor, input, idempotencyKey, account = actor.userId) {
      if (input.toWallet === ZERO_ADDRESS || input.toWallet === input.fromWallet) {
        throw new ValidationError(
          '`toWallet` must be another wallet than `fromWallet`, not the zero address.',
          [{ pointer: '/body/toWallet', detail: 'must differ from fromWallet and not be the zero address' }],
        );
      }
      const seconds = input.expiresIn ?? DEFAULT_TRADE_SECONDS;
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createTrade',
        key: idempotencyKey,
        request: input,
      });
      let offer: Leg[];
      let request: Leg[];
      let refuser: string | null;
      try {
        await writer.assertControls(actor, [
          { from: input.fromWallet, place: { pointer: '/body', label: '' } },
        ]);
        refuser = await accountControlling(input.toWallet);
        await assertNotRefused(refuser, account, input.toWallet);
        await assertWithinCaps(account, input.toWallet, new Date());
        offer = await sideLegs('offer', input.offer, input.fromWallet, input.toWallet);
        request = await sideLegs('request', input.request, input.toWallet, input.fromWallet);
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      const at = new Date();
      const stored = (legs: Leg[]) =>
        legs.map((leg) => ({ assetId: leg.asset.id, amount: String(leg.amount) }));
      const trade: NewTrade = {
        id: newId('trd'),
        status: 'open',
        proposerUserId: actor.userId,
        proposerWallet: input.fromWallet,
        counterpartyWallet: input.toWallet,
        offer: stored(offer),
        request: stored(request),
        expiresAt: new Date(at.getTime() + seconds * 1000),
        createdAt: at,
        updatedAt: at,
        operationId: null,
        closedBy: null,
      };
      const body = await view(trade, at);
      // The offer is checked now (controlled, movable, held) for an early answer; nothing is reserved.
      const created = await applyWrite(
        store,
        idempotency,
        key,
        {
          at,
          guards: legGuards(actor, offer),
          trades: [trade],
        },
        { status: 201, body, headers: { Location: `/api/v1/trades/${trade.id}` } },
        (failure) => legRefusal(offer, failure) ?? new Error(`Unexpected guard ${failure.guard.kind}.`),
      );
      // A refusal that committed after the check above, whose sweep ran before this proposal
      // committed, did not see it: seen from here, it is closed as the sweep would have.
      if (!created.replayed && refuser !== null && (await refuses(refuser, account)))
        await closeUnlessClosed(trade, refuser);
      return created;
    },

    async list(actor, { status, limit, cursor }) {
      const wallets = await controlledWallets(actor.userId);
      const now = new Date();
      const where: FilterQuery<Trade>[] = [tradePartyFilter(actor, wallets)];
      if (status === 'expired') where.push({ status: 'open', expiresAt: { $lte: now } });
      else if (status === 'open') where.push({ status: 'open', expiresAt: { $gt: now } });
      else if (status) where.push({ status });
      const rows = await pageById(orm.em.fork(), Trade, where, {
        list: 'trades',
        order: 'newest',
        limit,
        cursor,
      });
      return mapPage(rows, (row) => view(row, now));
    },

    async get(actor, id) {
      return view((await partyTrade(actor, id)).trade);
    },

    async accept(actor, id, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'acceptTrade',
        key: idempotencyKey,
        request: { id },
      });
      let legs: Leg[];
      let trade: Trade;
      try {
        const party = await partyTrade(actor, id);
        trade = party.trade;
        if (!party.isCounterparty)
          throw new WalletNotControlledError(
            trade.counterpartyWallet as StoredAddress,
            `Only the counterparty (whoever controls ${formatAddress(trade.counterpartyWallet)}) may accept this trade.`,
          );
        const status = statusOf(trade, new Date());
        if (status !== 'open') throw new TradeNotOpenError(id, status);
        const from = trade.proposerWallet as StoredAddress;
        const to = trade.counterpartyWallet as StoredAddress;
        // Stored amounts are base units: the legs read them back as the decimal strings answered.
        legs = [
          ...(await sideLegs('offer', await itemsView(trade.offer), from, to, trade.proposerUserId)),
          ...(await sideLegs('request', await itemsView(trade.request), to, from)),
        ];
      } catch (error) {
        return earlierAnswerOr(idempotency, key, error);
      }
      const at = new Date();
      const operationId = newId('op');
      const closed = await view(
        { ...trade, status: 'accepted', operationId, closedBy: actor.userId, updatedAt: at },
        at,
      );
      return writer.apply(
        actor,
        legs,
        key,
        at,
        (transfers) => ({ status: 201, body: { id: operationId, trade: closed, transfers }, headers: {} }),
        {
          leading: [{ kind: 'tradeOpen', tradeId: id, at }],
          tradeStatuses: [{ tradeId: id, status: 'accepted', by: actor.userId, operationId, at }],
          operationId,
          rejected: (failure) => notOpen(id, failure) ?? new Error(`Unexpected guard ${failure.guard.kind}.`),
        },
      );
    },

    async cancel(actor, id) {
      const { trade } = await partyTrade(actor, id);
      return cancelTrade(trade, actor.userId);
    },

    async refuse(actor, account, userId) {
      const em = orm.em.fork();
      const refused = await accountOf(em, userId);
      if (refused === null) throw userNotFound(userId);
      if (refused === account)
        throw new ValidationError('You cannot refuse trade proposals from your own account.', [
          { pointer: '/path/user_id', detail: "names the caller's own account" },
        ]);
      await em
        .createQueryBuilder(TradeRefusal)
        .insert({ id: newId('trf'), refuserUserId: account, refusedUserId: refused, createdAt: new Date() })
        .onConflict(['refuserUserId', 'refusedUserId'])
        .ignore()
        .execute();
      const refusal = await em.findOneOrFail(TradeRefusal, {
        refuserUserId: account,
        refusedUserId: refused,
      });
      // Written before the sweep: a proposal checked before the refusal committed and written after
      // the sweep read is closed by its own check after its commit (see `create`).
      const [proposers, members] = [await accountMembers(em, refused), await accountMembers(em, account)];
      const wallets = await em.find(Wallet, { user: { $in: members } }, { fields: ['address'] });
      const open = await em.find(
        Trade,
        {
          status: 'open',
          expiresAt: { $gt: new Date() },
          proposerUserId: { $in: proposers },
          counterpartyWallet: { $in: wallets.map((wallet) => wallet.address) },
        },
        { orderBy: { id: 'asc' } },
      );
      const cancelledTrades: string[] = [];
      for (const trade of open)
        if (await closeUnlessClosed(trade, actor.userId)) cancelledTrades.push(trade.id);
      return { userId: refused, createdAt: refusal.createdAt.toISOString(), cancelledTrades };
    },

    async unrefuse(account, userId) {
      const em = orm.em.fork();
      const refused = await accountOf(em, userId);
      const deleted =
        refused === null
          ? 0
          : await em.nativeDelete(TradeRefusal, { refuserUserId: account, refusedUserId: refused });
      if (!deleted) throw new NotFoundError(`You do not refuse trade proposals from ${userId}.`);
    },

    async listRefusals(account, { limit, cursor }) {
      const rows = await pageById(orm.em.fork(), TradeRefusal, [{ refuserUserId: account }], {
        list: 'trade-refusals',
        order: 'newest',
        limit,
        cursor,
      });
      return mapPage(rows, (row) => ({ userId: row.refusedUserId, createdAt: row.createdAt.toISOString() }));
    },
  };
}
