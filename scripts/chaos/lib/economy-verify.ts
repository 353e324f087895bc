// The economy crash run's verification (./economy-crash.ts), with the service up and quiet: the
// ledger holds exactly what the answers said, read from the database (behind the service's back:
// counters, purchase, draw, sale and listing rows, holdings) and through the API (events, supplies,
// owners, offers, wallets). Each finding is one line given to `fail`. Timed currency grants (lots of
// season currency): each acknowledged grant's units found again, in the lots left and the sweep's
// burns (each burned once, with its transfer row and its `itemExpired`), and
// `sum(lots) + reserved <= balance` for every holding (also sampled during the run).
import { call, type Session } from '../../lib/api.ts';
import type { LocalCrashableService } from './crashable-service.ts';
import {
  type Acknowledged,
  COLLECTION,
  FEE_BPS,
  FEE_WALLET,
  FOUNDERS_PER_WALLET,
  GEM,
  GOLD,
  HERB,
  INITIAL,
  type Pair,
  PRICES,
  ROYALTY_BPS,
  SEASON,
} from './economy-model.ts';
import { formatUnits, parseUnits } from './ledger-setup.ts';
import { allPages, type EventEnvelope, eventsAfter } from './rest.ts';

export interface EconomyFigures {
  crafts: number;
  trades: number;
  /** Acknowledged store purchases (the Chest bundle and the Founders pack). */
  purchases: number;
  openings: number;
  /** Acknowledged marketplace purchases of listings. */
  sales: number;
  /** Timed Passes burned and loans returned by the sweep. */
  expired: number;
  /** Acknowledged timed grants of season currency, and lots (or their moved parts) the sweep burned. */
  grants: number;
  lotsBurned: number;
  /** Acknowledged bids, and auctions the keeper settled as sold. */
  bids: number;
  auctionsSold: number;
}

const ZERO = '0x0000000000000000000000000000000000000000';
const lower = (address: unknown) => String(address).toLowerCase();
const amount = (value: unknown) => BigInt(String(value ?? '0'));

/** Every lot with its holding, in one statement (one snapshot, even while the service writes). */
export const LOTS_WITHIN_BALANCES =
  'select l.id, l.wallet, l.asset_id, l.amount, l.source_id, h.balance, h.reserved from currency_lot l ' +
  'left join holding h on h.wallet = l.wallet and h.asset_id = l.asset_id';

/** The holdings (rows of LOTS_WITHIN_BALANCES) where `sum(lots) + reserved <= balance` fails. */
export function lotsBeyondBalances(rows: Record<string, unknown>[]): string[] {
  const findings: string[] = [];
  const holdings = new Map<string, { lots: bigint; balance: unknown; reserved: unknown }>();
  for (const row of rows) {
    if (amount(row.amount) <= 0n) findings.push(`lot ${row.id} of ${row.amount}`);
    const key = `${row.asset_id} of ${row.wallet}`;
    const holding = holdings.get(key) ?? { lots: 0n, balance: row.balance, reserved: row.reserved };
    holding.lots += amount(row.amount);
    holdings.set(key, holding);
  }
  for (const [key, holding] of holdings)
    if (holding.balance == null || holding.lots + amount(holding.reserved) > amount(holding.balance))
      findings.push(
        `${key}: lots ${holding.lots} + reserved ${holding.reserved} > balance ${holding.balance}`,
      );
  return findings;
}

