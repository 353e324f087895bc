// End to end (issue 36): a collection's store in the explorer, in Debian's Chromium against the real
// service (test/helpers/explorer-browser.ts: every API answer the page receives is checked against
// the contract; script errors and CSP violations fail). The studio sets the store up through the
// API; alice buys an offer (a double click buys once), meets changed terms (409
// offer-version-changed shown with the new price), redeems a claim code, opens a loot box after
// reading its odds and checks the draw in her browser once its seed is revealed, pays an offer with
// items she ticks (too few ticked is caught on the page; the ores paid are burned), watches an
// offer's units left follow another buyer's purchase live, and sees a loan's end time on its card
// and its page, and a timed grant of gold (a currency mint with `expiresAt`) as the part of her
// balance that ends. At 390 px the store scrolls only vertically.
// Screenshots go to test-results/store/.
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

const SHOTS = path.join(ROOT, 'test-results', 'store');
const COLLECTION = 'dawn-quest';
const METADATA = {
  image: 'https://cdn.example-game.com/items/x.png',
  attributes: [],
  creator: 'Example Studio',
};
warnWithoutChromium('store e2e');

describe.skipIf(!hasChromium)('the store in the explorer', BROWSER_TESTS, () => {
  let harness: ExplorerHarness;
  let page: Page;
  let alice: ApiSession;
  let studio: ApiSession;
  let bundle = '';
  let potion = '';
  let loaner = '';
  let smith = '';
  let elixir = '';
  let ores: string[] = [];
  let bob: ApiSession;

  const api = <T = any>(method: string, urlPath: string, body?: unknown, headers?: Record<string, string>) =>
    harness.api<T>(method, urlPath, body, headers);
  const asStudio = <T = any>(method: string, urlPath: string, body?: unknown) =>
    api<T>(method, urlPath, body, studio.headers);
  const overflow = () =>
    page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');

  beforeAll(async () => {
    harness = await startExplorerHarness();
    [alice, studio, bob] = await Promise.all([
      harness.session('alice'),
      harness.session('studio'),
      harness.session('bob'),
    ]);
    const offer = (name: string, price: string, grants: unknown[], extra: object = {}) =>
      asStudio('POST', `/api/v1/collections/${COLLECTION}/store-offers`, {
        name,
        price: [{ assetId: 'gold', amount: price }],
        grants,
        payTo: studio.wallet,
        ...extra,
      }).then((created) => created.id as string);
    const table = await asStudio('POST', `/api/v1/collections/${COLLECTION}/drop-tables`, {
      name: 'Dragon chest',
      entries: [
        { weight: 70, outcome: { assetId: 'gold', amount: '50' } },
        { weight: 5, outcome: { nft: { name: 'Dragon Hatchling', metadata: METADATA } } },
        { weight: 25, outcome: null },
      ],
    });
    await asStudio('POST', `/api/v1/collections/${COLLECTION}/loot-boxes`, {
      name: 'Dragon Chest',
      table: table.id,
      paid: true,
      pity: { after: 10, entry: 1 },
    });
    [bundle, potion] = await Promise.all([
      offer(
        'Starter bundle',
        '50',
        [{ assetId: 'gems', amount: '10' }, { nft: { name: 'Starter Sword', metadata: METADATA } }],
        {
          perWalletLimit: 1,
          totalLimit: 1000,
        },
      ),
      offer('Potion pack', '5', [{ assetId: 'gems', amount: '1' }]),
      offer('Dragon Chest', '30', [{ nft: { name: 'Dragon Chest', metadata: METADATA } }]),
      asStudio('POST', `/api/v1/collections/${COLLECTION}/claim-codes`, {
        grants: [{ assetId: 'gems', amount: '25' }],
        code: 'WINTER-GIFT-2026',
        maxRedemptions: 100,
      }),
    ]);
    // Three Iron Ore for alice, an offer priced in gold and 3 Iron Ore, one with 5 units in all.
    const minted = await asStudio('POST', `/api/v1/collections/${COLLECTION}/mint/batch`, {
      items: Array.from({ length: 3 }, () => ({
        to: alice.wallet,
        nft: { name: 'Iron Ore', metadata: METADATA },
      })),
    });
    ores = minted.nfts.map((nft: { id: string }) => nft.id);
    smith = await asStudio('POST', `/api/v1/collections/${COLLECTION}/store-offers`, {
      name: 'Steel Sword',
      price: [{ assetId: 'gold', amount: '5' }, { nft: { name: 'Iron Ore', quantity: 3 } }],
      grants: [{ nft: { name: 'Steel Sword', metadata: METADATA } }],
      payTo: studio.wallet,
    }).then((created) => created.id as string);
    elixir = await offer('Elixir', '1', [{ assetId: 'gems', amount: '1' }], { totalLimit: 5 });
    // A loan of two hours from the studio to alice.
    const sword = await asStudio('POST', '/api/v1/nft/create', {
      name: 'Loaner Sword',
      collection: COLLECTION,
      to: studio.wallet,
      metadata: METADATA,
    });
    loaner = sword.id;
    await api(
      'POST',
      `/api/v1/assets/${loaner}/lend`,
      { from: studio.wallet, to: alice.wallet, expiresAt: new Date(Date.now() + 2 * 3600_000).toISOString() },
      { ...studio.headers, 'Idempotency-Key': 'e2e-loan' },
    );
    page = await harness.newPage();
  }, 120_000);

  afterAll(async () => {
    await harness?.stop();
  });

  it('buys an offer once however often Buy is clicked, and shows changed terms', async () => {
    await signIn(page, harness.base, 'alice');
    // The header's Stores lists every game's store.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Stores' }).click();
    await page.getByRole('link', { name: 'Dawn Quest' }).click();
    await page.waitForURL(`**/explorer/collection/${COLLECTION}/store`);
    const card = page.locator(`[data-offer-id="${bundle}"]`);
    await expect.poll(() => card.textContent()).toContain('50 gold');
    // One per wallet: no quantity to choose.
    expect(await card.getByLabel('Quantity').isVisible()).toBe(false);
    await card.getByRole('button', { name: 'Buy' }).dblclick();
    await expect.poll(() => card.getByTestId('receipt').textContent()).toContain('Bought 1 × Starter bundle');
    const read = await api(
      'GET',
      `/api/v1/store-offers/${bundle}?wallet=${alice.wallet}`,
      undefined,
      alice.headers,
    );
    expect({ sold: read.sold, walletBought: read.walletBought }).toEqual({ sold: 1, walletBought: 1 });
    await expect.poll(() => card.getByRole('button').textContent()).toBe('Sold out');

    // The studio raises a price after the page read it: the purchase is refused, the new terms shown.
    const potionCard = page.locator(`[data-offer-id="${potion}"]`);
    await asStudio('PATCH', `/api/v1/store-offers/${potion}`, { price: [{ assetId: 'gold', amount: '7' }] });
    await potionCard.getByLabel('Quantity').fill('3');
    await potionCard.getByRole('button', { name: 'Buy' }).click();
    await expect.poll(() => potionCard.getByTestId('terms-changed').textContent()).toContain('7 gold');
    await potionCard.getByRole('button', { name: 'Buy' }).click();
    await expect.poll(() => potionCard.getByTestId('receipt').textContent()).toContain('for 21 gold');
  });

  it('redeems a claim code', async () => {
    await page.getByLabel('Claim code').fill('winter-gift-2026');
    await page.getByRole('button', { name: 'Redeem' }).click();
    await expect.poll(() => page.getByTestId('redeemed').textContent()).toContain('25 gems');
  });

  it('shows a box’s odds, opens it and checks the draw in the browser', async () => {
    const box = page.locator('[data-box-id]');
    await expect.poll(() => box.getByTestId('odds').textContent()).toContain('70 % (7/10)');
    expect(await box.getByTestId('odds').textContent()).toContain('5 % (1/20)');
    expect(await box.textContent()).toContain('Pity: Dragon Hatchling (NFT) is guaranteed');
    const chestOffer = page.locator('[data-offer-id]', { hasText: 'Dragon Chest' });
    await chestOffer.getByRole('button', { name: 'Buy' }).click();
    await chestOffer.getByTestId('receipt').waitFor();
    await box.getByRole('button', { name: 'Open a Dragon Chest' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => dialog.getByTestId('seed-commitment').textContent()).toMatch(/^[0-9a-f]{64}$/);
    const commitment = await dialog.getByTestId('seed-commitment').textContent();
    await dialog.getByLabel('Your value').fill('alice-lucky-7');
    await dialog.getByRole('button', { name: 'Open Dragon Chest' }).dblclick();
    await expect.poll(() => dialog.getByTestId('outcome').textContent()).toContain('You got:');
    expect(await dialog.getByTestId('commitment').textContent()).toBe(commitment);
    expect(await dialog.textContent()).toContain('npm run verify-draw -- op_');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, SHOTS, 'draw-phone');
    await dialog.getByRole('button', { name: 'Reveal the seed' }).click();
    await expect.poll(() => dialog.getByTestId('draw-verified').textContent()).toContain('Verified');
    await page.setViewportSize({ width: 1280, height: 900 });
    await dialog.getByRole('button', { name: 'Close' }).click();
    // One box bought, one opened: none left.
    await expect.poll(() => box.textContent()).toContain('You hold none.');
  });

  it('pays with the items ticked; too few ticked is caught before anything is sent', async () => {
    const card = page.locator(`[data-offer-id="${smith}"]`);
    await expect.poll(() => card.textContent()).toContain('5 gold + 3 × Iron Ore');
    const boxes = card.locator('input[name="pay-item"]');
    await expect.poll(() => boxes.count()).toBe(3);
    await boxes.nth(0).check();
    await boxes.nth(1).check();
    await card.getByRole('button', { name: 'Buy' }).click();
    await expect
      .poll(() => card.getByRole('alert').textContent())
      .toContain('Tick 3 × Iron Ore to pay (2 ticked)');
    await boxes.nth(2).check();
    await screenshot(page, SHOTS, 'pay-with-items');
    await card.getByRole('button', { name: 'Buy' }).click();
    await expect.poll(() => card.getByTestId('receipt').textContent()).toContain('Bought 1 × Steel Sword');
    for (const id of ores)
      expect((await api('GET', `/assets/${id}`, undefined, alice.headers)).burned).toBe(true);
    // The ores paid leave the picker.
    await expect.poll(() => boxes.count()).toBe(0);
    expect(await card.getByTestId('pay-items').textContent()).toContain('you hold 0');
  });

  it('follows another buyer’s purchase live: the units left go down without a reload', async () => {
    const card = page.locator(`[data-offer-id="${elixir}"]`);
    await expect.poll(() => card.textContent()).toContain('5 of 5 left');
    const bought = await api(
      'POST',
      `/api/v1/store-offers/${elixir}/purchase`,
      { wallet: bob.wallet, version: 1, quantity: 2 },
      { ...bob.headers, 'Idempotency-Key': 'e2e-elixir-bob' },
    );
    expect(bought.purchase.quantity).toBe(2);
    await expect.poll(() => card.textContent(), { timeout: 15_000 }).toContain('3 of 5 left');
  });

  it('shows a loan’s end time on its card and its page', async () => {
    await page.goto(`${harness.base}/explorer/wallet/${alice.wallet}`);
    const card = page.locator(`.nft-card[data-asset-id="${loaner}"]`);
    await expect.poll(() => card.getByTestId('rental').textContent()).toMatch(/^Ends in 2 h: lent by 0x/);
    await card.getByRole('link', { name: 'Loaner Sword' }).click();
    await expect.poll(() => page.getByTestId('rental').textContent()).toContain('returns to them');
  });

  it('shows the part of a currency balance that ends (a timed grant)', async () => {
    // Minted last: the gold alice spent in the tests above would have taken these units first.
    await api(
      'POST',
      '/api/v1/currencies/gold/mint',
      { to: alice.wallet, amount: '5', expiresAt: new Date(Date.now() + 3 * 3600_000).toISOString() },
      { ...studio.headers, 'Idempotency-Key': 'e2e-timed-gold' },
    );
    const holdings = await api(
      'GET',
      `/wallets/${alice.wallet}/assets?kind=fungible`,
      undefined,
      alice.headers,
    );
    const gold = holdings.data.find((holding: { asset: { id: string } }) => holding.asset.id === 'gold');
    expect(gold.expiring).toEqual([{ amount: '5', expiresAt: expect.any(String) }]);
    await page.goto(`${harness.base}/explorer/wallet/${alice.wallet}`);
    const row = page.locator('.currency-list tr[data-asset-id="gold"]');
    await expect.poll(() => row.getByTestId('expiring').textContent()).toBe('of which 5 end in 3 h');
    expect(await row.locator('td.number').textContent()).toBe(`${gold.balance}of which 5 end in 3 h`);
  });

  it('fits a phone: the store scrolls only vertically', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${harness.base}/explorer/collection/${COLLECTION}/store`);
    await page.locator('[data-box-id]').waitFor();
    await page
      .locator('[aria-busy="true"]')
      .first()
      .waitFor({ state: 'detached' })
      .catch(() => undefined);
    await screenshot(page, SHOTS, 'store-phone');
    expect(await overflow()).toBeLessThanOrEqual(0);
    expect(await harness.problems()).toEqual([]);
  });
});
