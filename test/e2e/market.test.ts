// End to end: the explorer's market (issue 35), in Debian's Chromium against the real service with
// the demo seed (test/helpers/explorer-browser.ts: every API answer checked against the contract).
// Alice lists the Sword of Dawn from its asset page; bob sees the floor on the collection's market
// page and buys it (one purchase however often he clicks; alice paid, bob the owner, the last sale
// shown); a listing cancelled behind bob's back answers 409 listing-not-active, said on the page;
// bob offers for the Dragon Egg and alice accepts it after the confirmation; bob bids in an auction;
// a collection offer is made and cancelled; at 390 px wide nothing scrolls sideways; bob starts an
// auction of the Egg from its asset page (reserve, increment, end) and cancels it before any bid;
// alice makes a trait offer (a trait of the collection's items) that the Sword's holder can accept;
// 24 listings are shown cheapest first across two pages (the API's price order, not page by page).
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiSession,
  BROWSER_TESTS,
  type ExplorerHarness,
  hasChromium,
  ROOT,
  screenshot,
  signIn,
  startExplorerHarness,
  warnWithoutChromium,
} from '../helpers/explorer-browser.ts';

const SHOTS = path.join(ROOT, 'test-results', 'market');
const COLLECTION = 'dawn-quest';
warnWithoutChromium('market e2e');

/** Gold in hundredths (2 decimals), so sums compare exactly. */
const cents = (amount: string) => Math.round(Number(amount) * 100);

