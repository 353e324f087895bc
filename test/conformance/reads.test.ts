// One suite, both adapters: the hot reads (src/domain/ledger/reads/: the port, its SQLite adapter with
// its listings thread and fixed-view cache, its PostgreSQL adapter) must give the same answers for the
// same ledger: pages and cursors, filters, empty wallets and users, frozen, lent and expiring items,
// timed currency units (lots), asset owners, refusals, the change keys each answer names, and a change
// visible as soon as it is committed (the SQLite adapter's thread and kept fixed views included), and
// the listings' two statements (narrow, or wide when most assets listed lately were not kept) agreeing
// and chosen as described (src/domain/ledger/reads/holdings.ts), what the wide statement read kept only
// when seen again lately (src/domain/ledger/reads/fixed-views.ts), with no read of lots for a page
// that has none. Each case asserts its answers on both databases; the last compares the two
// databases' answers whole (ids and creation times replaced by labels, pages by their items).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Wallet } from '../../src/db/entities/Wallet.ts';
import { formatAddress, type StoredAddress } from '../../src/domain/ledger/addresses.ts';
import type { FixedAssetRow } from '../../src/domain/ledger/asset-rows.ts';
import { decodeCursor, isString } from '../../src/domain/ledger/cursor.ts';
import { fixedViews, fixedViewsSql } from '../../src/domain/ledger/reads/fixed-views.ts';
import { listingReads } from '../../src/domain/ledger/reads/holdings.ts';
import {
  assetChangeKeys,
  assetOwnersChangeKeys,
  type HoldingFilters,
  type ListingRequest,
  type Reads,
} from '../../src/domain/ledger/reads/index.ts';
import { zeroBalanceOf } from '../../src/domain/ledger/reads/zero.ts';
import type { AssetView } from '../../src/domain/ledger/views.ts';
import { assetKey, holdersKey, userKey, walletKey } from '../../src/events/change-keys.ts';
import { DB_KINDS, type TestDatabaseKind } from '../helpers/db.ts';
import { createUser, type LedgerFixture, openLedger, type TestUser } from '../helpers/ledger-fixtures.ts';

const metadata = {
  image: 'https://cdn.example.com/x.png',
  attributes: [{ trait_type: 'rarity', value: 'rare' }],
  creator: 'Studio',
};
/** A second wallet of the studio's user (linked), and a wallet nobody holds anything in. */
const LINKED = '0x00000000000000000000000000000000000000c3' as StoredAddress;
const NOBODY = '0x2222222222222222222222222222222222222222' as StoredAddress;
/** The end time of the loan and of the expiring ticket: the same on both databases, whole seconds. */
const UNTIL = new Date(Math.floor(Date.now() / 1000) * 1000 + 86_400_000).toISOString();
const NOT_A_CURSOR = 'bm90LWEtY3Vyc29y';

/** Each database's answers, labelled (`normalized`), compared at the end. */
const answers = new Map<TestDatabaseKind, Record<string, unknown>>();

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Every page of a listing, following its cursors. */
async function allPages<T extends { next_cursor: string | null }>(
  read: (cursor: string | undefined) => Promise<T>,
): Promise<T[]> {
  const pages: T[] = [];
  let cursor: string | undefined;
  do {
    const next = await read(cursor);
    pages.push(next);
    cursor = next.next_cursor ?? undefined;
  } while (cursor !== undefined && pages.length < 50);
  return pages;
}

