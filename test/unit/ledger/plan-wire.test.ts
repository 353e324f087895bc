// The PostgreSQL store's wire: `planJson` (src/domain/ledger/store/postgres.ts) writes a plan as JSON
// with short keys, and `gats_apply_plan` (src/db/functions/gats_apply_plan.sql) reads them. A key
// written and never read is a plan field PostgreSQL silently drops; a key read and never written is
// a column it silently sets to null. Both sides are listed here from their sources, part by part and
// guard kind by guard kind, and must be the same.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFLATE_FROM_BYTES } from '../../../src/db/stored-answer.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import type { Guard, NewEvent, Plan } from '../../../src/domain/ledger/store/plan.ts';
import { planJson } from '../../../src/domain/ledger/store/postgres.ts';

const FUNCTION_FILE = new URL('../../../src/db/functions/gats_apply_plan.sql', import.meta.url);

/** T with every optional member present: a field added to the plan's types must be added below. */
type Full<T> = { [K in keyof T]-?: Exclude<T[K], undefined> };
type FullPlan = {
  [K in keyof Plan]-?: NonNullable<Plan[K]> extends (infer Item)[]
    ? Full<Item>[]
    : Full<NonNullable<Plan[K]>>;
};

const at = new Date('2026-11-28T12:00:00.000Z');
const wallet = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' as StoredAddress;
const other = '0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359' as StoredAddress;

/** One guard of every kind, each with every optional member. */
const guards: { [Kind in Guard['kind']]: Full<Extract<Guard, { kind: Kind }>> } = {
  controls: { kind: 'controls', userId: 'usr_1', wallet },
  holds: { kind: 'holds', assetId: 'gold', wallet, atLeast: 5n, untimed: true },
  supplyWithin: { kind: 'supplyWithin', assetId: 'gold', adding: 5n, max: 100n },
  assetAbsent: { kind: 'assetAbsent', assetId: 'sword' },
  walletAbsent: { kind: 'walletAbsent', wallet: other },
  movable: { kind: 'movable', assetId: 'sword' },
  burnable: { kind: 'burnable', assetId: 'sword' },
  tradeOpen: { kind: 'tradeOpen', tradeId: 'trd_1', at },
  listingActive: { kind: 'listingActive', listingId: 'lst_1', at },
  offerOpen: { kind: 'offerOpen', offerId: 'ofr_1', at },
  reservedAtLeast: { kind: 'reservedAtLeast', assetId: 'gold', wallet, atLeast: 5n },
  auctionOpen: { kind: 'auctionOpen', auctionId: 'auc_1', at, ended: true, bestBid: 5n },
  assetVersion: { kind: 'assetVersion', assetId: 'sword', version: 2, frozen: false, owner: wallet },
  // ---- Stores (issue 36) ----
  offerAvailable: { kind: 'offerAvailable', offerId: 'sof_1', version: 1, wallet, quantity: 2, at },
  seedAt: { kind: 'seedAt', seedId: 'dsd_1', wallet, nonce: 3 },
  pityAt: { kind: 'pityAt', boxId: 'lbx_1', wallet, count: 4 },
  // ---- Items that expire (issue 36) ----
  assetExpiry: { kind: 'assetExpiry', assetId: 'sword', expiresAt: at, owner: wallet, due: true },
  // ---- Timed currency grants (issue 36) ----
  lotAt: { kind: 'lotAt', lotId: 'lot_1', assetId: 'gold', wallet, amount: 5n },
};

const event: Full<NewEvent> = {
  type: 'priceUpdate',
  occurredAt: at,
  data: {} as never,
  assetId: 'gold',
  collectionId: 'demo',
  wallets: [wallet],
  fromWallet: wallet,
  toWallet: other,
  onlyIfListingClosed: 'lst_1',
  operationId: 'op_2',
};

