// End to end: the built explorer, served by the real service on a fresh SQLite data dir with the demo
// seed, driven in Debian's Chromium (test/helpers/explorer-browser.ts).
// Covers sign-in through the real login page (no consent: the explorer is the service), the demo wallet, an invalid address,
// mint (double-clicked, minted once, a "minted" row in the wallet's history), a transfer that arrives live in the recipient's open page,
// catch-up by lastEventId after a dropped connection, the price chart, a burned NFT (its history
// ending with its mint), a phone's width (cards, transfer table), a trade accepted
// in the Trades panel, and sign-out.
// Screenshots go to test-results/explorer/ (and docs/explorer.png when missing or EXPLORER_SCREENSHOT=1).
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Page, WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApiSession,
  BROWSER_TESTS,
  type ExplorerHarness,
  hasChromium,
  ROOT,
  screenshot,
  signIn as signInAs,
  startExplorerHarness,
  warnWithoutChromium,
} from '../helpers/explorer-browser.ts';

const SHOTS = path.join(ROOT, 'test-results', 'explorer');
warnWithoutChromium('explorer e2e');

describe.skipIf(!hasChromium)('explorer in a real browser', BROWSER_TESTS, () => {
  let harness: ExplorerHarness;
  let base = '';
  let alicePage: Page;
  let bobPage: Page;
  let alice: ApiSession;
  let bob: ApiSession;
  let pricedAsset = '';

  const api = <T = any>(method: string, urlPath: string, body?: unknown, headers?: Record<string, string>) =>
    harness.api<T>(method, urlPath, body, headers);
  const shot = (page: Page, name: string) => screenshot(page, SHOTS, name);
  const signIn = (page: Page, username: string, screenshots = false) =>
    signInAs(page, base, username, screenshots ? { folder: SHOTS } : undefined);

  beforeAll(async () => {
    harness = await startExplorerHarness();
    base = harness.base;
    [alice, bob] = await Promise.all([harness.session('alice'), harness.session('bob')]);
    // An asset the demo seed posted prices for, found through the public API.
    const prices = await api('GET', '/api/v1/events?types=priceUpdate&limit=1', undefined, alice.headers);
    pricedAsset = prices.data[0]?.data.assetId ?? '';
    if (!pricedAsset) throw new Error('The demo seed (SEED_DEMO=always) must post prices.');
    [alicePage, bobPage] = await Promise.all([harness.newPage(), harness.newPage()]);
  }, 120_000);

  afterAll(async () => {
    await harness?.stop();
  });

  it('signs in with authorization code + PKCE through the login page, asked no consent', async () => {
    await signIn(alicePage, 'alice', true);
    await expect.poll(() => alicePage.getByTestId('wallet-address').textContent()).toBe(alice.wallet);
    await expect.poll(() => alicePage.getByText('Yours').count()).toBe(1);
    // The header's links stand apart (they once ran together: "My walletTrades").
    const nav = alicePage.getByRole('navigation', { name: 'Main' });
    const wallet = await nav.getByRole('link', { name: 'My wallet' }).boundingBox();
    const trades = await nav.getByRole('link', { name: 'Trades' }).boundingBox();
    expect(wallet && trades && trades.x - (wallet.x + wallet.width)).toBeGreaterThanOrEqual(12);
    // Live activity comes before the NFT grid, in view when something happens.
    // (Expressions run in the page: this file is type-checked without the DOM's types.)
    const activityFirst = await alicePage.evaluate(
      "document.querySelector('#activity-heading').closest('section').compareDocumentPosition(document.querySelector('#nfts-heading')) & Node.DOCUMENT_POSITION_FOLLOWING",
    );
    expect(activityFirst).toBeTruthy();
  });

  it('shows the demo wallet, its NFTs with images and attributes, and its balances', async () => {
    // Alice's wallet is the demo wallet: the sign-in lands on it.
    await alicePage.locator('.nft-card').first().waitFor();
    expect(await alicePage.locator('.nft-card img').count()).toBeGreaterThan(0);
    expect(await alicePage.locator('.nft-card .attributes').count()).toBeGreaterThan(0);
    await alicePage.locator('.currency-list tbody tr').first().waitFor();
    await alicePage.waitForLoadState('networkidle');
    await shot(alicePage, 'wallet-demo');
    if (!existsSync(path.join(ROOT, 'docs/explorer.png')) || process.env.EXPLORER_SCREENSHOT === '1') {
      await alicePage.screenshot({ path: path.join(ROOT, 'docs/explorer.png') });
    }
    await alicePage.setViewportSize({ width: 390, height: 844 });
    await shot(alicePage, 'wallet-phone');
    await alicePage.setViewportSize({ width: 1280, height: 900 });

    // Any wallet, typed in any valid case, is shown under its EIP-55 form.
    await alicePage.getByLabel('Wallet address').fill(bob.wallet.toLowerCase());
    await alicePage.getByRole('button', { name: 'Show wallet' }).click();
    await alicePage.waitForURL(`**/explorer/wallet/${bob.wallet}`);
    await alicePage.locator('.nft-card').first().waitFor();
  });

  it('explains an invalid address while it is typed', async () => {
    const field = alicePage.getByLabel('Wallet address');
    await field.fill('0x12345');
    await expect
      .poll(() => alicePage.locator('.field-message.invalid').textContent())
      .toContain('40 hexadecimal digits');
    // A wallet with one letter's case flipped: right length, wrong EIP-55 checksum.
    const wallet = alice.wallet;
    const index = [...wallet].findIndex((char, i) => i > 1 && /[a-fA-F]/.test(char));
    const letter = wallet[index];
    const flipped =
      wallet.slice(0, index) +
      (letter === letter.toUpperCase() ? letter.toLowerCase() : letter.toUpperCase()) +
      wallet.slice(index + 1);
    await field.fill(flipped);
    await expect
      .poll(() => alicePage.locator('.field-message.invalid').textContent())
      .toContain('EIP-55 checksum');
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    await shot(alicePage, 'invalid-address');
  });

  it('mints once however often the button is clicked, and transfers to a page that updates live', async () => {
    await signIn(bobPage, 'bob');
    await alicePage.getByRole('link', { name: 'My wallet' }).click();
    await alicePage.waitForURL(`**/explorer/wallet/${alice.wallet}`);
    await alicePage.getByRole('button', { name: 'Mint an NFT' }).click();
    const dialog = alicePage.getByRole('dialog', { name: 'Mint an NFT' });
    await dialog.getByLabel('Name', { exact: true }).fill('E2E Blade');
    // The personal collection is the default: a player mints without choosing one.
    expect(await dialog.getByLabel('Collection').inputValue()).toBe('');
    await dialog.getByRole('button', { name: 'Mint NFT' }).dblclick();
    await alicePage.locator('.nft-card', { hasText: 'E2E Blade' }).waitFor();
    const minted = await api('GET', `/wallets/${alice.wallet}/assets?kind=nft`, undefined, alice.headers);
    expect(minted.data.filter((holding: any) => holding.asset.name === 'E2E Blade')).toHaveLength(1);
    // Her wallet's transfer history shows the mint (issue 37: an NFT's mint writes no transfer row).
    const blade: string = minted.data.find((holding: any) => holding.asset.name === 'E2E Blade').asset.id;
    const mintRow = alicePage.locator(`.transfers tr[data-transfer-id="tr_${blade.slice('nft_'.length)}"]`);
    await mintRow.waitFor();
    expect(await mintRow.locator('td').nth(2).textContent()).toBe('minted');
    await expect.poll(() => mintRow.locator('td').first().textContent()).toBe('E2E Blade');
    await shot(alicePage, 'minted');

    await alicePage
      .locator('.nft-card', { hasText: 'E2E Blade' })
      .getByRole('button', { name: 'Transfer E2E Blade' })
      .click();
    const transfer = alicePage.getByRole('dialog', { name: 'Transfer E2E Blade' });
    await transfer.getByLabel('Recipient wallet').fill(bob.wallet);
    await transfer.getByRole('button', { name: 'Transfer NFT' }).click();
    await alicePage.locator('.toast', { hasText: 'Sent 1 of E2E Blade' }).waitFor();

    // Bob's wallet page has been open all along: the NFT arrives without a reload.
    await bobPage.locator('.nft-card', { hasText: 'E2E Blade' }).waitFor({ timeout: 10_000 });
    await bobPage.locator('.activity li', { hasText: 'Received' }).waitFor();
    // The wallet's transfer history lists it too, named by its asset, from alice's wallet.
    const received = bobPage.locator('.transfers tr', { hasText: 'E2E Blade' });
    await received.waitFor();
    expect((await received.locator('td a[title]').first().getAttribute('title'))?.toLowerCase()).toBe(
      alice.wallet.toLowerCase(),
    );
    await shot(bobPage, 'transfer-received');
    await alicePage.locator('.nft-card', { hasText: 'E2E Blade' }).waitFor({ state: 'detached' });
  });

  it('catches up by lastEventId after the connection drops, without a reload', async () => {
    const sockets: WebSocketRoute[] = [];
    const fromPage: any[] = [];
    const fromServer: any[] = [];
    let networkDown = false;
    await bobPage.routeWebSocket(/\/ws\?ticket=/, (ws) => {
      if (networkDown) return ws.close({ code: 1011, reason: 'network down (test)' });
      const upstream = ws.connectToServer();
      ws.onMessage((message) => {
        fromPage.push(JSON.parse(String(message)));
        upstream.send(message);
      });
      upstream.onMessage((message) => {
        fromServer.push(JSON.parse(String(message)));
        ws.send(message);
      });
      sockets.push(ws);
    });
    // Routing applies to new connections: drop the current one to go through the route.
    await bobPage.reload();
    await expect.poll(() => bobPage.locator('.live-indicator').getAttribute('data-status')).toBe('live');
    await bobPage.locator('.nft-card', { hasText: 'E2E Blade' }).waitFor();
    // 'live' is the socket's state: the subscriptions become active at their `subscribed`. An event
    // committed before that reaches the page through its REST re-read, not the socket, and leaves
    // it no resume point (seen on a loaded machine).
    const subscribedAll = () => {
      const asked = fromPage.filter((message) => message.type === 'subscribe').length;
      const answered = fromServer.filter((message) => message.type === 'subscribed').length;
      return asked > 0 && answered >= asked;
    };
    await expect.poll(subscribedAll).toBe(true);
    // One event seen on this connection gives the subscription its resume point.
    const first = await api(
      'POST',
      '/api/v1/nft/create',
      {
        name: 'E2E Shield',
        metadata: { image: `${base}/explorer/demo/shield.svg`, attributes: [], creator: 'e2e' },
      },
      { ...alice.headers, 'idempotency-key': `e2e-shield-${Date.now()}` },
    );
    await api(
      'POST',
      '/api/v1/transfer',
      { assetId: first.id, from: alice.wallet, to: bob.wallet, amount: '1' },
      alice.headers,
    );
    await bobPage.locator('.nft-card', { hasText: 'E2E Shield' }).waitFor();
    await expect.poll(() => fromServer.some((message) => message.type === 'newTransfer')).toBe(true);

    networkDown = true;
    for (const ws of sockets) await ws.close({ code: 1011, reason: 'network down (test)' });
    await expect
      .poll(() => bobPage.locator('.live-indicator').getAttribute('data-status'))
      .toBe('reconnecting');
    const missed = await api(
      'POST',
      '/api/v1/nft/create',
      {
        name: 'E2E Potion',
        collection: first.collection,
        metadata: { image: `${base}/explorer/demo/potion.svg`, attributes: [], creator: 'e2e' },
      },
      { ...alice.headers, 'idempotency-key': `e2e-potion-${Date.now()}` },
    );
    await api(
      'POST',
      '/api/v1/transfer',
      { assetId: missed.id, from: alice.wallet, to: bob.wallet, amount: '1' },
      alice.headers,
    );
    networkDown = false;

    await bobPage.locator('.nft-card', { hasText: 'E2E Potion' }).waitFor({ timeout: 15_000 });
    await expect.poll(() => bobPage.locator('.live-indicator').getAttribute('data-status')).toBe('live');
    const resumed = fromPage.filter((message) => message.type === 'subscribe' && message.lastEventId);
    expect(resumed.length).toBeGreaterThan(0);
    // The socket is 'live' at its open, before the server answers the resumed subscribe: the
    // `replayed` marker may arrive after the page already shows the item (seen in CI, loaded machine).
    await expect
      .poll(() => fromServer.some((message) => message.type === 'replayed' && message.count > 0))
      .toBe(true);
  }, 45_000);

  it('shows an asset with its owners, transfers, price and OHLC chart', async () => {
    await alicePage.goto(`${base}/explorer/asset/${encodeURIComponent(pricedAsset)}`);
    const chart = alicePage.getByTestId('price-chart');
    await expect.poll(() => chart.getAttribute('data-candles')).not.toBeNull();
    if ((await chart.getAttribute('data-candles')) === '0') {
      await alicePage.getByLabel('Interval').selectOption('1d');
      await expect.poll(() => chart.getAttribute('data-candles')).not.toBe('0');
    }
    expect(await chart.locator('canvas').count()).toBeGreaterThan(0);
    await alicePage.getByTestId('price').waitFor();
    await alicePage.locator('.owner-list li').first().waitFor();
    await alicePage.waitForLoadState('networkidle');
    await shot(alicePage, 'asset-chart');
  });

  it('shows a burned NFT as burned, with no owner', async () => {
    const nft = await api<{ id: string }>(
      'POST',
      '/api/v1/nft/create',
      {
        name: 'Potion',
        metadata: { image: 'https://cdn.example.com/potion.png', attributes: [], creator: 'e2e' },
      },
      alice.headers,
    );
    await api('POST', `/api/v1/assets/${nft.id}/burn`, { from: alice.wallet, amount: '1' }, alice.headers);
    await alicePage.goto(`${base}/explorer/asset/${encodeURIComponent(nft.id)}`);
    await alicePage.locator('.asset-summary h1 .badge', { hasText: 'Burned' }).waitFor();
    await alicePage.getByText('None: burned').waitFor();
    // Its history: the burn, then its mint (an NFT's mint writes no transfer row; issue 37).
    const rows = alicePage.locator('.transfers tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.nth(0).locator('td').nth(2).textContent()).toBe('burned');
    expect(await rows.nth(1).getAttribute('data-transfer-id')).toBe(`tr_${nft.id.slice('nft_'.length)}`);
    expect(await rows.nth(1).locator('td').nth(1).textContent()).toBe('minted');
    await shot(alicePage, 'asset-burned-history');
  });

  it('fits a phone: a long personal collection name stays in its card, the transfer table scrolls instead of squeezing addresses', async () => {
    // An NFT of alice's personal collection (`user-` + a ULID: a long unbroken name).
    const nft = await api<{ id: string; collection: string }>(
      'POST',
      '/api/v1/nft/create',
      {
        name: 'Lantern',
        metadata: { image: 'https://cdn.example.com/lantern.png', attributes: [], creator: 'e2e' },
      },
      alice.headers,
    );
    expect(nft.collection).toMatch(/^user-/);
    await alicePage.setViewportSize({ width: 390, height: 844 });
    try {
      await alicePage.goto(`${base}/explorer/wallet/${alice.wallet}`);
      await alicePage.locator(`.nft-card[data-asset-id="${nft.id}"]`, { hasText: nft.collection }).waitFor();
      const spilled = await alicePage.evaluate(
        "[...document.querySelectorAll('.nft-card')].filter((card) => card.scrollWidth > card.clientWidth || [...card.querySelectorAll('*')].some((el) => el.getBoundingClientRect().right > card.getBoundingClientRect().right + 1)).length",
      );
      expect(spilled).toBe(0);
      const pageOverflow = () =>
        alicePage.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(await pageOverflow()).toBeLessThanOrEqual(0);
      await shot(alicePage, 'wallet-cards-phone');

      // An asset's transfers: each address on one line, the table scrolling inside its own box.
      await alicePage.goto(`${base}/explorer/asset/${encodeURIComponent(nft.id)}`);
      await alicePage.locator('.transfers tbody tr').first().waitFor();
      const table = await alicePage.evaluate(
        "(() => { const box = document.querySelector('.transfers'); const codes = [...box.querySelectorAll('td code')]; return { codes: codes.length, wrapped: codes.filter((code) => code.getClientRects().length > 1).length, scrolls: box.scrollWidth > box.clientWidth }; })()",
      );
      expect(table).toMatchObject({ wrapped: 0, scrolls: true });
      expect((table as { codes: number }).codes).toBeGreaterThan(0);
      expect(await pageOverflow()).toBeLessThanOrEqual(0);
      await shot(alicePage, 'asset-transfers-phone');
    } finally {
      await alicePage.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it("proposes a trade from the counterparty's wallet page, and the counterparty accepts it in the Trades panel", async () => {
    await alicePage.goto(`${base}/explorer/wallet/${bob.wallet}`);
    await alicePage.getByRole('button', { name: 'Propose a trade' }).click();
    const dialog = alicePage.getByRole('dialog', { name: 'Propose a trade' });
    const give = dialog.getByRole('group', { name: /^You give/ });
    const ask = dialog.getByRole('group', { name: /^You ask for/ });
    // Nothing chosen: said, nothing sent.
    await dialog.getByRole('button', { name: 'Propose trade' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'Choose at least one item' }).waitFor();
    await give.getByLabel(/^Gems \(of /).fill('1');
    await ask.getByLabel(/^Gold \(of /).fill('1');
    await dialog.getByRole('button', { name: 'Propose trade' }).dblclick();
    await alicePage.locator('.toast', { hasText: 'Trade proposed' }).waitFor();
    const proposed = (
      await api('GET', `/api/v1/trades?status=open&limit=100`, undefined, alice.headers)
    ).data.filter((item: any) => item.toWallet.toLowerCase() === bob.wallet.toLowerCase());
    // Once, however often the button was clicked; exactly what was chosen.
    expect(proposed).toHaveLength(1);
    const trade = proposed[0];
    expect([trade.offer, trade.request]).toEqual([
      [{ assetId: 'gems', amount: '1' }],
      [{ assetId: 'gold', amount: '1' }],
    ]);
    await bobPage.goto(`${base}/explorer/trades`);
    await bobPage.getByRole('button', { name: `Accept trade ${trade.id}` }).click();
    const accepted = bobPage.locator(`[data-trade-id="${trade.id}"][data-status="accepted"]`);
    await accepted.waitFor();
    const settled = await api('GET', `/api/v1/trades/${trade.id}`, undefined, bob.headers);
    expect(settled.status).toBe('accepted');
    // The items are named by their assets, with their pictures; an accepted trade no longer "expires".
    await expect.poll(() => accepted.locator('.trade-items a').allTextContents()).toEqual(['Gems', 'Gold']);
    await expect.poll(() => accepted.locator('.trade-item-image').count()).toBe(2);
    expect(await accepted.textContent()).not.toContain('expires');
    expect(await accepted.textContent()).toContain('accepted');
  });

  it('shows a soulbound NFT with its badge and its metadata history', async () => {
    const nft = await api<{ id: string }>(
      'POST',
      '/api/v1/nft/create',
      {
        name: 'Badge of Dawn',
        metadata: { image: 'https://cdn.example.com/badge.png', attributes: [], creator: 'e2e' },
        soulbound: true,
      },
      alice.headers,
    );
    await alicePage.goto(`${base}/explorer/asset/${encodeURIComponent(nft.id)}`);
    await alicePage.locator('.asset-summary h1 .badge', { hasText: 'Soulbound' }).waitFor();
    // Never updated: its history is the one version it was created with.
    await alicePage.locator('.history-list li[data-version="0"]').waitFor();
    // Numbered once, by its version ("v0"), not also by a list counter ("1. v0").
    expect(
      await alicePage.evaluate("getComputedStyle(document.querySelector('.history-list')).listStyleType"),
    ).toBe('none');
    expect(await alicePage.locator('.history-list li').first().textContent()).toMatch(/^v0 /);
  });

  it('signs out, revoking the session API key', async () => {
    await alicePage.getByRole('button', { name: 'Sign out' }).click();
    await alicePage.getByRole('main').getByRole('button', { name: 'Sign in' }).waitFor();
    const keys = await api('GET', '/api/v1/api-keys', undefined, {
      authorization: alice.headers.authorization,
    });
    const explorerKeys = keys.data.filter((key: any) => key.name.startsWith('Explorer session'));
    expect(explorerKeys.length).toBe(1);
    expect(explorerKeys[0].revokedAt).not.toBeNull();
  });

  it('serves both references rendered, under their policies, without literal Markdown, naming this deployment', async () => {
    const page = await alicePage.context().newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    // Script errors, and scripts the policy refused (the AsyncAPI bundle's evaluation was); Redoc's
    // remote logo, which img-src refuses by design, is not one.
    page.on('console', (message) => {
      if (
        message.type() === 'error' &&
        /Content Security Policy/.test(message.text()) &&
        /script/.test(message.text())
      )
        problems.push(message.text().slice(0, 200));
    });
    try {
      await page.goto(`${base}/docs/asyncapi/`);
      // Its script ran (the server-rendered outline has every payload table collapsed until it has):
      // the CSP refused its evaluation before, and the bundle's global was then missing.
      const hydrated = await page.evaluate('typeof AsyncApiStandalone');
      expect(hydrated).toBe('object');
      const codeSpan = page.locator('code', { hasText: /^newNFT$/ }).first();
      // The standalone renders the whole document again in the page (4.7 MB, several seconds of a
      // core's time when quiet); under CI's load that took longer than an action's 30 s once. Wait
      // longer, and say what the page showed if it never came.
      await codeSpan.waitFor({ state: 'attached', timeout: 100_000 }).catch(async (error: Error) => {
        const shown = ((await page.locator('body').textContent()) ?? '').slice(0, 300);
        throw new Error(`${error.message}\nproblems: ${problems.join('; ')}\nthe page showed: ${shown}`);
      });
      // Run in the page: its window computes the pseudo-elements' styles.
      const wrapped = await codeSpan.evaluate((code) => {
        const view = code.ownerDocument.defaultView as unknown as {
          getComputedStyle(element: unknown, pseudo: string): { content: string };
        };
        return (
          view.getComputedStyle(code, '::before').content + view.getComputedStyle(code, '::after').content
        );
      });
      expect(wrapped).not.toContain('`');

      await page.goto(`${base}/docs/openapi`);
      await page.getByText('Game Asset Tracking Service', { exact: false }).first().waitFor();
      const text = (await page.locator('body').textContent()) ?? '';
      expect(text).toContain(base);
      expect(text).not.toContain('{publicUrl}');
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 180_000);

  it('ran without script errors, Content-Security-Policy violations or API answers off the contract', async () => {
    expect(await harness.problems()).toEqual([]);
  });
});