describe.each(DB_KINDS)('reads conformance on %s', (kind) => {
  let fx: LedgerFixture;
  let reads: Reads;
  let studio: TestUser;
  let other: TestUser;
  let borrower: TestUser;
  /** NFT id by the name it was created with (names are unique in this ledger). */
  const nfts = new Map<string, string>();
  const recorded: Record<string, unknown> = {};

  async function nft(
    actor: TestUser,
    name: string,
    fields: { collection?: string; expiresAt?: string } = {},
  ) {
    const created = await fx.ledger.assets.createNft(actor, { name, metadata, ...fields });
    nfts.set(name, created.body.id);
    return created.body.id;
  }

  /**
   * `value` with ids, wallets, creation times, personal collections and cursors replaced by labels the
   * same on both databases.
   */
  function normalized(value: unknown): unknown {
    let text = JSON.stringify(value);
    for (const [name, id] of nfts) text = text.replaceAll(id, `nft:${name}`);
    const wallets: [string, string][] = [
      [studio.wallet, 'studio'],
      [other.wallet, 'other'],
      [borrower.wallet, 'borrower'],
      [LINKED, 'linked'],
      [studio.userId, 'studio-user'],
      [other.userId, 'other-user'],
      [borrower.userId, 'borrower-user'],
    ];
    for (const [address, label] of wallets) text = text.replace(new RegExp(address, 'gi'), `<${label}>`);
    text = text.replace(/"createdAt":"[^"]+"/g, '"createdAt":"<date>"');
    // A user's personal collection is named after the user's id.
    text = text.replace(/"collection":"user-[^"]+"/g, '"collection":"<personal>"');
    text = text.replace(/"next_cursor":"[^"]+"/g, '"next_cursor":"<cursor>"');
    return JSON.parse(text);
  }

  /** Records a labelled answer for the comparison of the two databases. */
  function record(name: string, value: unknown): void {
    recorded[name] = normalized(value);
  }

  beforeAll(async () => {
    fx = await openLedger(kind);
    reads = fx.ledger.reads;
    studio = await createUser(fx, 'studio');
    other = await createUser(fx);
    borrower = await createUser(fx);
    await fx.orm.em
      .fork()
      .insert(Wallet, { address: LINKED, user: studio.userId, kind: 'linked', createdAt: new Date() });
    for (const id of ['conf-a', 'conf-b'])
      await fx.ledger.collections.create(studio, {
        id,
        name: `Collection ${id}`,
        metadataPolicy: { name: true },
      });
    const currency = (id: string, decimals: number, collection: string) =>
      fx.ledger.assets.createCurrency(studio, {
        id,
        name: id,
        symbol: id.slice(0, 4).toUpperCase(),
        decimals,
        collection,
        metadata,
      });
    await currency('gold', 2, 'conf-a');
    await currency('silver', 0, 'conf-b');
    const mint = (id: string, to: string, amount: string) =>
      fx.ledger.assets.mint(studio, id, { to: to as StoredAddress, amount });
    await mint('gold', studio.wallet, '12.5');
    await mint('gold', other.wallet, '1');
    await mint('gold', LINKED, '0.25');
    await mint('silver', studio.wallet, '3');
    for (const name of ['Sword', 'Shield', 'Helm']) await nft(studio, name, { collection: 'conf-a' });
    await nft(studio, 'Banner', { collection: 'conf-b' });
    // Frozen: a currency the studio froze.
    await fx.ledger.assetUpdates.setFrozen(studio, 'silver', true);
    // Lent: the studio's NFT, with the borrower until UNTIL; expiring: the borrower's own ticket.
    const loan = await nft(studio, 'Loan', { collection: 'conf-b' });
    await fx.ledger.expiries.lend(studio, loan, {
      from: studio.wallet as StoredAddress,
      to: borrower.wallet as StoredAddress,
      expiresAt: UNTIL,
    });
    await nft(borrower, 'Ticket', { expiresAt: UNTIL });
    // Timed currency units (issue 36): a lot of 1.5 bronze of the borrower's 5.5 ends at UNTIL.
    await currency('bronze', 1, 'conf-b');
    await mint('bronze', borrower.wallet, '4');
    await fx.ledger.assets.mint(studio, 'bronze', {
      to: borrower.wallet as StoredAddress,
      amount: '1.5',
      expiresAt: UNTIL,
    });
  });

  afterAll(async () => {
    answers.set(kind, recorded);
    await fx?.close();
  });

  it('answers an empty wallet and a user holding nothing with empty pages', async () => {
    const empty = await reads.walletAssets(NOBODY, { limit: 10 });
    expect(empty).toEqual({ wallet: NOBODY, data: [], next_cursor: null });
    const none = await reads.userAssets(other.userId, { limit: 10, kind: 'nft' });
    expect(none).toEqual({ data: [], next_cursor: null });
    expect(await reads.userWallets(other.userId)).toEqual([other.wallet]);
    const listed = await reads.listing({ op: 'walletAssets', wallet: NOBODY, filters: { limit: 10 } });
    expect(JSON.parse(listed.body.toString('utf8'))).toEqual(empty);
    expect(listed).toMatchObject({ assetIds: [], wallets: [], keys: [walletKey(NOBODY)] });
    record('empty', { empty, none });
  });

  it("pages a wallet's holdings by asset id, its cursors covering each holding once, with filters", async () => {
    const wallet = studio.wallet as StoredAddress;
    const whole = await reads.walletAssets(wallet, { limit: 100 });
    const ids = whole.data.map((holding) => holding.asset.id);
    expect(ids).toEqual([...ids].sort());
    expect(new Set(ids)).toEqual(
      new Set(['gold', 'silver', ...['Sword', 'Shield', 'Helm', 'Banner'].map((name) => nfts.get(name))]),
    );
    expect(whole.wallet).toBe(formatAddress(wallet));
    const pages = await allPages((cursor) => reads.walletAssets(wallet, { limit: 2, cursor }));
    expect(pages.map((page) => page.data.length)).toEqual([2, 2, 2]);
    expect(pages.flatMap((page) => page.data)).toEqual(whole.data);
    expect(pages.at(-1)?.next_cursor).toBeNull();
    // A cursor names the last asset of its page.
    expect(decodeCursor(pages[0].next_cursor ?? undefined, 'wallet-assets', isString)).toBe(ids[1]);
    const byKind = await reads.walletAssets(wallet, { limit: 10, kind: 'fungible' });
    expect(byKind.data.map((holding) => [holding.asset.id, holding.balance])).toEqual([
      ['gold', '12.5'],
      ['silver', '3'],
    ]);
    const inB = await allPages((cursor) =>
      reads.walletAssets(wallet, { limit: 1, collection: 'conf-b', kind: 'nft', cursor }),
    );
    expect(inB.flatMap((page) => page.data.map((holding) => holding.asset.name))).toEqual(['Banner']);
    expect(inB).toHaveLength(1);
    record('wallet', {
      whole: byName(whole.data),
      sizes: pages.map((page) => page.data.length),
      byKind,
      inB,
    });
  });

  it("pages a user's holdings across the wallets the user controls, by wallet then asset", async () => {
    const whole = await reads.userAssets(studio.userId, { limit: 100 });
    const keys = whole.data.map((holding) => `${holding.wallet.toLowerCase()} ${holding.asset.id}`);
    expect(keys).toEqual([...keys].sort());
    expect(whole.data.filter((holding) => holding.wallet.toLowerCase() === LINKED)).toEqual([
      { wallet: formatAddress(LINKED), asset: expect.objectContaining({ id: 'gold' }), balance: '0.25' },
    ]);
    const pages = await allPages((cursor) => reads.userAssets(studio.userId, { limit: 3, cursor }));
    expect(pages.map((page) => page.data.length)).toEqual([3, 3, 1]);
    expect(pages.flatMap((page) => page.data)).toEqual(whole.data);
    const gold = await reads.userAssets(studio.userId, { limit: 10, kind: 'fungible', collection: 'conf-a' });
    expect(gold.data.map((holding) => holding.balance).sort()).toEqual(['0.25', '12.5']);
    expect(new Set(await reads.userWallets(studio.userId))).toEqual(new Set([studio.wallet, LINKED]));
    record('user', { whole: byName(whole.data), sizes: pages.map((page) => page.data.length) });
  });

  it('lists frozen, lent and expiring items exactly as the asset read shows them', async () => {
    const silver = await reads.asset('silver');
    expect(silver).toMatchObject({
      kind: 'fungible',
      frozen: true,
      frozenBy: studio.userId,
      totalSupply: '3',
    });
    const held = await reads.walletAssets(borrower.wallet as StoredAddress, { limit: 10 });
    const byId = new Map(held.data.map((holding) => [holding.asset.id, holding.asset]));
    const loan = byId.get(nfts.get('Loan') as string);
    const ticket = byId.get(nfts.get('Ticket') as string);
    expect(loan).toMatchObject({
      owner: formatAddress(borrower.wallet),
      lender: formatAddress(studio.wallet),
      expiresAt: UNTIL,
    });
    expect(ticket).toMatchObject({ owner: formatAddress(borrower.wallet), lender: null, expiresAt: UNTIL });
    // Only the holding with lots lists them.
    expect(held.data.filter((holding) => 'expiring' in holding)).toEqual([
      expect.objectContaining({ balance: '5.5', expiring: [{ amount: '1.5', expiresAt: UNTIL }] }),
    ]);
    expect(held.data.filter((holding) => 'expiring' in holding)[0].asset.id).toBe('bronze');
    record('borrower', held.data);
    const everyAsset: Record<string, AssetView> = {};
    for (const holding of [
      ...held.data,
      ...(await reads.walletAssets(studio.wallet as StoredAddress, { limit: 100 })).data,
    ]) {
      expect(await reads.asset(holding.asset.id)).toEqual(holding.asset);
      everyAsset[holding.asset.name] = holding.asset;
    }
    expect(everyAsset.silver).toEqual(silver);
    expect(everyAsset.Sword).toMatchObject({ kind: 'nft', frozen: false, frozenBy: null, burned: false });
    expect(everyAsset.Sword).not.toHaveProperty('expiresAt');
    record('assets', everyAsset);
  });

  it("pages an asset's owners by wallet; an unknown asset is a 404 on both reads", async () => {
    const whole = await reads.assetOwners('gold', { limit: 10 });
    const expected = [
      [studio.wallet, '12.5'],
      [other.wallet, '1'],
      [LINKED, '0.25'],
    ].sort(([a], [b]) => (a < b ? -1 : 1));
    expect(whole.data).toEqual(
      expected.map(([wallet, balance]) => ({ wallet: formatAddress(wallet), balance })),
    );
    expect(whole).toMatchObject({ assetId: 'gold', next_cursor: null });
    const pages = await allPages((cursor) => reads.assetOwners('gold', { limit: 1, cursor }));
    expect(pages.map((page) => page.data.length)).toEqual([1, 1, 1]);
    expect(pages.flatMap((page) => page.data)).toEqual(whole.data);
    const sword = await reads.assetOwners(nfts.get('Sword') as string, { limit: 10 });
    expect(sword.data).toEqual([{ wallet: formatAddress(studio.wallet), balance: '1' }]);
    // One at a time: a second read's rejection must not settle while nothing awaits it yet.
    for (const read of [() => reads.asset('nope'), () => reads.assetOwners('nope', { limit: 1 })])
      expect(await rejection(read())).toMatchObject({ status: 404, detail: 'No asset with id nope.' });
    // By wallet: the order of the addresses differs between databases, their labels do not.
    const byWallet = Object.fromEntries(whole.data.map((owner) => [owner.wallet, owner.balance]));
    record('owners', { byWallet, sizes: pages.map((page) => page.data.length), sword });
  });

  it('refuses a cursor of another list as a 400 naming the cursor, on every listing', async () => {
    const filters: HoldingFilters = { limit: 5, cursor: NOT_A_CURSOR };
    const refusals = [
      reads.walletAssets(studio.wallet as StoredAddress, filters),
      reads.userAssets(studio.userId, filters),
      reads.assetOwners('gold', filters),
      reads.listing({ op: 'walletAssets', wallet: studio.wallet as StoredAddress, filters }),
      reads.listing({ op: 'userAssets', userId: studio.userId, filters }),
    ];
    for (const refusal of refusals)
      expect(await rejection(refusal)).toMatchObject({
        status: 400,
        type: '/problems/validation-failed',
        errors: [{ pointer: '/query/cursor', detail: 'is not a cursor of this list' }],
      });
  });

  it('answers a listing as its page serialized, naming the change keys of what it shows', async () => {
    const wallet = studio.wallet as StoredAddress;
    const request: ListingRequest = { op: 'walletAssets', wallet, filters: { limit: 3 } };
    const listed = await reads.listing(request);
    const page = await reads.walletAssets(wallet, { limit: 3 });
    expect(listed.body.toString('utf8')).toBe(JSON.stringify(page));
    expect(listed.assetIds).toEqual(page.data.map((holding) => holding.asset.id));
    expect(listed.keys).toEqual([walletKey(wallet), ...listed.assetIds.map(assetKey)]);
    const mine = await reads.listing({ op: 'userAssets', userId: studio.userId, filters: { limit: 100 } });
    expect(JSON.parse(mine.body.toString('utf8'))).toEqual(
      await reads.userAssets(studio.userId, { limit: 100 }),
    );
    expect(new Set(mine.wallets)).toEqual(new Set([studio.wallet, LINKED]));
    expect(mine.keys).toEqual([
      userKey(studio.userId),
      ...mine.wallets.map(walletKey),
      ...mine.assetIds.map(assetKey),
    ]);
    const sword = nfts.get('Sword') as string;
    expect(assetChangeKeys(await reads.asset(sword))).toEqual([assetKey(sword), holdersKey(sword)]);
    expect(assetChangeKeys(await reads.asset('gold'))).toEqual([assetKey('gold')]);
    expect(assetOwnersChangeKeys('gold')).toEqual([holdersKey('gold')]);
  });

  it('lists the same pages with the fixed columns read in the listing statement or in another', async () => {
    const wallet = studio.wallet as StoredAddress;
    const expected = {
      wallet: await reads.walletAssets(wallet, { limit: 100 }),
      pages: await allPages((cursor) => reads.userAssets(studio.userId, { limit: 2, cursor })),
    };
    // Always wide, never wide: each listed twice, with nothing kept and then with everything kept.
    for (const wideAbove of [-1, Number.POSITIVE_INFINITY]) {
      const listings = listingReads(fx.database.reads, zeroBalanceOf(fx.orm), () => 0, { wideAbove });
      for (let pass = 0; pass < 2; pass++) {
        expect(await listings.walletAssets(wallet, { limit: 100 })).toEqual(expected.wallet);
        expect(await allPages((cursor) => listings.userAssets(studio.userId, { limit: 2, cursor }))).toEqual(
          expected.pages,
        );
      }
    }
  });

  it('keeps an asset the wide statement read only when it is seen again lately, and as many as configured', async () => {
    // ASSET_VIEW_CACHE_ENTRIES: the views kept, and the ids the doorkeeper remembers.
    const most = 20;
    const views = fixedViews(fx.database.reads, () => 0, most);
    const [gold, silver] = await fx.database.reads.all<FixedAssetRow>(fixedViewsSql(2), ['gold', 'silver']);
    // Both at version 0: never updated.
    const version = 0;
    expect([gold.metadata_version, silver.metadata_version].map(Number)).toEqual([version, version]);
    const first = views.admit(gold);
    expect(Object.isFrozen(first)).toBe(false);
    expect(views.kept('gold', version)).toBeUndefined();
    const second = views.admit(gold);
    expect(second).toEqual(first);
    expect(Object.isFrozen(second)).toBe(true);
    expect(views.kept('gold', version)).toBe(second);
    // Seen once, then as many others as the doorkeeper holds: forgotten, so seen once again.
    views.admit(silver);
    for (let n = 0; n < most; n++) views.admit({ ...silver, id: `other-${n}` });
    const silverAgain = views.admit(silver);
    expect(views.kept('silver', version)).toBeUndefined();
    expect(views.admit(silver)).toEqual(silverAgain);
    expect(views.kept('silver', version)).toEqual(silverAgain);
    // Gold and silver kept, gold the least recently used: `most` - 1 more kept push gold out only.
    for (let n = 0; n < most - 1; n++) for (const _ of [1, 2]) views.admit({ ...gold, id: `kept-${n}` });
    expect(views.kept('gold', version)).toBeUndefined();
    expect(views.kept('silver', version)).toEqual(silverAgain);
    expect(views.kept('kept-0', version)).toBeDefined();
  });

  it('reads wide after listings of assets not kept, and narrow again once they are kept; no lots read when none exist', async () => {
    const wallet = studio.wallet as StoredAddress;
    const seen: string[] = [];
    const spied = {
      ...fx.database.reads,
      all: <R extends object>(sql: string, parameters: readonly unknown[]) => {
        seen.push(sql);
        return fx.database.reads.all<R>(sql, parameters);
      },
      arrays: (sql: string, parameters: readonly unknown[]) => {
        seen.push(sql);
        return fx.database.reads.arrays(sql, parameters);
      },
    };
    // Another process committing before every listing drops every kept view: nothing is kept.
    let commits = 0;
    const listings = listingReads(spied, zeroBalanceOf(fx.orm), () => commits);
    const expected = await reads.walletAssets(wallet, { limit: 100 });
    /**
     * The statements of one listing: 'narrow', 'wide', 'fixed' (a read of the fixed columns) and
     * 'lots' (of timed currency units: the wallet holds currencies but no lots, so never).
     */
    const listOnce = async () => {
      seen.length = 0;
      expect(await listings.walletAssets(wallet, { limit: 100 })).toEqual(expected);
      return seen.map((sql) => {
        if (sql.startsWith('select h.wallet')) return sql.includes('a.metadata,') ? 'wide' : 'narrow';
        return sql.includes('from currency_lot where') ? 'lots' : 'fixed';
      });
    };
    expect(await listOnce()).toEqual(['narrow', 'fixed']);
    let listed = 0;
    let statements: string[] = [];
    do {
      commits++;
      // The kept views are dropped on the next look, at most once a millisecond.
      await new Promise((resolve) => setTimeout(resolve, 2));
      statements = await listOnce();
      if (statements[0] === 'narrow') expect(statements).toEqual(['narrow', 'fixed']);
    } while (statements[0] === 'narrow' && ++listed < 30);
    expect(statements).toEqual(['wide']);
    // No more commits: what the wide statement read is kept, and listings turn narrow again.
    listed = 0;
    do statements = await listOnce();
    while (statements[0] === 'wide' && ++listed < 30);
    expect(statements).toEqual(['narrow']);
  });

  it('shows a committed change in the next read: balances, a transfer out, a new metadata version, a freeze', async () => {
    const wallet = studio.wallet as StoredAddress;
    const request: ListingRequest = { op: 'walletAssets', wallet, filters: { limit: 100 } };
    const listedNow = async () =>
      new Map(
        (
          JSON.parse((await reads.listing(request)).body.toString('utf8')) as {
            data: { asset: AssetView; balance: string }[];
          }
        ).data.map((holding) => [holding.asset.name, holding]),
      );
    // Read once first: the SQLite adapter's thread and both fixed-view caches now hold every asset.
    expect((await listedNow()).get('gold')?.balance).toBe('12.5');
    expect((await reads.walletAssets(wallet, { limit: 100 })).data).toHaveLength(6);
    const sword = nfts.get('Sword') as string;
    await fx.ledger.assets.mint(studio, 'gold', { to: wallet, amount: '0.5' });
    await fx.ledger.transfers.create(studio, {
      assetId: sword,
      from: wallet,
      to: other.wallet as StoredAddress,
      amount: '1',
    });
    await fx.ledger.assetUpdates.updateMetadata(studio, nfts.get('Shield') as string, {
      name: 'Tower shield',
    });
    await fx.ledger.assetUpdates.setFrozen(studio, 'gold', true);
    const after = await listedNow();
    expect(after.get('gold')).toMatchObject({ balance: '13', asset: { totalSupply: '14.25', frozen: true } });
    expect(after.has('Sword')).toBe(false);
    expect(after.has('Shield')).toBe(false);
    expect(after.get('Tower shield')?.asset).toMatchObject({ id: nfts.get('Shield'), metadataVersion: 1 });
    const onLoop = await reads.walletAssets(wallet, { limit: 100 });
    expect(new Map(onLoop.data.map((holding) => [holding.asset.name, holding]))).toEqual(after);
    expect(await reads.asset(sword)).toMatchObject({ owner: formatAddress(other.wallet) });
    expect((await reads.assetOwners(sword, { limit: 5 })).data).toEqual([
      { wallet: formatAddress(other.wallet), balance: '1' },
    ]);
    record('changed', byName(onLoop.data));
  });
});

/** Holdings keyed by their asset's name (the order of ids differs between databases; the names do not). */
function byName<T extends { asset: AssetView }>(holdings: T[]): Record<string, T> {
  return Object.fromEntries(
    holdings.map((holding) => [
      `${holding.asset.name} ${'wallet' in holding ? holding.wallet : ''}`,
      holding,
    ]),
  );
}

describe.runIf(DB_KINDS.length === 2)('reads conformance across databases', () => {
  it('gives the same answers on SQLite and PostgreSQL', () => {
    const sqlite = answers.get('sqlite');
    const postgres = answers.get('postgres');
    expect(Object.keys(sqlite ?? {})).toEqual([
      'empty',
      'wallet',
      'user',
      'borrower',
      'assets',
      'owners',
      'changed',
    ]);
    expect(postgres).toEqual(sqlite);
  });
});