/** A plan with every part, every item with every optional member. */
const everything: FullPlan = {
  at,
  idempotency: {
    key: { id: 'idem_1', requestHash: 'hash', expiresAt: (now) => new Date(now.getTime() + 1000) },
    response: { status: 201, body: { ok: true }, headers: { location: '/x' } },
  },
  guards: Object.values(guards),
  assets: [
    {
      id: 'sword',
      kind: 'nft',
      name: 'Sword',
      description: 'Sharp',
      metadata: { image: 'https://example.com/sword.png' },
      collectionId: 'demo',
      creatorId: 'usr_1',
      symbol: 'SWD',
      decimals: 0,
      totalSupply: 1n,
      maxSupply: 1n,
      owner: wallet,
      soulbound: true,
      createdAt: at,
      expiresAt: at,
      lender: other,
      mintedTo: wallet,
    },
  ],
  wallets: [
    { address: other, userId: 'usr_2', kind: 'custodial', encryptedPrivateKey: 'sealed', createdAt: at },
  ],
  balances: [{ assetId: 'gold', wallet, delta: -5n }],
  supplies: [{ assetId: 'gold', delta: 5n }],
  owners: [{ assetId: 'sword', owner: other }],
  assetUpdates: [
    {
      assetId: 'sword',
      name: 'Blade',
      description: null,
      metadata: {},
      frozen: true,
      frozenBy: 'usr_1',
      soulbound: false,
      metadataVersion: 3,
      expiresAt: at,
      lender: other,
    },
  ],
  metadataVersions: [
    { assetId: 'sword', version: 3, name: 'Blade', metadata: {}, changedBy: 'usr_1', changedAt: at },
  ],
  trades: [
    {
      id: 'trd_1',
      status: 'open',
      proposerUserId: 'usr_1',
      proposerWallet: wallet,
      counterpartyWallet: other,
      offer: [{ assetId: 'gold', amount: '1' }],
      request: [{ assetId: 'sword', amount: '1' }],
      expiresAt: at,
      createdAt: at,
      updatedAt: at,
      operationId: 'op_1',
      closedBy: 'usr_2',
    },
  ],
  tradeStatuses: [{ tradeId: 'trd_1', status: 'accepted', by: 'usr_2', operationId: 'op_1', at }],
  listings: [
    {
      id: 'lst_1',
      sellerUserId: 'usr_1',
      sellerWallet: wallet,
      assetId: 'sword',
      collectionId: 'demo',
      amount: 1n,
      currencyId: 'gold',
      price: 100n,
      expiresAt: at,
      createdAt: at,
      metadata: { attributes: [{ trait_type: 'rarity', value: 'epic' }] },
    },
  ],
  listingStatuses: [
    { listingId: 'lst_1', status: 'ended', reason: 'moved', by: 'usr_2', operationId: 'op_1', at },
  ],
  sales: [
    {
      id: 'op_1',
      listingId: 'lst_1',
      assetId: 'sword',
      collectionId: 'demo',
      amount: 1n,
      currencyId: 'gold',
      price: 100n,
      royalty: 5n,
      fee: 2n,
      sellerProceeds: 93n,
      sellerWallet: wallet,
      buyerWallet: other,
      createdAt: at,
    },
  ],
  offers: [
    {
      id: 'ofr_1',
      bidderUserId: 'usr_2',
      bidderWallet: other,
      assetId: 'sword',
      collectionId: 'demo',
      trait: { type: 'rarity', value: 'rare' },
      currencyId: 'gold',
      price: 100n,
      expiresAt: at,
      createdAt: at,
    },
  ],
  offerStatuses: [
    { offerId: 'ofr_1', status: 'accepted', by: 'usr_1', operationId: 'op_1', soldAssetId: 'sword', at },
  ],
  reserves: [{ assetId: 'gold', wallet: other, delta: -100n }],
  // ---- Stores (issue 36) ----
  offerSales: [{ offerId: 'sof_1', wallet, quantity: 2 }],
  storePurchases: [
    {
      id: 'op_1',
      offerId: 'sof_1',
      version: 1,
      collectionId: 'demo',
      wallet,
      userId: 'usr_1',
      quantity: 2,
      paid: [{ assetId: 'gold', amount: '2' }],
      payTo: other,
      granted: [{ assetId: 'gems', amount: '20' }],
      createdAt: at,
    },
  ],
  seedNonces: [{ seedId: 'dsd_1', next: 4 }],
  pityCounts: [{ boxId: 'lbx_1', wallet, count: 5 }],
  draws: [
    {
      id: 'op_1',
      boxId: 'lbx_1',
      assetId: 'box_1',
      wallet,
      seedId: 'dsd_1',
      nonce: 3,
      data: {} as never,
      createdAt: at,
    },
  ],
  auctions: [
    {
      id: 'auc_1',
      sellerUserId: 'usr_1',
      sellerWallet: wallet,
      assetId: 'sword',
      collectionId: 'demo',
      currencyId: 'gold',
      reservePrice: 10n,
      minIncrement: 1n,
      endsAt: at,
      extensionSeconds: 300,
      createdAt: at,
    },
  ],
  auctionBids: [{ auctionId: 'auc_1', amount: 12n, bidder: other, bidderUserId: 'usr_2', endsAt: at, at }],
  auctionStatuses: [{ auctionId: 'auc_1', status: 'sold', operationId: 'op_1', at }],
  transfers: [
    {
      id: 'tx_1',
      assetId: 'gold',
      from: wallet,
      to: other,
      amount: 5n,
      requestedBy: 'usr_1',
      createdAt: at,
      lotId: 'lot_1',
    },
  ],
  // ---- Timed currency grants (issue 36) ----
  lots: [
    {
      id: 'lot_2',
      assetId: 'gold',
      wallet: other,
      amount: 5n,
      expiresAt: at,
      sourceId: 'tr_1',
      createdAt: at,
    },
  ],
  prices: [
    {
      assetId: 'gold',
      price: '1.5',
      priceScaled: 15n,
      currency: 'USD',
      source: 'oracle',
      observedAt: at,
      postedBy: 'usr_3',
      createdAt: at,
    },
  ],
  events: [event],
  operationId: 'op_1',
  ledgerChanges: [{ kind: 'walletLinked', occurredAt: at, userId: 'usr_1', wallet }],
  audit: [
    {
      at,
      action: 'asset.frozen',
      actorId: 'usr_1',
      objectType: 'asset',
      objectId: 'sword',
      ownerId: 'usr_1',
      collectionId: 'demo',
      body: '{}',
    },
  ],
};

