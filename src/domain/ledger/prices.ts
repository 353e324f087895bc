// Prices posted by oracles, the current price per quote currency, and OHLC candles of the history.

import type { Database } from '../../db/database.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { PriceObservation } from '../../db/entities/PriceObservation.ts';
import { NotFoundError, ValidationError } from '../errors.ts';
import type { Actor } from './actor.ts';
import { formatAmount, parseAmount } from './amounts.ts';
import type { AssetRow } from './asset-rows.ts';
import { assetNotFound } from './assets.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import { newPriceEvent } from './outbox.ts';
import type { LedgerStore } from './store/plan.ts';
import { type PriceView, priceView } from './views.ts';
import { applyWrite, earlierAnswerOr } from './writes.ts';

const ASSET_COLLECTION = 'select collection_id from asset where id = ?';

/** The `source` of the prices the marketplace records at each NFT sale (./market-context.ts, `marketPrice`). */
export const MARKET_SOURCE = 'market';

/** Prices are kept exactly, to 18 fractional digits (`priceScaled` = price × 10^18). */
const PRICE_DECIMALS = 18;
const MAX_FUTURE_MS = 5 * 60_000;
const MAX_CANDLES = 1000;
const INTERVAL_MS = { '1m': 60_000, '1h': 3_600_000, '1d': 86_400_000 } as const;

export type PriceInterval = keyof typeof INTERVAL_MS;

export interface PostPriceInput {
  price: string;
  currency: string;
  source: string;
  observedAt?: string;
}

export interface Candle {
  start: string;
  open: string;
  high: string;
  low: string;
  close: string;
  count: number;
}

export interface PriceHistory {
  assetId: string;
  currency: string;
  interval: PriceInterval;
  from: string;
  to: string;
  candles: Candle[];
}

export interface HistoryQuery {
  currency: string;
  interval: PriceInterval;
  from?: string;
  to?: string;
}

