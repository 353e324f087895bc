// End to end: the studio and admin console of the explorer (explorer/src/views/console/), driven in
// Chromium against the real service with the demo seed (test/helpers/explorer-browser.ts). A studio
// creates a collection with its policies, airdrops to 50 wallets from a CSV file (one bad row shown
// first, nothing sent), creates a recipe from its items and currency (mistakes shown on the page, a
// refusal of the service shown, asked first), reads its store offers and loot boxes, freezes and
// edits an item and finds both in the audit log, adds a webhook (to a loopback receiver) and sends a
// delivery again; an admin changes a role and sees it in the audit log, reads health and the chain
// indexer's state (a local EVM node, a contract the studio registered), and finds the studio's
// collection among its own. Every API answer the pages and the test receive is checked against the
// contract. Screenshots of each screen at desktop and phone size go to test-results/console/.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deployErc721,
  devAccount,
  type EvmNode,
  HARDHAT_CHAIN_ID,
  startEvmNode,
} from '../helpers/evm-node.ts';
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
import { type Receiver, startReceiver } from '../integration/webhooks/receiver.ts';

const SHOTS = path.join(ROOT, 'test-results', 'console');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };
const COLLECTION = 'e2e-heroes';
warnWithoutChromium('console e2e');

describe.skipIf(!hasChromium)('studio and admin console in a real browser', BROWSER_TESTS, () => {
  let harness: ExplorerHarness;
  let studioPage: Page;
  let adminPage: Page;
  let studio: ApiSession;
  let bob: ApiSession;
  let itemId = '';
  /** A webhook endpoint on loopback, for the Webhooks screen's deliveries. */
  let receiver: Receiver;
  /** A local EVM node the service indexes, for the Chain indexer screen. */
  let node: EvmNode;

  /** The page at desktop and phone width, then back. */
  async function shots(page: Page, name: string): Promise<void> {
    await page
      .locator('[aria-busy="true"]')
      .first()
      .waitFor({ state: 'detached', timeout: 10_000 })
      .catch(() => undefined);
    await screenshot(page, SHOTS, `${name}-desktop`);
    await page.setViewportSize(PHONE);
    await screenshot(page, SHOTS, `${name}-phone`);
    // Nothing is wider than the phone's screen but what scrolls inside its own box.
    const overflow = await page.evaluate(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    );
    expect(overflow, `${name} overflows a phone's width`).toBeLessThanOrEqual(0);
    await page.setViewportSize(DESKTOP);
  }

  /** One region of a long page, at desktop and phone width (the full page is in `shots`). */
  async function regionShots(page: Page, region: string, name: string): Promise<void> {
    const element = page.getByRole('region', { name: region });
    await element.screenshot({ path: path.join(SHOTS, `${name}-desktop.png`) });
    await page.setViewportSize(PHONE);
    await element.screenshot({ path: path.join(SHOTS, `${name}-phone.png`) });
    await page.setViewportSize(DESKTOP);
  }

  beforeAll(async () => {
    [receiver, node] = await Promise.all([startReceiver(), startEvmNode()]);
    harness = await startExplorerHarness({
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      CHAINS: `${HARDHAT_CHAIN_ID}=${node.url}`,
      CHAIN_CONFIRMATIONS: '2',
      CHAIN_POLL_MS: '200',
    });
    [studio, bob] = await Promise.all([harness.session('studio'), harness.session('bob')]);
    [studioPage, adminPage] = await Promise.all([harness.newPage(DESKTOP), harness.newPage(DESKTOP)]);
  }, 120_000);

  afterAll(async () => {
    await harness?.stop();
    await receiver?.close();
    await node?.stop();
  });

  it('shows a studio its console, and creates a collection with its policies', async () => {
    // Both through the real login page, at once (the admin's page waits for its turn).
    await Promise.all([signIn(studioPage, harness.base, 'studio'), signIn(adminPage, harness.base, 'admin')]);
    const nav = studioPage.getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link', { name: 'Admin' }).count()).toBe(0);
    await nav.getByRole('link', { name: 'Studio' }).click();
    await studioPage.locator('[data-collection-id="dawn-quest"]').waitFor();

    const form = studioPage.getByRole('region', { name: 'New collection' });
    await form.getByLabel('Id', { exact: true }).fill(COLLECTION);
    await form.getByLabel('Name', { exact: true }).fill('E2E Heroes');
    await form.getByLabel('Burning').selectOption('holder_or_studio');
    await form.getByRole('checkbox', { name: 'The name' }).check();
    await form.getByLabel('Attributes the studio may change (comma separated)').fill('level');
    await form.getByLabel('Royalty to the studio on each sale, in basis points').fill('250');
    await form.getByRole('button', { name: 'Create collection' }).click();
    await studioPage
      .locator(`[data-collection-id="${COLLECTION}"]`, { hasText: 'Changeable attributes: level' })
      .waitFor();
    const settings = await harness.api(
      'GET',
      `/api/v1/collections/${COLLECTION}/market/settings`,
      undefined,
      studio.headers,
    );
    expect(settings.royaltyBps).toBe(250);
    await shots(studioPage, 'studio-collections');
  });

  it('airdrops to 50 wallets from a CSV file, after showing its bad row and sending nothing', async () => {
    await studioPage
      .locator(`[data-collection-id="${COLLECTION}"]`)
      .getByRole('link', { name: 'E2E Heroes' })
      .click();
    await studioPage.getByRole('heading', { name: 'E2E Heroes', level: 1 }).waitFor();
    const wallets = Array.from({ length: 50 }, () => `0x${randomBytes(20).toString('hex')}`);
    const good = wallets.map((wallet, index) => `${wallet},Hero ${index + 1},1`);
    // A value with a comma and quotes, quoted as RFC 4180 says.
    good[1] = `${wallets[1]},"Hero 2, ""the Second""",1`;
    const withBadRow = [
      'wallet,name,level',
      ...good.slice(0, 20),
      '0x12345,Broken Hero,1',
      ...good.slice(20),
    ].join('\n');
    const airdrop = studioPage.getByRole('region', { name: 'Airdrop' });
    await airdrop
      .getByLabel('CSV file')
      .setInputFiles({ name: 'heroes.csv', mimeType: 'text/csv', buffer: Buffer.from(withBadRow) });
    await expect
      .poll(() => airdrop.getByTestId('airdrop-summary').textContent())
      .toContain('1 of 51 rows have a problem');
    await airdrop.locator('.row-errors li[data-line="22"]', { hasText: '40 hexadecimal digits' }).waitFor();
    expect(await airdrop.getByRole('button', { name: /^Mint \d+/ }).count()).toBe(0);
    await shots(studioPage, 'studio-airdrop-bad-row');
    const before = await harness.api(
      'GET',
      `/api/v1/events?types=newNFT&collection=${COLLECTION}`,
      undefined,
      studio.headers,
    );
    expect(before.data).toHaveLength(0);

    // Fixed in the list the file was loaded into: the bad row removed.
    const list = airdrop.getByLabel('List (one row per line)');
    await list.fill(['wallet,name,level', ...good].join('\n'));
    await airdrop.getByRole('button', { name: 'Preview' }).click();
    await expect
      .poll(() => airdrop.getByTestId('airdrop-summary').textContent())
      .toContain('50 mints to 50 wallets');
    await airdrop.getByRole('button', { name: 'Mint 50 NFTs' }).click();
    const confirm = studioPage.getByRole('alertdialog', { name: 'Send the airdrop?' });
    expect(await confirm.textContent()).toContain('50 mints into e2e-heroes, to 50 wallets');
    await confirm.getByRole('button', { name: 'Mint 50 NFTs' }).click();
    await airdrop.getByTestId('airdrop-done').waitFor({ timeout: 20_000 });
    const minted = await harness.api(
      'GET',
      `/api/v1/events?types=newNFT&collection=${COLLECTION}`,
      undefined,
      studio.headers,
    );
    expect(
      new Set(minted.data.map((event: { data: { owner: string } }) => event.data.owner.toLowerCase())),
    ).toEqual(new Set(wallets));
    await expect.poll(() => studioPage.locator('.items-table tbody tr').count()).toBe(50);
    expect(minted.data.map((event: { data: { name: string } }) => event.data.name)).toContain(
      'Hero 2, "the Second"',
    );
    itemId = minted.data[0].data.id;

    // A currency of the collection, and supply minted into a wallet.
    const currencies = studioPage.getByRole('region', { name: 'Currencies' });
    await currencies.getByText('New currency').click();
    await currencies.getByLabel('Id', { exact: true }).fill('e2e-crowns');
    await currencies.getByLabel('Name', { exact: true }).fill('Crowns');
    await currencies.getByLabel('Symbol').fill('CRW');
    await currencies.getByRole('button', { name: 'Create currency' }).click();
    await currencies.locator('tr[data-currency-id="e2e-crowns"]').waitFor();
    await currencies.getByLabel('Amount').fill('12.5');
    await currencies.getByRole('button', { name: 'Mint supply' }).click();
    await expect
      .poll(() => currencies.locator('tr[data-currency-id="e2e-crowns"] td').nth(2).textContent())
      .toBe('12.5');
    await shots(studioPage, 'studio-collection');
  }, 45_000);

  it('lists, checks and creates a recipe from its templates and currencies, asked first, by keyboard and at phone width', async () => {
    const region = studioPage.getByRole('region', { name: 'Recipes' });
    await region.getByText('No recipe yet').waitFor();
    // The form, opened and filled with the keyboard alone.
    await region.getByText('New recipe').focus();
    await studioPage.keyboard.press('Enter');
    const name = region.getByLabel('Recipe name');
    await name.focus();
    await studioPage.keyboard.type('Crown a hero');
    await studioPage.keyboard.press('Tab');
    expect(await studioPage.evaluate('document.activeElement.name')).toBe('input-kind');
    const input1 = region.getByRole('group', { name: 'Input 1' });
    await input1.getByLabel('Kind').selectOption('nft');
    await input1.getByLabel('NFT name').fill('Hero 3');
    await region.getByRole('button', { name: 'Add an input' }).click();
    const input2 = region.getByRole('group', { name: 'Input 2' });
    // The new row has the focus.
    expect(await studioPage.evaluate('document.activeElement.name')).toBe('input-kind');
    await input2.getByLabel('Currency').fill('e2e-crowns');
    await input2.getByLabel('Amount').fill('1.234');
    const output1 = region.getByRole('group', { name: 'Output 1' });
    // A template: an item of the collection, copied into the new NFT's fields.
    await output1.getByLabel('Start from an item').selectOption({ label: 'Hero 5' });
    expect(await output1.getByLabel('Name').inputValue()).toBe('Hero 5');
    expect(await output1.getByLabel('Attributes, one per line').inputValue()).toBe('level: 1');
    await output1.getByLabel('Name').fill('Crowned Hero');
    await region.getByRole('button', { name: 'Add an output' }).click();
    const output2 = region.getByRole('group', { name: 'Output 2' });
    await output2.getByLabel('Kind').selectOption('currency');
    await output2.getByLabel('Currency').selectOption('e2e-crowns');
    await output2.getByLabel('Amount').fill('0');

    // Checked on the page: two mistakes, said by field, the first focused, nothing sent.
    await name.press('Enter');
    const mistakes = region.getByTestId('recipe-mistakes');
    await mistakes.waitFor();
    expect(await mistakes.textContent()).toContain('Input 2, amount: has at most 2 decimals');
    expect(await mistakes.textContent()).toContain('Output 2, amount: must be more than 0');
    expect(await input2.getByLabel('Amount').getAttribute('aria-invalid')).toBe('true');
    expect(await studioPage.evaluate('document.activeElement.name')).toBe('input-amount');
    await shots(studioPage, 'studio-recipe-mistakes');
    await regionShots(studioPage, 'Recipes', 'studio-recipe-mistakes-panel');
    const recipesPath = `/api/v1/collections/${COLLECTION}/recipes`;
    expect((await harness.api('GET', recipesPath, undefined, studio.headers)).data).toHaveLength(0);

    // Checked by the service: a currency that does not exist, its problem shown.
    await input2.getByLabel('Amount').fill('1.5');
    await output2.getByLabel('Amount').fill('2');
    await input2.getByLabel('Currency').fill('no-such-coin');
    await region.getByRole('button', { name: 'Create recipe' }).click();
    const confirm = studioPage.getByRole('alertdialog', { name: 'Create the recipe “Crown a hero”?' });
    expect(await confirm.textContent()).toContain(
      'each craft burns 1 “Hero 3” of e2e-heroes, 1.5 no-such-coin from the crafter’s wallet and mints a new “Crowned Hero”, 2 e2e-crowns into it',
    );
    expect(await confirm.textContent()).toContain('cannot be changed or removed afterwards');
    // The safe choice has the focus; Escape sends nothing.
    expect(await studioPage.evaluate('document.activeElement.textContent')).toBe('Cancel');
    await studioPage.keyboard.press('Escape');
    await confirm.waitFor({ state: 'detached' });
    await region.getByRole('button', { name: 'Create recipe' }).click();
    await confirm.getByRole('button', { name: 'Create recipe' }).click();
    await region.getByRole('alert').filter({ hasText: 'no-such-coin' }).waitFor();
    expect((await harness.api('GET', recipesPath, undefined, studio.headers)).data).toHaveLength(0);

    // Fixed: created, listed with what it burns and mints.
    await input2.getByLabel('Currency').fill('e2e-crowns');
    await region.getByRole('button', { name: 'Create recipe' }).click();
    await confirm.getByRole('button', { name: 'Create recipe' }).click();
    const row = region.locator('tr[data-recipe-id]', { hasText: 'Crown a hero' });
    await row.waitFor();
    expect(await row.textContent()).toContain('1 “Hero 3” of e2e-heroes1.5 e2e-crowns');
    const [recipe] = (await harness.api('GET', recipesPath, undefined, studio.headers)).data;
    expect(await row.getAttribute('data-recipe-id')).toBe(recipe.id);
    expect([recipe.inputs, recipe.outputs.map((part: any) => part.assetId ?? part.nft.name)]).toEqual([
      [{ nft: { collection: COLLECTION, name: 'Hero 3' } }, { assetId: 'e2e-crowns', amount: '1.5' }],
      ['Crowned Hero', 'e2e-crowns'],
    ]);
    expect(recipe.outputs[0].nft.metadata.attributes).toEqual([{ trait_type: 'level', value: 1 }]);
    // The form is fresh again.
    expect(await name.inputValue()).toBe('');
    await shots(studioPage, 'studio-recipes');
    await regionShots(studioPage, 'Recipes', 'studio-recipes-panel');
  }, 60_000);

  it("lists the collection's store offers and loot boxes, read only, with a link to its public store page", async () => {
    const asStudio = (urlPath: string, body: unknown) => harness.api('POST', urlPath, body, studio.headers);
    const image = 'https://cdn.example.com/crown.png';
    const table = await asStudio(`/api/v1/collections/${COLLECTION}/drop-tables`, {
      name: 'Crown chest',
      entries: [
        { weight: 3, outcome: { assetId: 'e2e-crowns', amount: '1' } },
        {
          weight: 1,
          outcome: { nft: { name: 'Golden Crown', metadata: { image, attributes: [], creator: 'e2e' } } },
        },
      ],
    });
    const box = await asStudio(`/api/v1/collections/${COLLECTION}/loot-boxes`, {
      name: 'Crown Chest',
      table: table.id,
      paid: false,
      pity: { after: 5, entry: 1 },
    });
    const offer = await asStudio(`/api/v1/collections/${COLLECTION}/store-offers`, {
      name: 'Crown bundle',
      price: [{ assetId: 'e2e-crowns', amount: '3' }],
      grants: [{ nft: { name: 'Crown Chest', metadata: { image, attributes: [], creator: 'e2e' } } }],
      payTo: studio.wallet,
      totalLimit: 100,
      perWalletLimit: 2,
    });
    await studioPage.reload();
    const region = studioPage.getByRole('region', { name: 'Store offers and loot boxes' });
    const offerRow = region.locator(`tr[data-offer-id="${offer.id}"]`);
    await offerRow.waitFor();
    expect(await offerRow.textContent()).toContain('3 e2e-crowns');
    expect(await offerRow.textContent()).toContain('a new “Crown Chest”');
    expect(await offerRow.textContent()).toContain('0 of 100 sold2 per wallet');
    const boxRow = region.locator(`tr[data-box-id="${box.id}"]`);
    expect(await boxRow.textContent()).toContain('2 outcomes, odds published');
    expect(await boxRow.textContent()).toContain('entry 1 after 5 openings');
    // Read only: no button in it.
    expect(await region.getByRole('button').count()).toBe(0);
    await regionShots(studioPage, 'Store offers and loot boxes', 'studio-store-objects');
    await region.getByRole('link', { name: 'the public store page' }).click();
    await studioPage.waitForURL(`**/explorer/collection/${COLLECTION}/store`);
    await studioPage.goBack();
    await studioPage.getByRole('heading', { name: 'E2E Heroes', level: 1 }).waitFor();
    // Turning trading off asks first and says what ends; Escape keeps it on.
    const trading = studioPage.getByRole('region', { name: 'Trading' });
    await trading.getByRole('checkbox', { name: 'Players may list and buy its items' }).uncheck();
    await trading.getByRole('button', { name: 'Save trading settings' }).click();
    const stop = studioPage.getByRole('alertdialog', { name: 'Stop trading?' });
    expect(await stop.textContent()).toContain(`Every active listing of ${COLLECTION} ends now`);
    await studioPage.keyboard.press('Escape');
    await stop.waitFor({ state: 'detached' });
    const settings = await harness.api(
      'GET',
      `/api/v1/collections/${COLLECTION}/market/settings`,
      undefined,
      studio.headers,
    );
    expect(settings.tradingEnabled).toBe(true);
  });

  it('freezes an item after a confirmation that says what happens, edits its metadata, and finds both in the audit log', async () => {
    await studioPage.getByRole('link', { name: `Manage Hero 1 (${itemId})` }).click();
    await studioPage.getByRole('heading', { name: 'Hero 1', level: 1 }).waitFor();
    await studioPage.getByRole('button', { name: 'Freeze' }).click();
    const confirm = studioPage.getByRole('alertdialog', { name: 'Freeze Hero 1?' });
    expect(await confirm.textContent()).toContain('transfers, trades, crafts and burns of it are refused');
    // The safe choice has the focus (Enter does not freeze by accident); Escape cancels.
    expect(await studioPage.evaluate('document.activeElement.textContent')).toBe('Cancel');
    await studioPage.keyboard.press('Escape');
    await confirm.waitFor({ state: 'detached' });
    expect((await harness.api('GET', `/assets/${itemId}`, undefined, studio.headers)).frozen).toBeFalsy();
    await studioPage.getByRole('button', { name: 'Freeze' }).click();
    await confirm.getByRole('button', { name: 'Freeze Hero 1' }).click();
    await expect.poll(() => studioPage.getByTestId('item-state').getAttribute('data-frozen')).toBe('true');

    const edit = studioPage.getByRole('region', { name: 'Edit metadata' });
    await edit.getByLabel('Name').fill('Hero 1, the Brave');
    await edit.getByLabel('Attribute “level”').fill('2');
    await edit.getByRole('button', { name: 'Save metadata' }).click();
    await studioPage.locator('.history-list li[data-version="1"]', { hasText: 'level: 2' }).waitFor();
    const audit = studioPage.getByRole('region', { name: 'Audit entries' });
    await audit.locator('tr[data-action="asset.metadataChanged"]').waitFor();
    await audit.locator('tr[data-action="asset.frozen"]').waitFor();
    await shots(studioPage, 'studio-item');

    // The studio's slice of the audit log, filtered.
    await studioPage
      .getByRole('navigation', { name: 'Studio console' })
      .getByRole('link', { name: 'Audit log' })
      .click();
    await studioPage.getByLabel('Action').selectOption('asset.frozen');
    await studioPage.getByLabel('Object id').fill(itemId);
    await studioPage.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => studioPage.locator('[data-testid="audit-entries"] tbody tr').count()).toBe(1);
    expect(
      await studioPage.locator('[data-testid="audit-entries"] tbody tr').getAttribute('data-action'),
    ).toBe('asset.frozen');
    await shots(studioPage, 'studio-audit');
  });

  it('shows the studio its webhooks with their deliveries, sends one again, and its service accounts, with a new secret shown once', async () => {
    await studioPage.getByRole('link', { name: 'Webhooks' }).click();
    await studioPage.getByText('No webhook yet').waitFor();
    await studioPage.getByLabel('Endpoint URL').fill(receiver.url);
    await studioPage.getByLabel('Event kinds (comma separated)').fill('newNFT');
    await studioPage.getByRole('button', { name: 'Add webhook' }).click();
    const added = studioPage.getByRole('dialog', { name: 'Webhook added' });
    await added.getByRole('button', { name: 'I have stored it' }).click();
    const card = studioPage.locator('article[data-webhook-id]', { hasText: receiver.url });
    await card.waitFor();
    // An NFT minted into the collection is delivered; its delivery is listed, and sent again on request.
    await harness.api(
      'POST',
      `/api/v1/collections/${COLLECTION}/mint/batch`,
      {
        items: [
          {
            to: studio.wallet,
            nft: {
              name: 'Webhook Hero',
              metadata: { image: 'https://cdn.example.com/h.png', attributes: [], creator: 'e2e' },
            },
          },
        ],
      },
      studio.headers,
    );
    await receiver.waitFor(1, 20_000);
    await card.getByRole('button', { name: 'Deliveries' }).click();
    const delivered = card.locator('tbody tr', { hasText: 'newNFT' }).first();
    await expect.poll(() => delivered.textContent(), { timeout: 20_000 }).toContain('succeeded');
    await delivered.getByRole('button', { name: /^Send event \d+ again$/ }).click();
    // The same event again, under the same webhook-id: a receiver that saw it already can tell.
    await expect
      .poll(() => new Set(receiver.received.map((request) => request.id)).size < receiver.received.length, {
        timeout: 20_000,
      })
      .toBe(true);
    await shots(studioPage, 'studio-webhooks');
    // Deleting it asks first, says what happens, and defaults to Cancel.
    await card.getByRole('button', { name: 'Delete' }).click();
    const confirmDelete = studioPage.getByRole('alertdialog', { name: 'Delete this webhook?' });
    expect(await confirmDelete.textContent()).toContain('its pending deliveries are dropped');
    expect(await studioPage.evaluate('document.activeElement.textContent')).toBe('Cancel');
    await studioPage.keyboard.press('Escape');
    await confirmDelete.waitFor({ state: 'detached' });
    expect(await harness.api('GET', '/api/v1/webhooks', undefined, studio.headers)).toMatchObject({
      data: [{ url: receiver.url }],
    });
    await card.getByRole('button', { name: 'Delete' }).click();
    await confirmDelete.getByRole('button', { name: 'Delete webhook' }).click();
    await studioPage.getByText('No webhook yet').waitFor();
    await studioPage.getByRole('link', { name: 'Service accounts' }).click();
    await studioPage.getByLabel('Name').fill('e2e-game-server');
    await studioPage.getByRole('button', { name: 'Create service account' }).click();
    const secret = studioPage.getByRole('dialog', { name: 'e2e-game-server created' });
    expect(await secret.getByTestId('secret').inputValue()).toMatch(/.{20,}/);
    await screenshot(studioPage, SHOTS, 'studio-secret-once-desktop');
    await secret.getByRole('button', { name: 'I have stored it' }).click();
    await studioPage.locator('.record', { hasText: 'e2e-game-server' }).waitFor();
    await shots(studioPage, 'studio-service-accounts');
  });

  it('lets an admin change a role after confirming, and see it in the audit log', async () => {
    await adminPage.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Admin' }).click();
    // Found by the start of the username, then changed in the user's row.
    await adminPage.getByLabel('Username starts with').fill('bo');
    await adminPage.getByRole('button', { name: 'Find' }).click();
    await expect.poll(() => adminPage.locator('[data-testid="users"] tbody tr').count()).toBe(1);
    await adminPage.getByLabel('Role of bob', { exact: true }).selectOption('studio');
    await adminPage.getByRole('button', { name: 'Change the role of bob' }).click();
    const confirm = adminPage.getByRole('alertdialog', { name: 'Make bob a studio?' });
    expect(await confirm.textContent()).toContain('refresh tokens are revoked');
    await confirm.getByRole('button', { name: 'Make bob studio' }).click();
    await expect.poll(() => adminPage.getByTestId('role-changed').textContent()).toBe('bob is now studio.');
    await adminPage.locator(`tr[data-user-id="${bob.id}"][data-role="studio"]`).waitFor();
    expect((await harness.api('GET', '/api/v1/me', undefined, bob.headers)).role).toBe('studio');
    await adminPage
      .locator('[data-testid="audit-entries"] tr[data-action="user.roleChanged"]', { hasText: bob.id })
      .waitFor();
    await shots(adminPage, 'admin-users');

    await adminPage
      .getByRole('navigation', { name: 'Admin console' })
      .getByRole('link', { name: 'Audit log' })
      .click();
    await adminPage.getByLabel('Action').selectOption('user.roleChanged');
    await adminPage.getByRole('button', { name: 'Apply filters' }).click();
    await adminPage
      .locator('[data-testid="audit-entries"] tr[data-action="user.roleChanged"]', { hasText: bob.id })
      .waitFor();
    await shots(adminPage, 'admin-audit');
  });

  it('tells an admin the deployment’s health and the chain indexer’s state in words', async () => {
    await adminPage.getByRole('link', { name: 'Health' }).click();
    await expect
      .poll(() => adminPage.getByTestId('readiness').textContent())
      .toContain('The database answers.');
    await expect.poll(() => adminPage.getByTestId('metrics').textContent()).toContain('HTTP requests');
    await shots(adminPage, 'admin-health');
    // The studio registers an ERC-721 contract for its collection, its deployer's wallet linked first.
    const account = devAccount(0);
    const challenge = await harness.api(
      'POST',
      '/api/v1/wallets/link/challenge',
      { address: account.address },
      studio.headers,
    );
    const signature = await account.signMessage({ message: challenge.message });
    await harness.api(
      'POST',
      '/api/v1/wallets/link',
      { message: challenge.message, signature },
      studio.headers,
    );
    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const address = await deployErc721(node);
    await harness.api(
      'POST',
      `/api/v1/collections/${COLLECTION}/contracts`,
      { chainId: HARDHAT_CHAIN_ID, address: address.toLowerCase(), standard: 'erc721', fromBlock },
      studio.headers,
    );
    await expect
      .poll(async () => (await harness.api('GET', '/readyz')).chains?.[0]?.state, { timeout: 30_000 })
      .toBe('following');
    await adminPage.getByRole('link', { name: 'Chain indexer' }).click();
    const chain = adminPage.locator(`tr[data-chain-id="${HARDHAT_CHAIN_ID}"]`);
    await expect.poll(() => chain.textContent()).toContain('following the head');
    const contract = adminPage
      .getByRole('region', { name: 'Contracts' })
      .locator('tbody tr', { hasText: COLLECTION });
    await contract.waitFor();
    expect(await contract.textContent()).toContain('ERC721 Swords');
    expect(await contract.textContent()).toContain('indexed');
    expect(await chain.textContent()).not.toContain('1 blocks');
    await shots(adminPage, 'admin-chains');
    // An admin runs every studio's objects: the studio's collection is in the admin's Studio screen.
    await adminPage.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Studio' }).click();
    await adminPage.locator(`[data-collection-id="${COLLECTION}"]`).waitFor();
  });

  it('ran without script errors, Content-Security-Policy violations or API answers off the contract', async () => {
    expect(await harness.problems()).toEqual([]);
  });
});