export async function verifyEconomy(options: {
  service: LocalCrashableService;
  studio: Session;
  pairs: Pair[];
  acknowledged: Acknowledged;
  watermark: bigint;
  offers: { chest: string; founders: string; foundersLimit: number };
  fail: (message: string) => void;
  log?: (line: string) => void;
}): Promise<EconomyFigures> {
  const { service, studio, pairs, acknowledged, offers } = options;
  const fail = (condition: boolean, message: string) => {
    if (condition) options.fail(message);
  };
  const rows = (sql: string) => service.rows(sql);
  const read = <T>(path: string, session: Session = studio) =>
    call<T>(service.baseUrl, 'GET', path, { session });
  const sum = (list: readonly Pair[], of: (pair: Pair) => number) =>
    list.reduce((total, pair) => total + of(pair), 0);

  // Every item that ended is swept (returned or burned) before anything is read: the sweep runs
  // every 250 ms, and only the first round may make an item ending after the run's last second.
  const sweptBy = Date.now() + 20_000;
  let pending = 0;
  for (;;) {
    pending =
      (await service.count('select count(*) as n from asset where expires_at is not null')) +
      (await service.count(`select count(*) as n from auction where status = 'open'`)) +
      (await service.count('select count(*) as n from currency_lot'));
    if (pending === 0 || Date.now() > sweptBy) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  fail(
    pending > 0,
    `${pending} items still have an end time, lots left or auctions open, 20 s after the run`,
  );
  options.log?.(`economy: every item past its end swept ${Date.now() - sweptBy + 20_000} ms after the load`);

  // Every read behind the service's back at once (each on a connection of its own).
  const queries = {
    purchases: 'select id, offer_id, wallet, quantity from store_purchase',
    offerRows: 'select id, sold, limit_total, limit_per_wallet from store_offer',
    walletRows: 'select offer_id, wallet, bought from store_offer_wallet',
    draws: 'select id, asset_id, seed_id, nonce from draw',
    chests: `select id, owner from asset where name = 'Chest' and collection_id = '${COLLECTION}'`,
    transferRows: 'select asset_id, from_address, to_address from transfer',
    seeds: 'select id, next_nonce from draw_seed',
    relics: `select id, owner from asset where name = 'Relic' and collection_id = '${COLLECTION}'`,
    sales: 'select id, listing_id, buyer_wallet from sale',
    auctions: 'select id, status, asset_id, best_bid, best_bidder, operation_id from auction',
    listings: 'select id, status, asset_id, operation_id from listing',
    passes: `select id, owner, lender from asset where name = 'Pass' and collection_id = '${COLLECTION}'`,
    holdings: 'select wallet, asset_id, balance, reserved from holding',
    supplies: `select asset_id as id, total_supply from asset_supply where asset_id in ('${HERB}', '${GOLD}', '${GEM}', '${SEASON}')`,
    lots: LOTS_WITHIN_BALANCES,
    seasonBurns: `select id, from_address, amount from transfer where asset_id = '${SEASON}' and to_address = '${ZERO}'`,
  };
  const fetched = Object.fromEntries(
    Object.entries(queries).map(([name, sql]) => [name, rows(sql)]),
  ) as Record<keyof typeof queries, Promise<Record<string, unknown>[]>>;
  const events = await eventsAfter(service.baseUrl, studio, options.watermark);
  const byType = (type: string) => events.filter((event) => event.type === type);
  const countBy = (list: EventEnvelope[], key: (event: EventEnvelope) => string) => {
    const counts = new Map<string, number>();
    for (const event of list) counts.set(key(event), (counts.get(key(event)) ?? 0) + 1);
    return counts;
  };
  const exactlyOnce = (counts: Map<string, number>, ids: Iterable<string>, what: string) => {
    const wanted = new Set(ids);
    const missing = [...wanted].filter((id) => (counts.get(id) ?? 0) === 0);
    const doubled = [...wanted].filter((id) => (counts.get(id) ?? 0) > 1);
    const extra = [...counts.keys()].filter((id) => !wanted.has(id));
    fail(
      missing.length > 0,
      `${what}: ${missing.length} acknowledged without an event (${missing.slice(0, 3)})`,
    );
    fail(doubled.length > 0, `${what}: ${doubled.length} with several events (${doubled.slice(0, 3)})`);
    fail(extra.length > 0, `${what}: ${extra.length} events no answer acknowledged (${extra.slice(0, 3)})`);
  };

  // The auctions as the keeper settled them: their settlements are acknowledged by no answer.
  const auctions = await fetched.auctions;
  const settlements = new Set(
    auctions.filter((row) => row.status === 'sold').map((row) => String(row.operation_id)),
  );
  // --- Operations: each acknowledged one applied exactly once, and nothing else applied. ---------
  const allOf = <K extends keyof Pair>(key: K) => pairs.flatMap((pair) => pair[key] as unknown[]);
  const purchaseIds = pairs.flatMap((pair) => pair.purchases.map((p) => p.operationId));
  const foundersIds = pairs.flatMap((pair) => pair.founders);
  const openingIds = pairs.flatMap((pair) => pair.openings.map((o) => o.operationId));
  const saleIds = pairs.flatMap((pair) => pair.sales.map((s) => s.operationId));
  exactlyOnce(
    countBy(byType('storePurchase'), (event) => event.data.id),
    [...purchaseIds, ...foundersIds],
    'storePurchase',
  );
  exactlyOnce(
    countBy(byType('lootBoxOpened'), (event) => event.data.id),
    openingIds,
    'lootBoxOpened',
  );
  exactlyOnce(
    countBy(byType('auctionBid'), (event) => `${event.data.id} ${parseUnits(String(event.data.bestBid))}`),
    pairs.flatMap((pair) => pair.bids.map((bid) => `${pair.auction} ${bid}`)),
    'auctionBid',
  );
  exactlyOnce(
    countBy(byType('auctionEnded'), (event) => event.data.id),
    pairs.map((pair) => String(pair.auction)),
    'auctionEnded',
  );
  exactlyOnce(
    countBy(byType('sale'), (event) => event.data.id),
    [...saleIds, ...settlements],
    'sale',
  );
  exactlyOnce(
    countBy(byType('listingCreated'), (event) => event.data.id),
    allOf('listings') as string[],
    'listingCreated',
  );
  exactlyOnce(
    countBy(byType('newNFT'), (event) => event.data.id),
    acknowledged.operations.flatMap((operation) => operation.nfts),
    'newNFT',
  );
  // Every newTransfer is an acknowledged answer's, an expiry's (its itemExpired names it), a loan's
  // (a lend answers the asset, not the transfer: counted per Lantern below) or an auction
  // settlement's (under the settled auction's operationId).
  const expiries = byType('itemExpired');
  const expiryTransfers = new Set(expiries.map((event) => event.data.transferId));
  // A lot's burn is the currency variant of itemExpired: with `amount`.
  const lotExpiries = expiries.filter((event) => event.data.amount !== undefined);
  const lanterns = new Set(pairs.map((pair) => pair.lantern));
  const transfers = byType('newTransfer');
  exactlyOnce(
    countBy(
      transfers.filter(
        (event) =>
          !expiryTransfers.has(event.data.id) &&
          !lanterns.has(event.data.assetId) &&
          !settlements.has(String((event as { operationId?: string }).operationId)),
      ),
      (event) => event.data.id,
    ),
    acknowledged.operations.flatMap((operation) => operation.transfers),
    'newTransfer',
  );
  // An operation's events share its operationId (the answer's id).
  const operationOf = new Map(events.map((event) => [`${event.type} ${event.data.id}`, event]));
  for (const operation of acknowledged.operations) {
    if (!operation.operationId) continue;
    const stray = [
      ...operation.transfers.map((id) => operationOf.get(`newTransfer ${id}`)),
      ...operation.nfts.map((id) => operationOf.get(`newNFT ${id}`)),
    ].filter((event) => event && (event as { operationId?: string }).operationId !== operation.operationId);
    fail(
      stray.length > 0,
      `${operation.kind} ${operation.operationId}: ${stray.length} of its events under another operationId`,
    );
  }

  // Store purchases: the rows, the offer's units sold and each wallet's units equal what was bought.
  const purchases = await fetched.purchases;
  const offerRows = await fetched.offerRows;
  const walletRows = await fetched.walletRows;
  for (const [offer, ids, perWallet] of [
    [offers.chest, purchaseIds, (pair: Pair) => pair.purchases.length],
    [offers.founders, foundersIds, (pair: Pair) => pair.founders.length],
  ] as const) {
    const stored = purchases.filter((row) => row.offer_id === offer);
    const storedIds = new Set(stored.map((row) => String(row.id)));
    fail(
      storedIds.size !== ids.length || ids.some((id) => !storedIds.has(id)),
      `${offer}: ${stored.length} purchase rows, ${ids.length} acknowledged purchases`,
    );
    fail(
      stored.some((row) => Number(row.quantity) !== 1),
      `${offer}: a purchase row of another quantity than 1`,
    );
    const row = offerRows.find((each) => each.id === offer);
    fail(Number(row?.sold) !== ids.length, `${offer}: sold ${row?.sold}, acknowledged ${ids.length}`);
    fail(
      Number(row?.sold) > Number(row?.limit_total),
      `${offer}: sold ${row?.sold} past its total limit ${row?.limit_total}`,
    );
    for (const pair of pairs) {
      const buyer = offer === offers.chest ? pair.a : pair.b;
      const counted = walletRows.find(
        (each) => each.offer_id === offer && lower(each.wallet) === lower(buyer.wallet),
      );
      fail(
        Number(counted?.bought ?? 0) !== perWallet(pair),
        `${offer}: ${buyer.wallet} counted ${counted?.bought ?? 0}, acknowledged ${perWallet(pair)}`,
      );
      fail(
        Number(counted?.bought ?? 0) > Number(row?.limit_per_wallet),
        `${offer}: ${buyer.wallet} bought past the per-wallet limit`,
      );
    }
    const [first] = pairs;
    const served = await read<{ sold: number; walletBought: number }>(
      `/api/v1/store-offers/${offer}?wallet=${offer === offers.chest ? first.a.wallet : first.b.wallet}`,
    );
    fail(
      served.sold !== ids.length || served.walletBought !== perWallet(first),
      `${offer}: GET answers sold ${served.sold}, walletBought ${served.walletBought}`,
    );
  }
  // The Founders pack refused a wallet only at a limit (its own 3, or the offer's total).
  for (const pair of pairs.filter((each) => each.foundersRefused))
    fail(
      pair.founders.length < FOUNDERS_PER_WALLET && foundersIds.length < offers.foundersLimit,
      `${pair.b.wallet}: refused the Founders pack after ${pair.founders.length} units, ${foundersIds.length} of ${offers.foundersLimit} sold`,
    );

  // Openings: one draw row per acknowledged opening, each Chest burned once with one outcome, each
  // seed's nonces taken without a gap.
  const draws = await fetched.draws;
  const drawIds = new Set(draws.map((row) => String(row.id)));
  fail(
    drawIds.size !== openingIds.length || openingIds.some((id) => !drawIds.has(id)),
    `${draws.length} draw rows, ${openingIds.length} acknowledged openings`,
  );
  const chests = await fetched.chests;
  const chestIds = pairs.flatMap((pair) => pair.purchases.map((p) => p.chest));
  fail(chests.length !== chestIds.length, `${chests.length} Chests exist, ${chestIds.length} bought`);
  // A burned NFT keeps its row, owned by the zero address.
  const unburned = (list: Record<string, unknown>[]) =>
    list.filter((row) => lower(row.owner) !== ZERO).map((row) => String(row.id));
  fail(unburned(chests).length > 0, `Chests not burned: ${unburned(chests).slice(0, 3)}`);
  const drawsPerChest = new Map<string, number>();
  for (const row of draws)
    drawsPerChest.set(String(row.asset_id), (drawsPerChest.get(String(row.asset_id)) ?? 0) + 1);
  fail(
    chestIds.some((chest) => drawsPerChest.get(chest) !== 1),
    `Chests without exactly one draw: ${chestIds.filter((chest) => drawsPerChest.get(chest) !== 1).slice(0, 3)}`,
  );
  const transferRows = await fetched.transferRows;
  const movesOf = new Map<string, { from: string; to: string }[]>();
  for (const row of transferRows) {
    const list = movesOf.get(String(row.asset_id)) ?? [];
    list.push({ from: lower(row.from_address), to: lower(row.to_address) });
    movesOf.set(String(row.asset_id), list);
  }
  fail(
    chestIds.some((chest) => movesOf.get(chest)?.length !== 1 || movesOf.get(chest)?.[0].to !== ZERO),
    'a Chest moved otherwise than by one burn',
  );
  const seeds = await fetched.seeds;
  for (const pair of pairs) {
    const nonces = draws
      .filter((row) => row.seed_id === pair.seedId)
      .map((row) => Number(row.nonce))
      .sort((x, y) => x - y);
    const next = Number(seeds.find((row) => row.id === pair.seedId)?.next_nonce);
    fail(
      nonces.some((nonce, index) => nonce !== index) ||
        next !== nonces.length ||
        nonces.length !== pair.openings.length,
      `${pair.seedId}: nonces ${nonces.join(',')}, next ${next}, ${pair.openings.length} openings acknowledged`,
    );
    const answered = pair.openings.map((opening) => opening.nonce).sort((x, y) => x - y);
    fail(JSON.stringify(answered) !== JSON.stringify(nonces), `${pair.seedId}: answered nonces ${answered}`);
  }
  const relics = await fetched.relics;
  for (const pair of pairs) {
    const won = pair.openings.filter((opening) => opening.entry === 'relic');
    fail(
      won.some((opening) => !opening.relic),
      `${pair.a.wallet}: a Relic drawn without its NFT`,
    );
    const held = relics
      .filter((row) => lower(row.owner) === lower(pair.a.wallet))
      .map((row) => String(row.id));
    fail(
      JSON.stringify(held.sort()) !== JSON.stringify(won.map((opening) => opening.relic).sort()),
      `${pair.a.wallet}: holds ${held.length} Relics, drew ${won.length}`,
    );
  }
  fail(
    relics.length !== sum(pairs, (pair) => pair.openings.filter((o) => o.entry === 'relic').length),
    `${relics.length} Relics exist`,
  );

  // The marketplace: each acknowledged purchase of a listing sold it once; no listing sold twice or
  // left active; every Potion where the answers put it.
  const sales = await fetched.sales;
  const listings = await fetched.listings;
  const salesPerListing = new Map<string, number>();
  for (const row of sales)
    salesPerListing.set(String(row.listing_id), (salesPerListing.get(String(row.listing_id)) ?? 0) + 1);
  fail(
    [...salesPerListing.values()].some((count) => count > 1),
    `listings sold twice: ${[...salesPerListing].filter(([, count]) => count > 1).map(([id]) => id)}`,
  );
  // An auction's sale row holds the auction's id as its listing.
  const auctionIds = new Set(auctions.map((row) => String(row.id)));
  const listingSales = sales.filter((row) => !auctionIds.has(String(row.listing_id)));
  const saleRowIds = new Set(listingSales.map((row) => String(row.id)));
  fail(
    saleRowIds.size !== saleIds.length || saleIds.some((id) => !saleRowIds.has(id)),
    `${listingSales.length} sale rows, ${saleIds.length} acknowledged purchases of listings`,
  );
  fail(
    listings.length !== allOf('listings').length,
    `${listings.length} listings, ${allOf('listings').length} acknowledged`,
  );
  for (const pair of pairs)
    for (const sale of pair.sales) {
      const listing = listings.find((row) => row.id === sale.listing);
      fail(
        listing?.status !== 'sold' || listing.operation_id !== sale.operationId,
        `${sale.listing}: ${listing?.status} under ${listing?.operation_id}, bought under ${sale.operationId}`,
      );
      const row = sales.find((each) => each.id === sale.operationId);
      fail(
        row?.listing_id !== sale.listing || lower(row?.buyer_wallet) !== lower(pair.b.wallet),
        `${sale.operationId}: sale of ${row?.listing_id} to ${row?.buyer_wallet}`,
      );
    }
  // Each auction settled once, when its end came: sold to b's last acknowledged bid (one sale row
  // under the settlement's operation id), or unsold without a bid.
  for (const pair of pairs) {
    const row = auctions.find((each) => each.id === pair.auction);
    const best = pair.bids.at(-1);
    const sold = sales.filter((each) => each.listing_id === pair.auction);
    fail(
      best === undefined
        ? row?.status !== 'unsold' || sold.length > 0
        : row?.status !== 'sold' ||
            amount(row.best_bid) !== best ||
            lower(row.best_bidder) !== lower(pair.b.wallet) ||
            sold.length !== 1 ||
            sold[0].id !== row.operation_id,
      `${pair.auction}: ${row?.status} at ${row?.best_bid} to ${row?.best_bidder} with ${sold.length} sales; acknowledged bids ${pair.bids.map(formatUnits)}`,
    );
  }
  // Through the API, the pairs side by side.
  await Promise.all(
    pairs.map(async (pair) => {
      const potionsOf = async (player: Session) =>
        (
          await allPages<{ asset: { id: string; name: string } }>(
            service.baseUrl,
            player,
            `/wallets/${player.wallet}/assets?kind=nft`,
          )
        )
          .filter((holding) => holding.asset.name === 'Potion')
          .map((holding) => holding.asset.id)
          .sort();
      const sold = new Set(pair.sales.map((sale) => sale.potion));
      const [ofA, ofB] = [await potionsOf(pair.a), await potionsOf(pair.b)];
      fail(
        JSON.stringify(ofA) !== JSON.stringify(pair.potions.filter((id) => !sold.has(id)).sort()) ||
          JSON.stringify(ofB) !== JSON.stringify([...sold].sort()),
        `${pair.a.wallet}: Potions held ${ofA.length} (b ${ofB.length}), acknowledged crafts ${pair.crafts}, sales ${sold.size}`,
      );
      const sword = await read<{ owner: string }>(`/assets/${pair.sword}`);
      fail(
        sword.owner !== pair.owner.wallet,
        `${pair.sword}: owned by ${sword.owner}, expected ${pair.owner.wallet}`,
      );
      const trophy = await read<{ owner: string }>(`/assets/${pair.trophy}`);
      const winner = pair.bids.length > 0 ? pair.b : pair.a;
      fail(
        trophy.owner !== winner.wallet,
        `${pair.trophy}: owned by ${trophy.owner} after its auction, expected ${winner.wallet}`,
      );
      for (const trade of pair.trades) {
        const stored = await read<{ status: string; operationId: string }>(
          `/api/v1/trades/${trade.id}`,
          pair.a,
        );
        fail(
          stored.status !== 'accepted' || stored.operationId !== trade.operationId,
          `${trade.id}: ${stored.status} under ${stored.operationId}, acknowledged under ${trade.operationId}`,
        );
      }
      const open = await allPages(service.baseUrl, pair.a, '/api/v1/trades?status=open');
      fail(open.length > 0, `${pair.a.wallet}: ${open.length} trades left open`);
    }),
  );

  // Items that expire: each Pass burned once from its holder at its end, each loan of a Lantern
  // returned once, and none moved after its end but by its expiry.
  const expiriesOf = (assetId: string) => expiries.filter((event) => event.data.assetId === assetId);
  const movesEvents = (assetId: string) => transfers.filter((event) => event.data.assetId === assetId);
  const passes = await fetched.passes;
  const passIds = pairs.flatMap((pair) => pair.passes.map((pass) => pass.id));
  fail(passes.length !== passIds.length, `${passes.length} Passes exist, ${passIds.length} granted`);
  fail(unburned(passes).length > 0, `Passes past their end not burned: ${unburned(passes).slice(0, 3)}`);
  for (const pair of pairs)
    for (const pass of pair.passes) {
      const [expiry, ...more] = expiriesOf(pass.id);
      const holder = pass.passedIn ? pair.b.wallet : pair.a.wallet;
      fail(
        !expiry ||
          more.length > 0 ||
          expiry.data.outcome !== 'burned' ||
          lower(expiry.data.holder) !== lower(holder) ||
          Date.parse(expiry.data.expiresAt) !== Date.parse(pass.expiresAt),
        `${pass.id}: ${1 + more.length - (expiry ? 0 : 1)} itemExpired, ${JSON.stringify(expiry?.data)}`,
      );
      const moves = movesEvents(pass.id);
      const late = moves.filter(
        (event) =>
          event.data.id !== expiry?.data.transferId &&
          Date.parse(event.data.createdAt) >= Date.parse(pass.expiresAt),
      );
      fail(
        late.length > 0 ||
          moves.length !== (pass.passedIn ? 2 : 1) ||
          (movesOf.get(pass.id)?.length ?? 0) !== moves.length,
        `${pass.id}: ${moves.length} moves (${late.length} after its end), ${movesOf.get(pass.id)?.length ?? 0} transfer rows`,
      );
    }
  for (const pair of pairs) {
    const returns = expiriesOf(pair.lantern);
    const moves = movesEvents(pair.lantern);
    const lends = moves.filter((event) => !expiryTransfers.has(event.data.id));
    fail(
      returns.length !== pair.loans.length ||
        lends.length !== pair.loans.length ||
        returns.some(
          (event) => event.data.outcome !== 'returned' || lower(event.data.to) !== lower(pair.a.wallet),
        ) ||
        lends.some(
          (event) =>
            lower(event.data.from) !== lower(pair.a.wallet) || lower(event.data.to) !== lower(pair.b.wallet),
        ),
      `${pair.lantern}: ${pair.loans.length} loans acknowledged, ${lends.length} lent, ${returns.length} returned`,
    );
    // In event order: lent, returned at that loan's end, lent again, … never moved in between.
    moves.forEach((event, index) => {
      const loan = pair.loans[Math.floor(index / 2)];
      const isReturn = index % 2 === 1;
      fail(
        !loan ||
          isReturn !== expiryTransfers.has(event.data.id) ||
          (!isReturn && Date.parse(event.data.createdAt) >= Date.parse(loan.expiresAt)),
        `${pair.lantern}: move ${index} (${event.data.id}) out of the lend/return order`,
      );
    });
    fail(
      (movesOf.get(pair.lantern)?.length ?? 0) !== 2 * pair.loans.length,
      `${pair.lantern}: transfer rows differ`,
    );
    // `lender` and `expiresAt` are present only while the item has an end time.
    const lantern = await read<{ owner: string; lender?: string | null; expiresAt?: string | null }>(
      `/assets/${pair.lantern}`,
    );
    fail(
      lantern.owner !== pair.a.wallet ||
        (lantern.lender ?? null) !== null ||
        (lantern.expiresAt ?? null) !== null,
      `${pair.lantern}: ${JSON.stringify(lantern)} after its loans`,
    );
  }

  // Timed currency grants: each lot burned once (one transfer row from its holder to the zero
  // address, of the amount its one itemExpired names; the newTransfer is counted above), and each
  // acknowledged grant's units found again, whole, in its lots left and its parts' burns (a part
  // moved to b keeps the grant's source and end; one lot per holder and grant, a move merging).
  const seasonBurns = new Map((await fetched.seasonBurns).map((row) => [String(row.id), row]));
  exactlyOnce(
    countBy(lotExpiries, (event) => event.data.transferId),
    seasonBurns.keys(),
    'itemExpired of a lot',
  );
  for (const event of lotExpiries) {
    const row = seasonBurns.get(event.data.transferId);
    fail(
      event.data.assetId !== SEASON ||
        event.data.outcome !== 'burned' ||
        lower(row?.from_address) !== lower(event.data.holder) ||
        amount(row?.amount) !== parseUnits(event.data.amount),
      `lot burn ${event.data.transferId}: ${JSON.stringify(event.data)}, transfer row ${JSON.stringify(row)}`,
    );
  }
  const lots = await fetched.lots;
  for (const finding of lotsBeyondBalances(lots)) options.fail(finding);
  const claimed = new Set<EventEnvelope>();
  for (const pair of pairs) {
    const holders = [pair.a.wallet, pair.b.wallet].map(lower);
    for (const grant of pair.grants) {
      const left = lots.filter((row) => row.source_id === grant.transferId);
      const burned = lotExpiries.filter(
        (event) =>
          holders.includes(lower(event.data.holder)) &&
          Date.parse(event.data.expiresAt) === Date.parse(grant.expiresAt),
      );
      for (const event of burned) claimed.add(event);
      const found =
        left.reduce((total, row) => total + amount(row.amount), 0n) +
        burned.reduce((total, event) => total + parseUnits(event.data.amount), 0n);
      const parts = holders.map(
        (holder) =>
          left.filter((row) => lower(row.wallet) === holder).length +
          burned.filter((event) => lower(event.data.holder) === holder).length,
      );
      fail(
        found !== grant.amount ||
          parts.some((count) => count > 1) ||
          left.some((row) => !holders.includes(lower(row.wallet))),
        `grant ${grant.transferId} of ${formatUnits(grant.amount)} ending ${grant.expiresAt}: ${formatUnits(found)} found, ${left.length} lots left, ${burned.length} burned`,
      );
    }
  }
  const grantIds = new Set(pairs.flatMap((pair) => pair.grants.map((grant) => grant.transferId)));
  const strayLots = lots.filter((row) => !grantIds.has(String(row.source_id)));
  fail(strayLots.length > 0, `${strayLots.length} lots of no acknowledged grant`);
  const strayBurns = lotExpiries.filter((event) => !claimed.has(event));
  fail(
    strayBurns.length > 0,
    `${strayBurns.length} lot burns of no acknowledged grant (${strayBurns.slice(0, 3).map((event) => event.data.transferId)})`,
  );

  // Currencies: supply == sum of balances == what the answers minted and burned, every balance as
  // the acknowledged operations left it, reserved within balance everywhere.
  const expected = new Map<string, Map<string, bigint>>([
    [HERB, new Map()],
    [GOLD, new Map()],
    [GEM, new Map()],
    [SEASON, new Map()],
  ]);
  const add = (currency: string, wallet: string, delta: bigint) => {
    const balances = expected.get(currency) as Map<string, bigint>;
    balances.set(lower(wallet), (balances.get(lower(wallet)) ?? 0n) + delta);
  };
  const royalty = (PRICES.listing * ROYALTY_BPS) / 10_000n;
  const fee = (PRICES.listing * FEE_BPS) / 10_000n;
  for (const pair of pairs) {
    const { a, b } = pair;
    add(HERB, a.wallet, INITIAL - PRICES.craftHerb * BigInt(pair.crafts));
    add(HERB, b.wallet, INITIAL);
    add(GOLD, a.wallet, INITIAL);
    add(GOLD, b.wallet, INITIAL);
    const granted = pair.grants.reduce((total, grant) => total + grant.amount, 0n);
    const sent = pair.seasonSent.reduce((total, each) => total + each, 0n);
    add(SEASON, a.wallet, INITIAL + granted - sent);
    add(SEASON, b.wallet, sent);
    pair.trades.forEach((_, index) => {
      // The Sword starts with a, so a proposes the even trades and receives their gold.
      const [seller, buyer] = index % 2 === 0 ? [a, b] : [b, a];
      add(GOLD, seller.wallet, PRICES.trade);
      add(GOLD, buyer.wallet, -PRICES.trade);
    });
    const bought = BigInt(pair.purchases.length);
    add(GOLD, a.wallet, -PRICES.chest * bought);
    add(GOLD, studio.wallet, PRICES.chest * bought);
    add(GEM, a.wallet, PRICES.chestGem * bought);
    add(GEM, a.wallet, PRICES.drawGem * BigInt(pair.openings.filter((o) => o.entry === 'gem').length));
    const founders = BigInt(pair.founders.length);
    add(GOLD, b.wallet, -PRICES.founders * founders);
    add(GOLD, studio.wallet, PRICES.founders * founders);
    add(GEM, b.wallet, PRICES.foundersGem * founders);
    const sold = BigInt(pair.sales.length);
    add(GOLD, b.wallet, -PRICES.listing * sold);
    add(GOLD, a.wallet, (PRICES.listing - royalty - fee) * sold);
    add(GOLD, studio.wallet, royalty * sold);
    add(GOLD, FEE_WALLET, fee * sold);
    const best = pair.bids.at(-1);
    if (best !== undefined) {
      const [auctionRoyalty, auctionFee] = [(best * ROYALTY_BPS) / 10_000n, (best * FEE_BPS) / 10_000n];
      add(GOLD, b.wallet, -best);
      add(GOLD, a.wallet, best - auctionRoyalty - auctionFee);
      add(GOLD, studio.wallet, auctionRoyalty);
      add(GOLD, FEE_WALLET, auctionFee);
    }
  }
  // What the sweep burned of the lots, from their holders (each burn checked above).
  for (const event of lotExpiries) add(SEASON, event.data.holder, -parseUnits(event.data.amount));
  const holdings = await fetched.holdings;
  const overReserved = holdings.filter((row) => amount(row.reserved) > amount(row.balance));
  fail(overReserved.length > 0, `${overReserved.length} holdings reserve more than their balance`);
  // Every bid was paid or released and every Trophy released from escrow when its auction settled.
  const stillReserved = holdings.filter((row) => amount(row.reserved) !== 0n);
  fail(
    stillReserved.length > 0,
    `${stillReserved.length} holdings still reserve something after the auctions settled (${stillReserved
      .slice(0, 3)
      .map((row) => `${row.asset_id} of ${row.wallet}: ${row.reserved}`)})`,
  );
  const supplies = await fetched.supplies;
  for (const [currency, balances] of expected) {
    const want = [...balances.values()].reduce((total, each) => total + each, 0n);
    const stored = amount(supplies.find((row) => row.id === currency)?.total_supply);
    const held = holdings
      .filter((row) => row.asset_id === currency)
      .reduce((total, row) => total + amount(row.balance), 0n);
    const served = parseUnits((await read<{ totalSupply: string }>(`/assets/${currency}`)).totalSupply);
    fail(
      stored !== want || held !== want || served !== want,
      `${currency}: total_supply ${formatUnits(stored)} (served ${formatUnits(served)}), sum of balances ${formatUnits(held)}, expected ${formatUnits(want)}`,
    );
    const owners = await allPages<{ wallet: string; balance: string }>(
      service.baseUrl,
      studio,
      `/assets/${currency}/owners`,
    );
    const seen = new Set<string>();
    for (const owner of owners) {
      seen.add(lower(owner.wallet));
      const balance = parseUnits(owner.balance);
      const wanted = balances.get(lower(owner.wallet)) ?? 0n;
      fail(
        balance !== wanted,
        `${currency} of ${owner.wallet}: ${owner.balance}, expected ${formatUnits(wanted)}`,
      );
    }
    for (const [wallet, wanted] of balances)
      fail(
        !seen.has(wallet) && wanted !== 0n,
        `${currency} of ${wallet}: none, expected ${formatUnits(wanted)}`,
      );
  }

  return {
    crafts: sum(pairs, (pair) => pair.crafts),
    trades: sum(pairs, (pair) => pair.trades.length),
    purchases: purchaseIds.length + foundersIds.length,
    openings: openingIds.length,
    sales: saleIds.length,
    expired: expiries.length - lotExpiries.length,
    grants: sum(pairs, (pair) => pair.grants.length),
    lotsBurned: lotExpiries.length,
    bids: sum(pairs, (pair) => pair.bids.length),
    auctionsSold: settlements.size,
  };
}
