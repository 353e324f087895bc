// The market keeper (issue 35): a loop on EVERY instance that ends what time ended: auctions past
// their end (settled: ./auctions.ts), listings and offers past their expiry, each in its own ledger
// plan guarded on the row still being open, so two instances (or a restart re-reading the same rows)
// apply each end exactly once: the second plan is a rejected no-op (no second row change, no second
// event). Nothing is leased: the guards decide. Issue 36: the same loop expires items at their end
// time (./expiries.ts: returned to their lender or burned), guarded the same way.
import type { Logger } from '../../observability/logger.ts';
import type { ExpiryService } from './expiries.ts';
import type { MarketService } from './market.ts';

/** Rows one pass takes per kind; a pass repeats while a kind fills its batch. */
const BATCH = 100;
/**
 * Issue 36: items due one pass takes: the sweep expires up to 50 a plan (./expiries.ts), so a larger
 * read keeps several plans in flight (100,000 rentals ending at one instant, docs/benchmarks.md).
 */
const ITEM_BATCH = 400;

export interface MarketSweep {
  listingsExpired: number;
  offersExpired: number;
  auctionsSettled: number;
  /** Issue 36: items returned to their lender or burned at their end time, and timed currency lots burned. */
  itemsExpired: number;
}

export interface MarketKeeper {
  /** One pass now (the loop's passes never overlap this one). */
  sweep(now?: Date): Promise<MarketSweep>;
  stop(): Promise<void>;
}

export function startMarketKeeper(
  market: MarketService,
  logger: Logger,
  everyMs: number,
  expiries?: ExpiryService,
): MarketKeeper {
  let running: Promise<MarketSweep> | null = null;
  let stopped = false;

  async function pass(now: Date): Promise<MarketSweep> {
    const done: MarketSweep = { listingsExpired: 0, offersExpired: 0, auctionsSettled: 0, itemsExpired: 0 };
    for (;;) {
      const auctions = await market.settleAuctions(now, BATCH);
      const listings = await market.expireListings(now, BATCH);
      const offers = await market.expireOffers(now, BATCH);
      const items = expiries ? await expiries.expireDue(now, ITEM_BATCH) : 0;
      done.itemsExpired += items;
      done.auctionsSettled += auctions;
      done.listingsExpired += listings;
      done.offersExpired += offers;
      // A full batch may have more behind it; a batch whose rows all closed meanwhile ends the pass.
      if (stopped || (Math.max(auctions, listings, offers) < BATCH && items < ITEM_BATCH)) return done;
    }
  }

  async function sweep(now = new Date()): Promise<MarketSweep> {
    while (running) await running.catch(() => undefined);
    running = pass(now);
    try {
      return await running;
    } finally {
      running = null;
    }
  }

  const timer = setInterval(() => {
    if (running || stopped) return;
    sweep().then(
      (done) => {
        if (done.listingsExpired + done.offersExpired + done.auctionsSettled + done.itemsExpired > 0)
          logger.info(done, 'market sweep');
      },
      (error: unknown) => logger.warn({ err: error }, 'market sweep failed'),
    );
  }, everyMs);
  timer.unref();

  return {
    sweep,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