/** The keys of one side: the top level, the idempotency record, each list's items, each guard kind. */
interface Wire {
  top: string[];
  record: string[];
  parts: Record<string, string[]>;
  guards: Record<string, string[]>;
}

const sorted = (keys: Iterable<string>) => [...new Set(keys)].sort();

/** The same plan with an answer large enough to travel deflated (`z` instead of `body`). */
const largeAnswer: FullPlan = {
  ...everything,
  idempotency: {
    key: everything.idempotency.key,
    response: { status: 201, body: { note: 'x'.repeat(DEFLATE_FROM_BYTES) }, headers: {} },
  },
};

/** What `planJson` writes for a plan with everything (the record: with a small and a large answer). */
function written(): Wire {
  const p = JSON.parse(planJson(everything as Plan)) as Record<string, unknown>;
  const large = JSON.parse(planJson(largeAnswer as Plan)) as { record: object };
  const parts: Record<string, string[]> = {};
  const guardKeys: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(p)) {
    if (name === 'guards') {
      for (const guard of value as Record<string, unknown>[])
        guardKeys[guard.k as string] = sorted(Object.keys(guard));
    } else if (Array.isArray(value)) {
      parts[name] = sorted(value.flatMap((item) => (typeof item === 'object' ? Object.keys(item) : [])));
    }
  }
  return {
    top: sorted(Object.keys(p)),
    record: sorted([...Object.keys(p.record as object), ...Object.keys(large.record)]),
    parts,
    guards: guardKeys,
  };
}