describe.skipIf(!hasChromium)('the explorer market in a real browser', BROWSER_TESTS, () => {
  let harness: ExplorerHarness;
  let alice: ApiSession;
  let bob: ApiSession;
  let alicePage: Page;
  let bobPage: Page;
  const ids: Record<string, string> = {};

  const api = <T = any>(method: string, urlPath: string, body?: unknown, headers?: Record<string, string>) =>
    harness.api<T>(method, urlPath, body, headers);
  const gold = async (who: ApiSession) => {
    const page = await api('GET', `/wallets/${who.wallet}/assets?kind=fungible`, undefined, who.headers);
    return page.data.find((holding: any) => holding.asset.id === 'gold')?.balance as string;
  };
  const marketUrl = () => `${harness.base}/explorer/collection/${COLLECTION}/market`;
  const noSidewaysScroll = (page: Page) =>
    page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth');

  beforeAll(async () => {
    harness = await startExplorerHarness();
    [alice, bob] = await Promise.all([harness.session('alice'), harness.session('bob')]);
    for (const who of [alice, bob]) {
      const nfts = await api('GET', '/api/v1/assets?kind=nft&limit=100', undefined, who.headers);
      for (const holding of nfts.data) ids[holding.asset.name] = holding.asset.id;
    }
    [alicePage, bobPage] = await Promise.all([harness.newPage(), harness.newPage()]);
  }, 120_000);

  afterAll(async () => {
    await harness?.stop();
  });

  it('signs both players in through the login page', async () => {
    await Promise.all([signIn(alicePage, harness.base, 'alice'), signIn(bobPage, harness.base, 'bob')]);
  }, 60_000);

  it('lists an item from its asset page; another player buys it once on the market page', async () => {
    const sword = ids['Sword of Dawn'];
    await alicePage.goto(`${harness.base}/explorer/asset/${sword}`);
    await alicePage.getByRole('button', { name: 'List for sale' }).click();
    const dialog = alicePage.getByRole('dialog', { name: 'List Sword of Dawn for sale' });
    await dialog.getByLabel('Price').fill('100');
    await dialog.getByLabel('Currency').selectOption('gold');
    await dialog.getByRole('button', { name: 'List for sale' }).dblclick();
    await alicePage.getByTestId('market-result').filter({ hasText: 'for sale for 100 gold' }).waitFor();
    const listed = await api(
      'GET',
      `/api/v1/listings?assetId=${sword}&status=active`,
      undefined,
      alice.headers,
    );
    expect(listed.data).toHaveLength(1);

    // The asset page links to its collection's market.
    await bobPage.goto(`${harness.base}/explorer/asset/${sword}`);
    await bobPage.getByRole('link', { name: `Market of ${COLLECTION}` }).click();
    await bobPage.waitForURL(marketUrl());
    await expect.poll(() => bobPage.getByTestId('market-floor').textContent()).toContain('100 gold');
    expect(await bobPage.getByTestId('market-floor').textContent()).toContain('Sword of Dawn');
    await screenshot(bobPage, SHOTS, 'market');

    const before = await gold(alice);
    await bobPage.getByRole('button', { name: 'Buy Sword of Dawn for 100 gold' }).dblclick();
    await bobPage.getByTestId('market-result').filter({ hasText: 'Bought Sword of Dawn' }).waitFor();
    const sales = await api('GET', `/api/v1/sales?assetId=${sword}`, undefined, bob.headers);
    expect(sales.data).toHaveLength(1);
    const asset = await api('GET', `/assets/${sword}`, undefined, bob.headers);
    expect(asset.owner).toBe(bob.wallet);
    expect(cents(await gold(alice))).toBe(cents(before) + cents(sales.data[0].sellerProceeds));
    await expect.poll(() => bobPage.getByTestId('market-last-sale').textContent()).toContain('100 gold');
    expect(await bobPage.getByTestId('market-floor').textContent()).toBe('None listed');
  });

  it('says plainly that a listing gone meanwhile (409 listing-not-active) was not bought', async () => {
    const shield = ids['Shield of Dusk'];
    const listing = await api(
      'POST',
      '/api/v1/listings',
      { wallet: alice.wallet, assetId: shield, currency: 'gold', price: '50' },
      { ...alice.headers, 'idempotency-key': `e2e-list-shield-${Date.now()}` },
    );
    await bobPage.getByRole('button', { name: 'Refresh' }).click();
    const buy = bobPage.getByRole('button', { name: 'Buy Shield of Dusk for 50 gold' });
    await buy.waitFor();
    await api('POST', `/api/v1/listings/${listing.id}/cancel`, undefined, alice.headers);
    // The page says the market changed (a live event) but keeps its rows until Refresh.
    await expect.poll(() => bobPage.locator('.market-changed').textContent()).toContain('The market changed');
    const balance = await gold(bob);
    await buy.click();
    const alert = bobPage.getByRole('alert').filter({ hasText: 'Shield of Dusk is no longer for sale' });
    await alert.waitFor();
    await buy.waitFor({ state: 'detached' });
    expect(await gold(bob)).toBe(balance);
    await screenshot(bobPage, SHOTS, 'stale-listing');
  });

  it('makes an offer from the asset page, which the holder accepts after a confirmation', async () => {
    const egg = ids['Dragon Egg'];
    await bobPage.goto(`${harness.base}/explorer/asset/${egg}`);
    await bobPage.getByRole('button', { name: 'Make an offer' }).click();
    const dialog = bobPage.getByRole('dialog', { name: 'Make an offer for Dragon Egg' });
    await dialog.getByLabel('Price').fill('20');
    await dialog.getByLabel('Currency').selectOption('gold');
    await dialog.getByRole('button', { name: 'Make offer' }).dblclick();
    await bobPage
      .getByTestId('market-result')
      .filter({ hasText: 'You offer 20 gold for Dragon Egg' })
      .waitFor();
    await bobPage.getByRole('button', { name: 'Cancel your offer for Dragon Egg' }).waitFor();

    await alicePage.goto(`${harness.base}/explorer/asset/${egg}`);
    const accept = alicePage.getByRole('button', { name: 'Accept the offer of 20 gold for Dragon Egg' });
    await accept.waitFor();
    await screenshot(alicePage, SHOTS, 'asset-offers');
    await accept.click();
    const confirm = alicePage.getByRole('alertdialog', { name: 'Sell Dragon Egg for 20 gold?' });
    expect(await confirm.textContent()).toContain('moves at once from your wallet');
    await confirm.getByRole('button', { name: 'Sell Dragon Egg' }).click();
    await alicePage.getByTestId('market-result').filter({ hasText: 'Sold Dragon Egg for 20 gold' }).waitFor();
    expect((await api('GET', `/assets/${egg}`, undefined, alice.headers)).owner).toBe(bob.wallet);
    const offers = await api('GET', `/api/v1/offers?assetId=${egg}`, undefined, bob.headers);
    expect(offers.data.map((offer: any) => offer.status)).toEqual(['accepted']);
  });

  it("shows a running auction's best bid and end, and takes a bid", async () => {
    const shield = ids['Shield of Dusk'];
    await api(
      'POST',
      '/api/v1/auctions',
      {
        wallet: alice.wallet,
        assetId: shield,
        currency: 'gold',
        reservePrice: '10',
        minIncrement: '2',
        duration: 3600,
      },
      { ...alice.headers, 'idempotency-key': `e2e-auction-shield-${Date.now()}` },
    );
    await bobPage.goto(marketUrl());
    const auction = bobPage.locator('.auction', { hasText: 'Shield of Dusk' });
    expect(await auction.textContent()).toContain('reserve 10 gold');
    await auction.getByLabel('Your bid for Shield of Dusk (gold)').fill('12');
    await auction.getByRole('button', { name: 'Bid' }).dblclick();
    await bobPage.getByTestId('market-result').filter({ hasText: 'You bid 12 gold' }).waitFor();
    await expect
      .poll(() => bobPage.locator('.auction', { hasText: 'Shield of Dusk' }).textContent())
      .toContain('you lead');
    const open = await api('GET', `/api/v1/auctions?assetId=${shield}&status=open`, undefined, bob.headers);
    expect(open.data.map((item: any) => [item.bestBid, item.bids])).toEqual([['12', 1]]);
  });

  it('makes and cancels a collection offer on the market page, and fits 390 px', async () => {
    await bobPage.setViewportSize({ width: 390, height: 844 });
    await bobPage.goto(marketUrl());
    await bobPage.getByRole('button', { name: 'Make a collection offer' }).click();
    const dialog = bobPage.getByRole('dialog', { name: `Make an offer for any item of ${COLLECTION}` });
    await dialog.getByLabel('Price').fill('5');
    await dialog.getByRole('button', { name: 'Make offer' }).click();
    await expect.poll(() => bobPage.getByTestId('market-best-offer').textContent()).toBe('5 gold');
    expect(await noSidewaysScroll(bobPage)).toBe(true);
    await screenshot(bobPage, SHOTS, 'market-phone');
    await bobPage.getByRole('button', { name: 'Cancel your offer for any item' }).click();
    await expect.poll(() => bobPage.getByTestId('market-best-offer').textContent()).toBe('No offer');
    await bobPage.goto(`${harness.base}/explorer/asset/${ids['Hunter Bow']}`);
    await bobPage.getByRole('button', { name: 'List for sale' }).waitFor();
    expect(await noSidewaysScroll(bobPage)).toBe(true);
  });

  it('starts an auction from the asset page (reserve, increment, end) and cancels it before any bid', async () => {
    const egg = ids['Dragon Egg'];
    await bobPage.setViewportSize({ width: 1280, height: 900 });
    await bobPage.goto(`${harness.base}/explorer/asset/${egg}`);
    await bobPage.getByRole('button', { name: 'Start an auction' }).click();
    const dialog = bobPage.getByRole('dialog', { name: 'Auction Dragon Egg' });
    await dialog.getByLabel('Reserve price').fill('30');
    await dialog.getByLabel('Minimum increment').fill('3');
    await dialog.getByLabel('Currency').selectOption('gold');
    await dialog.getByLabel('Ends in').selectOption('3600');
    const started = Date.now();
    await dialog.getByRole('button', { name: 'Start auction' }).dblclick();
    await bobPage.getByTestId('market-result').filter({ hasText: 'Dragon Egg is up for auction' }).waitFor();
    const open = await api('GET', `/api/v1/auctions?assetId=${egg}&status=open`, undefined, bob.headers);
    expect(open.data).toHaveLength(1);
    const [auction] = open.data;
    expect(auction).toMatchObject({
      seller: bob.wallet,
      currency: 'gold',
      reservePrice: '30',
      minIncrement: '3',
    });
    expect(Math.abs(Date.parse(auction.endsAt) - started - 3_600_000)).toBeLessThan(300_000);
    // Held for the auction: no listing or second auction offered; its line says the reserve.
    const line = bobPage.locator('.market-auction');
    await expect.poll(() => line.textContent()).toContain('reserve 30 gold');
    expect(await bobPage.getByRole('button', { name: 'Start an auction' }).count()).toBe(0);
    expect(await bobPage.getByRole('button', { name: 'List for sale' }).count()).toBe(0);
    await screenshot(bobPage, SHOTS, 'asset-auction');
    await bobPage.getByRole('button', { name: 'Cancel the auction of Dragon Egg' }).click();
    await bobPage
      .getByTestId('market-result')
      .filter({ hasText: 'The auction of Dragon Egg is cancelled' })
      .waitFor();
    expect((await api('GET', `/api/v1/auctions/${auction.id}`, undefined, bob.headers)).status).toBe(
      'cancelled',
    );
    await bobPage.getByRole('button', { name: 'Start an auction' }).waitFor();
  });

  it("makes a trait offer on the market page, a trait chosen from the collection's items", async () => {
    await alicePage.goto(marketUrl());
    await alicePage.getByRole('button', { name: 'Make a collection offer' }).click();
    const dialog = alicePage.getByRole('dialog', { name: `Make an offer for any item of ${COLLECTION}` });
    await dialog.getByLabel('For', { exact: true }).waitFor();
    const choices = await dialog.getByLabel('For', { exact: true }).locator('option').allTextContents();
    expect(choices).toContain('rarity: legendary');
    expect(choices[0]).toBe('Any item');
    await dialog.getByLabel('For', { exact: true }).selectOption({ label: 'rarity: legendary' });
    await dialog.getByLabel('Price').fill('7');
    await dialog.getByLabel('Currency').selectOption('gold');
    await dialog.getByRole('button', { name: 'Make offer' }).dblclick();
    await alicePage
      .getByTestId('market-result')
      .filter({ hasText: 'You offer 7 gold for any rarity legendary item' })
      .waitFor();
    const offers = await api(
      'GET',
      `/api/v1/offers?bidder=${alice.wallet}&status=open`,
      undefined,
      alice.headers,
    );
    expect(offers.data.map((offer: any) => [offer.trait, offer.price, offer.assetId])).toEqual([
      [{ type: 'rarity', value: 'legendary' }, '7', null],
    ]);
    // The holder of the legendary Sword sees it among the offers it can accept.
    await bobPage.goto(`${harness.base}/explorer/asset/${ids['Sword of Dawn']}`);
    await bobPage.getByRole('button', { name: 'Accept the offer of 7 gold for Sword of Dawn' }).waitFor();
    // Its market price: the Sword's last sale, 100 gold to bob.
    expect(await bobPage.getByTestId('asset-last-sale').textContent()).toContain('Last sold for 100 gold');
    await alicePage.getByRole('button', { name: 'Cancel your offer for any rarity legendary item' }).click();
    await alicePage.getByTestId('market-result').filter({ hasText: 'is cancelled' }).waitFor();
  });

  it('shows the listings cheapest first across pages, not page by page', async () => {
    // 24 listings of one gem each, at prices in no order (some equal): more than a page of 20.
    const prices = Array.from({ length: 24 }, (_, i) => String(1 + ((i * 7) % 11)));
    const listed: string[] = [];
    for (const [i, price] of prices.entries()) {
      const listing = await api(
        'POST',
        '/api/v1/listings',
        { wallet: alice.wallet, assetId: 'gems', amount: '1', currency: 'gold', price },
        { ...alice.headers, 'idempotency-key': `e2e-list-gem-${i}-${Date.now()}` },
      );
      listed.push(listing.id);
    }
    await bobPage.goto(marketUrl());
    const forSale = bobPage.getByRole('region', { name: 'For sale' });
    const shown = async () =>
      (await forSale.locator('li[data-listing-id] strong.number').allTextContents()).map((text) =>
        Number(text.replace(' gold', '')),
      );
    await expect.poll(async () => (await shown()).length).toBe(20);
    const first = await shown();
    await forSale.getByRole('button', { name: 'Next page of listings' }).click();
    await expect.poll(async () => (await shown()).length).toBe(4);
    const second = await shown();
    const all = [...first, ...second];
    expect(all).toEqual(prices.map(Number).sort((a, b) => a - b));
    await screenshot(bobPage, SHOTS, 'market-cheapest-second-page');
    for (const id of listed) await api('POST', `/api/v1/listings/${id}/cancel`, undefined, alice.headers);
  });

  it('ran without script errors, Content-Security-Policy violations or API answers off the contract', async () => {
    expect(await harness.problems()).toEqual([]);
  });
});
