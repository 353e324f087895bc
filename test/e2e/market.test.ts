// End to end: the explorer's market (issue 35), in Debian's Chromium against the real service with
// the demo seed (test/helpers/explorer-browser.ts: every API answer checked against the contract).
// Alice lists the Sword of Dawn from its asset page; bob sees the floor on the collection's market
// page and buys it (one purchase however often he clicks; alice paid, bob the owner, the last sale
// shown); a listing cancelled behind bob's back answers 409 listing-not-active, said on the page;
// bob offers for the Dragon Egg and alice accepts it after the confirmation; bob bids in an auction;
// a collection offer is made and cancelled; at 390 px wide nothing scrolls sideways.
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiSession,
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

describe.skipIf(!hasChromium)('the explorer market in a real browser', () => {
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

  it('ran without script errors, Content-Security-Policy violations or API answers off the contract', async () => {
    expect(await harness.problems()).toEqual([]);
  });
});