/** A key read from a jsonb variable: `v->'key'`, `v->>'key'` or `v ? 'key'`. */
const KEY_READ = /\b([a-z_]+)\s*(?:->>?|\?)\s*'([a-z_]+)'/g;

function keysRead(sql: string, variable: string): string[] {
  return [...sql.matchAll(KEY_READ)].filter((match) => match[1] === variable).map((match) => match[2]);
}

/**
 * What the function reads: `p` is the argument, `r` its idempotency record, and `e` the item of the
 * part that the latest `part := p->'name'` selected; in the guards' part, each `when 'kind'` block
 * reads its own keys (besides `k`, read by the `case`).
 */
function read(): Wire {
  const file = readFileSync(FUNCTION_FILE, 'utf8');
  const body = file.slice(file.indexOf('$body$') + '$body$'.length, file.lastIndexOf('$body$'));
  const sql = body.replace(/--[^\n]*/g, '');
  const parts: Record<string, string[]> = {};
  const guardKeys: Record<string, string[]> = {};
  const sections = sql.split(/\bpart := p->'([a-z_]+)';/);
  for (let i = 1; i < sections.length; i += 2) {
    const [name, section] = [sections[i], sections[i + 1]];
    const items = keysRead(section, 'e');
    if (name !== 'guards') {
      parts[name] = sorted([...(parts[name] ?? []), ...items]);
      continue;
    }
    const blocks = section.split(/^\s*when ((?:'[a-z_]+'(?:,\s*)?)+) then$/m);
    const common = keysRead(blocks[0], 'e');
    for (let b = 1; b < blocks.length; b += 2) {
      for (const [, kind] of blocks[b].matchAll(/'([a-z_]+)'/g)) {
        guardKeys[kind] = sorted([...common, ...keysRead(blocks[b + 1], 'e')]);
      }
    }
  }
  return { top: sorted(keysRead(sql, 'p')), record: sorted(keysRead(sql, 'r')), parts, guards: guardKeys };
}

describe("the PostgreSQL store's wire: planJson and gats_apply_plan", () => {
  it('writes every plan part, record key, item key and guard key that the function reads, and nothing else', () => {
    const function_ = read();
    const plan = written();
    // Lists of plain values (the lock lists) have no item keys; the function reads them by index.
    for (const name of ['asset_locks', 'supply_locks']) {
      expect(plan.parts[name], name).toEqual([]);
      expect(function_.parts[name], name).toEqual([]);
    }
    expect(plan).toEqual(function_);
  });

  it('finds what it compares: every guard kind of the plan, and the parts and keys a transfer needs', () => {
    const function_ = read();
    expect(Object.keys(function_.guards).sort()).toEqual([
      'asset_absent',
      'asset_expiry',
      'asset_version',
      'auction_open',
      'burnable',
      'controls',
      'holds',
      'listing_active',
      'lot_at', // timed currency grants (issue 36)
      'movable',
      'offer_available', // stores (issue 36)
      'offer_open', // offers (issue 35)
      'pity_at', // loot boxes (issue 36)
      'reserved', // offers (issue 35)
      'seed_at', // draws (issue 36)
      'supply',
      'trade_open',
      'wallet_absent',
    ]);
    expect(Object.keys(guards)).toHaveLength(Object.keys(function_.guards).length);
    expect(function_.parts.transfers).toEqual(['a', 'at', 'f', 'id', 'lot', 'n', 't', 'u']);
    expect(function_.parts.lots).toEqual(['a', 'id', 'n', 'src', 'w', 'x']);
    expect(function_.guards.asset_version).toEqual(['a', 'f', 'k', 'o', 'v']);
    // Issue 35: the trait floor's rows, written with a listing and with an item's new metadata.
    expect(function_.parts.listings).toContain('traits');
    expect(function_.parts.asset_updates).toContain('traits');
    expect(function_.top).toContain('op');
  });
});
