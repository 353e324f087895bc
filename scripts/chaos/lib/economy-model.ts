// The economy crash run's terms and the model its clients keep of what the answers acknowledged
// (./economy-crash.ts drives the run, ./economy-verify.ts checks the ledger against the model).
import type { Session } from '../../lib/api.ts';

export const COLLECTION = 'chaos-economy';
export const HERB = 'chaos-herb';
export const GOLD = 'chaos-gold';
export const GEM = 'chaos-gem';
/** The season currency: a holds INITIAL permanent units, and gets timed grants (lots) in the run. */
export const SEASON = 'chaos-season';
/** 1,000,000.00 of herb and gold per player: far more than a run spends (a craft burns 2.00). */
export const INITIAL = 100_000_000n;
/** Prices and grants in hundredths. */
export const PRICES = {
  craftHerb: 200n,
  trade: 100n,
  chest: 100n,
  chestGem: 50n,
  drawGem: 100n,
  founders: 10n,
  foundersGem: 100n,
  listing: 200n,
  reserve: 100n,
  increment: 10n,
  /** A timed grant of season currency to a, and what a then sends b of it (its lots spent first). */
  seasonGrant: 500n,
  seasonSpend: 300n,
};
/** The marketplace's cut of a listing's 2.00: 5 % royalty to the studio, 2.5 % fee. */
export const ROYALTY_BPS = 500n;
export const FEE_BPS = 250n;
export const FEE_WALLET = '0x00000000000000000000000000000000000fee01';
/** The Founders pack: units in all (scaled to the clients in the run) and per wallet. */
export const FOUNDERS_PER_WALLET = 3;
/** The drop table, in order: 1.00 gem, a Relic, nothing. */
export const DRAW_ENTRIES = ['gem', 'relic', 'nothing'] as const;

export interface Pair {
  a: Session;
  b: Session;
  sword: string;
  lantern: string;
  /** Who owns the Sword after every acknowledged acceptance (the model the ledger must match). */
  owner: Session;
  seedCommitment: string;
  seedId: string;
  crafts: number;
  potions: string[];
  trades: { id: string; operationId: string }[];
  /** Acknowledged store purchases of the Chest bundle, with the Chest each granted. */
  purchases: { operationId: string; chest: string; version: number }[];
  openings: {
    operationId: string;
    chest: string;
    nonce: number;
    entry: (typeof DRAW_ENTRIES)[number];
    relic?: string;
  }[];
  sales: { operationId: string; listing: string; potion: string }[];
  /** Listings created (each one then bought). */
  listings: string[];
  founders: string[];
  foundersRefused: boolean;
  /** Timed Passes granted to a, each with its end and whether a passed it to b (the transfer's id). */
  passes: { id: string; expiresAt: string; passedIn?: string }[];
  loans: { expiresAt: string }[];
  /**
   * Timed grants of season currency to a (each a lot, ending at a time of its own in the pair: the
   * lot's parts, in a and in b, are told apart by it), by the mint's transfer (the lots' source).
   */
  grants: { transferId: string; amount: bigint; expiresAt: string }[];
  /** a's acknowledged transfers of season currency to b, in hundredths. */
  seasonSent: bigint[];
  lanternFreeAt: number;
  /** a's Trophy, auctioned in the run (`auction`); b's acknowledged bids, in hundredths. */
  trophy: string;
  auction?: string;
  bids: bigint[];
  biddingOver: boolean;
  /** Whether one of its answered requests was resent yet (./economy-crash.ts, `resendAnswered`). */
  resent: boolean;
}

export interface Acknowledged {
  /** Every answer's transfers and NFTs, by the operation that made them. */
  operations: {
    kind:
      | 'craft'
      | 'trade'
      | 'purchase'
      | 'opening'
      | 'sale'
      | 'founders'
      | 'pass'
      | 'passOn'
      | 'grant'
      | 'seasonSent';
    operationId?: string;
    transfers: string[];
    nfts: string[];
  }[];
}