export interface PriceService {
  post(
    actor: Actor,
    assetId: string,
    input: PostPriceInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<PriceView>>;
  current(assetId: string, currency: string): Promise<PriceView>;
  history(assetId: string, query: HistoryQuery): Promise<PriceHistory>;
}

class RangeTooLargeError extends ValidationError {
  constructor(detail: string) {
    super(detail, undefined, '/problems/range-too-large');
  }
}

/**
 * The effective `[from, to)`: `from` rounded down to an interval boundary, at most 1000 intervals.
 * Without `from`, the default span (24 h; 1000 minutes for `1m`) ends on `to` and starts on the first
 * boundary that keeps the range within the limit.
 */
export function candleRange(
  interval: PriceInterval,
  now: Date,
  from?: string,
  to?: string,
): { from: number; to: number } {
  const width = INTERVAL_MS[interval];
  const end = to === undefined ? now.getTime() : Date.parse(to);
  if (from !== undefined && Date.parse(from) >= end) {
    throw new ValidationError('`from` must be before `to`.', [
      { pointer: '/query/from', detail: 'must be before `to`' },
    ]);
  }
  let start: number;
  if (from === undefined) {
    // 1000 minutes rounded down would be 1001 intervals, so the 1m default rounds up instead.
    start =
      interval === '1m'
        ? Math.ceil((end - MAX_CANDLES * width) / width) * width
        : Math.floor((end - 86_400_000) / width) * width;
  } else {
    start = Math.floor(Date.parse(from) / width) * width;
  }
  const intervals = Math.ceil((end - start) / width);
  if (intervals > MAX_CANDLES) {
    throw new RangeTooLargeError(
      `${new Date(start).toISOString()} to ${new Date(end).toISOString()} spans ${intervals} intervals of ${interval}; the limit is ${MAX_CANDLES}.`,
    );
  }
  return { from: start, to: end };
}

/** Folds observations (ascending by observedAt, then posting order) into candles. */
export function toCandles(
  observations: Pick<PriceObservation, 'observedAt' | 'priceScaled'>[],
  interval: PriceInterval,
): Candle[] {
  const width = INTERVAL_MS[interval];
  const candles: Candle[] = [];
  let current:
    | { start: number; open: bigint; high: bigint; low: bigint; close: bigint; count: number }
    | undefined;
  const flush = () => {
    if (!current) return;
    const fmt = (units: bigint) => formatAmount(units, PRICE_DECIMALS);
    candles.push({
      start: new Date(current.start).toISOString(),
      open: fmt(current.open),
      high: fmt(current.high),
      low: fmt(current.low),
      close: fmt(current.close),
      count: current.count,
    });
  };
  for (const observation of observations) {
    const start = Math.floor(observation.observedAt.getTime() / width) * width;
    const price = observation.priceScaled as bigint;
    if (current?.start !== start) {
      flush();
      current = { start, open: price, high: price, low: price, close: price, count: 0 };
    }
    if (price > current.high) current.high = price;
    if (price < current.low) current.low = price;
    current.close = price;
    current.count++;
  }
  flush();
  return candles;
}

export function createPriceService(
  { orm, reads }: Database,
  idempotency: Idempotency,
  store: LedgerStore,
): PriceService {
  return {
    async post(actor, assetId, input, idempotencyKey) {
      const scaled = parseAmount(input.price, PRICE_DECIMALS, { pointer: '/body/price', label: 'price' });
      const now = new Date();
      const observedAt = input.observedAt === undefined ? now : new Date(input.observedAt);
      if (observedAt.getTime() > now.getTime() + MAX_FUTURE_MS) {
        throw new ValidationError('observedAt is more than 5 minutes in the future.', [
          { pointer: '/body/observedAt', detail: 'must not be more than 5 minutes in the future' },
        ]);
      }
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'postPrice',
        key: idempotencyKey,
        request: { assetId, ...input },
      });
      // An asset's collection never changes, and an asset is never deleted: no guard needed.
      const [asset] = await reads.all<Pick<AssetRow, 'collection_id'>>(ASSET_COLLECTION, [assetId]);
      if (!asset) return earlierAnswerOr(idempotency, key, assetNotFound(assetId));
      const price = formatAmount(scaled, PRICE_DECIMALS);
      const view: PriceView = {
        assetId,
        price,
        currency: input.currency,
        source: input.source,
        observedAt: observedAt.toISOString(),
      };
      return applyWrite(
        store,
        idempotency,
        key,
        {
          at: now,
          guards: [],
          prices: [
            {
              assetId,
              price,
              priceScaled: scaled,
              currency: input.currency,
              source: input.source,
              observedAt,
              postedBy: actor.userId,
              createdAt: now,
            },
          ],
          events: [newPriceEvent(view, asset.collection_id as string, now)],
        },
        { status: 201, body: view, headers: {} },
        () => new Error('a price post has no guard'),
      );
    },

    async current(assetId, currency) {
      const em = orm.em.fork();
      const asset = await em.findOne(Asset, { id: assetId }, { fields: ['kind'] });
      if (!asset) throw assetNotFound(assetId);
      // Back-filled observations feed the history; the current price is the latest observed one. An
      // NFT's is its last marketplace sale in the currency when it has one (issue 35, source
      // `market`), the oracles' otherwise; a currency's stays the oracles'.
      const order = { orderBy: [{ observedAt: 'desc' as const }, { id: 'desc' as const }], limit: 1 };
      if (asset.kind === 'nft') {
        const [sale] = await em.find(
          PriceObservation,
          { asset: assetId, currency, source: MARKET_SOURCE },
          order,
        );
        if (sale) return priceView(sale);
      }
      const [latest] = await em.find(PriceObservation, { asset: assetId, currency }, order);
      if (latest) return priceView(latest);
      throw new NotFoundError(
        `Asset ${assetId} has no price in ${currency} yet.`,
        '/problems/price-not-found',
      );
    },

    async history(assetId, query) {
      const range = candleRange(query.interval, new Date(), query.from, query.to);
      const em = orm.em.fork();
      if (!(await em.count(Asset, { id: assetId }))) throw assetNotFound(assetId);
      const observations = await em.find(
        PriceObservation,
        {
          asset: assetId,
          currency: query.currency,
          observedAt: { $gte: new Date(range.from), $lt: new Date(range.to) },
        },
        { orderBy: [{ observedAt: 'asc' }, { id: 'asc' }], fields: ['observedAt', 'priceScaled'] },
      );
      return {
        assetId,
        currency: query.currency,
        interval: query.interval,
        from: new Date(range.from).toISOString(),
        to: new Date(range.to).toISOString(),
        candles: toCandles(observations, query.interval),
      };
    },
  };
}
