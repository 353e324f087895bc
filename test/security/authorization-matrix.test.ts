// Issue 30's one table of who may do what, checked from the contract: every operation is called as
// every kind of caller (anonymous, player, studio, oracle, admin, a service account of each, a
// studio demoted to player) and the edge's answer is checked against the operation's `x-roles`; then
// every operation that names an object (`x-relation` other than `none` and `self`) is called by the
// object's owner and by a caller of the same role who is not, and both answers are checked. One app
// per database for the whole file (generated/authorization.md is the table in words).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundledOperations, type ContractOperation } from '../../src/contract/operations.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../helpers/app.ts';
import { type HttpUser, httpServiceAccount, httpUser } from '../helpers/ledger-fixtures.ts';

const METADATA = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };
const ROLES = ['player', 'studio', 'oracle', 'admin'] as const;

/** A kind of caller and the role the edge must see for it. */
interface CallerKind {
  name: string;
  role: (typeof ROLES)[number] | 'anonymous';
  user?: HttpUser;
}

const operations = bundledOperations().operations;
const isPublic = (operation: ContractOperation) => operation.guard.public;

/** The path with every parameter filled: the edge decides before parameters are validated. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, 'x');

/** A refusal by role (or the scopes a role allows), as the edge answers it. */
const ROLE_REFUSALS = ['/problems/role-not-allowed', '/problems/insufficient-scope'];

describe.each(DB_KINDS)('authorization matrix on %s', (kind) => {
  let t: TestApp;
  const callers: CallerKind[] = [{ name: 'anonymous', role: 'anonymous' }];
  const users = {} as Record<(typeof ROLES)[number], HttpUser>;

  beforeAll(async () => {
    t = await startTestApp(kind, {
      LOGIN_RATE_LIMIT_REQUESTS: '1000',
      RATE_LIMIT_ACCOUNT_REQUESTS: '100000',
      RATE_LIMIT_REQUESTS: '100000',
      RATE_LIMIT_USER_REQUESTS: '100000',
      WEBHOOK_ALLOW_LOOPBACK: 'true',
    });
    for (const role of ROLES) users[role] = await httpUser(t, role);
    for (const role of ROLES) callers.push({ name: role, role, user: users[role] });
    for (const role of ROLES)
      callers.push({
        name: `service account (${role})`,
        role,
        user: await httpServiceAccount(t, users[role]),
      });
    const demoted = await httpUser(t, 'studio');
    const demotedMachine = await httpServiceAccount(t, demoted);
    const demotion = await t.http('PUT', `/api/v1/users/${demoted.userId}/role`, {
      body: { role: 'player' },
      headers: users.admin.headers,
    });
    expect(demotion.status, demotion.text).toBe(200);
    callers.push({ name: 'demoted studio', role: 'player', user: demoted });
    callers.push({ name: "demoted studio's service account", role: 'player', user: demotedMachine });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('every operation declares its roles and relation, and the edge answers each kind of caller by them', async () => {
    const wrong: string[] = [];
    for (const operation of operations) {
      const { method, path, operationId, guard } = operation;
      for (const caller of isPublic(operation) ? callers.slice(0, 1) : callers) {
        const response = await t.http(method.toUpperCase(), concrete(path), {
          headers: caller.user?.headers ?? {},
        });
        const type = (response.body as { type?: string } | undefined)?.type;
        const refusedByRole = response.status === 403 && ROLE_REFUSALS.includes(type ?? '');
        let fine: boolean;
        if (isPublic(operation)) fine = response.status !== 401 && response.status !== 403;
        else if (caller.role === 'anonymous') fine = response.status === 401;
        else if (guard.roles.includes(caller.role)) fine = response.status !== 401 && !refusedByRole;
        else fine = refusedByRole;
        if (!fine)
          wrong.push(
            `${operationId} as ${caller.name}: ${response.status} ${type ?? ''} (roles ${guard.roles})`,
          );
      }
    }
    expect(wrong).toEqual([]);
    // One request per operation and kind of caller: ~190 operations x 5 callers.
  }, 180_000);

  describe('relations: the owner of the object, and a caller of the same role who is not', () => {
    /** One call of an object-owning operation and the status it must get. */
    interface RelationCase {
      operationId: string;
      /** `owner`: the caller has the relation; `other`: it has not. */
      as: 'owner' | 'other';
      user: () => HttpUser;
      method: string;
      path: () => string;
      body?: () => unknown;
      status: number;
    }
    const ids: Record<string, string> = {};
    let holder: HttpUser;
    let outsider: HttpUser;
    let counter: HttpUser;
    let rival: HttpUser;
    const studio = () => users.studio;
    const realm = `realm-${kind}`;
    const coin = `coin${kind === 'sqlite' ? 's' : 'p'}`;
    let seq = 0;

    async function ok(user: HttpUser, method: string, path: string, body?: unknown): Promise<any> {
      const response = await t.http(method, path, {
        body,
        headers: { ...user.headers, 'idempotency-key': `setup-${++seq}` },
      });
      expect(response.status, `${method} ${path}: ${response.text}`).toBeLessThan(300);
      return response.body;
    }

    const mint = async (name: string) =>
      (
        await ok(studio(), 'POST', `/api/v1/collections/${realm}/mint/batch`, {
          items: [{ to: holder.wallet, nft: { name, metadata: METADATA } }],
        })
      ).nfts[0].id as string;

    beforeAll(async () => {
      holder = users.player;
      outsider = await httpUser(t);
      counter = await httpUser(t);
      rival = await httpUser(t, 'studio');
      await ok(studio(), 'POST', '/api/v1/collections', {
        id: realm,
        name: 'Realm',
        burnPolicy: 'holder_or_studio',
        metadataPolicy: { name: true },
      });
      await ok(studio(), 'POST', '/api/v1/currencies', {
        id: coin,
        name: 'Coin',
        symbol: 'COIN',
        decimals: 0,
        collection: realm,
        metadata: METADATA,
      });
      for (const user of [holder, counter])
        await ok(studio(), 'POST', `/api/v1/currencies/${coin}/mint`, { to: user.wallet, amount: '100' });
      for (const name of [
        'frozen',
        'renamed',
        'burned',
        'studioBurned',
        'proved',
        'listed',
        'forSale',
        'toList',
        'offered',
        'forOffer',
        'auctioned',
        'toAuction',
        'toCancelAuction',
        'toLend',
      ])
        ids[name] = await mint(name);
      const listing = (assetId: string) => ({ wallet: holder.wallet, assetId, currency: coin, price: '1' });
      ids.listing = (await ok(holder, 'POST', '/api/v1/listings', listing(ids.listed))).id;
      ids.forSaleListing = (await ok(holder, 'POST', '/api/v1/listings', listing(ids.forSale))).id;
      const offer = (assetId: string) => ({ wallet: counter.wallet, assetId, currency: coin, price: '1' });
      ids.offer = (await ok(counter, 'POST', '/api/v1/offers', offer(ids.offered))).id;
      ids.acceptedOffer = (await ok(counter, 'POST', '/api/v1/offers', offer(ids.forOffer))).id;
      const auction = (assetId: string) => ({
        wallet: holder.wallet,
        assetId,
        currency: coin,
        reservePrice: '1',
        minIncrement: '1',
        duration: 3600,
      });
      ids.auction = (await ok(holder, 'POST', '/api/v1/auctions', auction(ids.auctioned))).id;
      ids.cancellableAuction = (
        await ok(holder, 'POST', '/api/v1/auctions', auction(ids.toCancelAuction))
      ).id;
      ids.recipe = (
        await ok(studio(), 'POST', `/api/v1/collections/${realm}/recipes`, {
          name: 'Coin to item',
          inputs: [{ assetId: coin, amount: '1' }],
          outputs: [{ nft: { name: 'Crafted', metadata: METADATA } }],
        })
      ).id;
      // Stores (issue 36): one offer to change, one to buy (at version 1).
      const storeOffer = () => ({
        name: 'Bundle',
        price: [{ assetId: coin, amount: '1' }],
        grants: [{ nft: { name: 'Bought', metadata: METADATA } }],
        payTo: studio().wallet,
      });
      ids.storeOffer = (
        await ok(studio(), 'POST', `/api/v1/collections/${realm}/store-offers`, storeOffer())
      ).id;
      ids.storeOfferForSale = (
        await ok(studio(), 'POST', `/api/v1/collections/${realm}/store-offers`, storeOffer())
      ).id;
      // Loot boxes (issue 36): a box of the realm held by the counterparty, whose seed is committed;
      // the holder's seed, to reveal.
      ids.table = (
        await ok(studio(), 'POST', `/api/v1/collections/${realm}/drop-tables`, {
          name: 'Matrix table',
          entries: [{ weight: 1, outcome: null }],
        })
      ).id;
      ids.box = (
        await ok(studio(), 'POST', `/api/v1/collections/${realm}/loot-boxes`, {
          name: 'Matrix box',
          table: ids.table,
          paid: false,
        })
      ).id;
      ids.boxItem = (
        await ok(studio(), 'POST', `/api/v1/collections/${realm}/mint/batch`, {
          items: [{ to: counter.wallet, nft: { name: 'Matrix box', metadata: METADATA } }],
        })
      ).nfts[0].id;
      ids.counterSeed = (
        await ok(counter, 'POST', '/api/v1/draw-seeds', { wallet: counter.wallet })
      ).commitment;
      ids.holderSeed = (await ok(holder, 'POST', '/api/v1/draw-seeds', { wallet: holder.wallet })).id;
      // Claim codes (issue 36): one code many may redeem.
      const codes = await ok(studio(), 'POST', `/api/v1/collections/${realm}/claim-codes`, {
        grants: [{ nft: { name: 'Claimed', metadata: METADATA } }],
        maxRedemptions: 100,
      });
      ids.claimCode = codes.codes[0].claimCode.id;
      ids.code = codes.codes[0].code;
      const trade = () => ({
        fromWallet: holder.wallet,
        toWallet: counter.wallet,
        offer: [{ assetId: coin, amount: '1' }],
        request: [{ assetId: coin, amount: '1' }],
      });
      ids.trade = (await ok(holder, 'POST', '/api/v1/trades', trade())).id;
      ids.cancelled = (await ok(holder, 'POST', '/api/v1/trades', trade())).id;
      ids.did = (await ok(holder, 'POST', '/identity/create', {})).did;
      ids.credential = (
        await ok(holder, 'POST', '/identity/issue_credential', {
          type: 'AssetOwnershipCredential',
          subjectDid: ids.did,
          wallet: holder.wallet,
          assetId: ids.proved,
        })
      ).id;
      const bearer = { ...holder, headers: { authorization: holder.headers.authorization } };
      ids.application = (
        await ok(bearer, 'POST', '/api/v1/applications', {
          name: 'Matrix app',
          redirectUris: ['http://127.0.0.1:9/callback'],
        })
      ).clientId;
      ids.apiKey = (await ok(bearer, 'POST', '/api/v1/api-keys', { name: 'spare' })).id;
      ids.serviceAccount = (
        await ok(bearer, 'POST', '/api/v1/service-accounts', {
          name: 'Matrix machine',
          role: 'player',
          scopes: ['assets:read'],
        })
      ).id;
      ids.webhook = (await ok(holder, 'POST', '/api/v1/webhooks', { url: 'http://127.0.0.1:9/hook' })).id;
    });

    const nftBody = () => ({ name: 'Minted', metadata: METADATA, collection: realm });
    const transfer = () => ({ assetId: coin, from: holder.wallet, to: outsider.wallet, amount: '1' });
    const newTrade = () => ({
      fromWallet: holder.wallet,
      toWallet: counter.wallet,
      offer: [{ assetId: coin, amount: '1' }],
      request: [{ assetId: coin, amount: '1' }],
    });
    const currency = (id: string) => ({
      id,
      name: 'Gem',
      symbol: 'GEM',
      decimals: 0,
      collection: realm,
      metadata: METADATA,
    });
    const recipe = () => ({
      name: 'Another',
      inputs: [{ assetId: coin, amount: '1' }],
      outputs: [{ nft: { name: 'Other', metadata: METADATA } }],
    });
    const credential = () => ({
      type: 'AssetOwnershipCredential',
      subjectDid: ids.did,
      wallet: holder.wallet,
      assetId: ids.proved,
    });
    const contractBody = () => ({
      chainId: 31337,
      address: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
      standard: 'erc721',
      fromBlock: 1,
    });
    const webhook =
      (suffix = '') =>
      () =>
        `/api/v1/webhooks/${ids.webhook}${suffix}`;
    const account =
      (suffix = '') =>
      () =>
        `/api/v1/service-accounts/${ids.serviceAccount}${suffix}`;
    const H = () => holder;
    const O = () => outsider;
    const R = () => rival;

    // Each pair: the one without the relation first (it must change nothing), then the one with it.
    const cases: RelationCase[] = [
      // collection-studio: a studio that does not own the collection is refused; its studio is not.
      ...(
        [
          ['freezeAsset', 'POST', () => `/api/v1/assets/${ids.frozen}/freeze`, undefined, 200],
          ['unfreezeAsset', 'POST', () => `/api/v1/assets/${ids.frozen}/unfreeze`, undefined, 200],
          [
            'updateAssetMetadata',
            'PATCH',
            () => `/api/v1/assets/${ids.renamed}/metadata`,
            () => ({ name: 'New' }),
            200,
          ],
          [
            'mintBatch',
            'POST',
            () => `/api/v1/collections/${realm}/mint/batch`,
            () => ({ items: [{ to: holder.wallet, nft: { name: 'Dropped', metadata: METADATA } }] }),
            201,
          ],
          ['createRecipe', 'POST', () => `/api/v1/collections/${realm}/recipes`, recipe, 201],
          [
            'setMarketSettings',
            'PUT',
            () => `/api/v1/collections/${realm}/market/settings`,
            () => ({ royaltyBps: 100 }),
            200,
          ],
          // Stores (issue 36)
          [
            'createStoreOffer',
            'POST',
            () => `/api/v1/collections/${realm}/store-offers`,
            () => ({
              name: 'Another bundle',
              price: [{ assetId: coin, amount: '2' }],
              grants: [{ nft: { name: 'Other', metadata: METADATA } }],
              payTo: users.studio.wallet,
            }),
            201,
          ],
          [
            'updateStoreOffer',
            'PATCH',
            () => `/api/v1/store-offers/${ids.storeOffer}`,
            () => ({ name: 'Renamed bundle' }),
            200,
          ],
          // Loot boxes (issue 36)
          [
            'createDropTable',
            'POST',
            () => `/api/v1/collections/${realm}/drop-tables`,
            () => ({ name: 'Another table', entries: [{ weight: 2, outcome: null }] }),
            201,
          ],
          [
            'createLootBox',
            'POST',
            () => `/api/v1/collections/${realm}/loot-boxes`,
            () => ({ name: 'Another box', table: ids.table, paid: true }),
            201,
          ],
          // Claim codes (issue 36)
          [
            'createClaimCodes',
            'POST',
            () => `/api/v1/collections/${realm}/claim-codes`,
            () => ({ grants: [{ nft: { name: 'Claimed', metadata: METADATA } }] }),
            201,
          ],
          ['getClaimCode', 'GET', () => `/api/v1/claim-codes/${ids.claimCode}`, undefined, 200],
          ['createCurrency', 'POST', () => '/api/v1/currencies', () => currency(`gem${kind.charAt(0)}`), 201],
          [
            'mintCurrency',
            'POST',
            () => `/api/v1/currencies/${coin}/mint`,
            () => ({ to: holder.wallet, amount: '1' }),
            201,
          ],
          ['createNft', 'POST', () => '/api/v1/nft/create', nftBody, 201],
          [
            'registerCollectionContract',
            'POST',
            () => `/api/v1/collections/${realm}/contracts`,
            contractBody,
            // Past the relation: this test configures no chain.
            400,
          ],
        ] as const
      ).flatMap(([operationId, method, path, body, status]): RelationCase[] => [
        { operationId, as: 'other', user: R, method, path, body, status: 403 },
        { operationId, as: 'owner', user: studio, method, path, body, status },
      ]),
      // holder-or-collection-studio: under holder_or_studio the holder and the collection's studio burn.
      {
        operationId: 'burnAsset',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/assets/${ids.burned}/burn`,
        body: () => ({ from: holder.wallet, amount: '1' }),
        status: 403,
      },
      {
        operationId: 'burnAsset',
        as: 'owner',
        user: H,
        method: 'POST',
        path: () => `/api/v1/assets/${ids.burned}/burn`,
        body: () => ({ from: holder.wallet, amount: '1' }),
        status: 201,
      },
      {
        operationId: 'burnAsset',
        as: 'owner',
        user: studio,
        method: 'POST',
        path: () => `/api/v1/assets/${ids.studioBurned}/burn`,
        body: () => ({ from: holder.wallet, amount: '1' }),
        status: 201,
      },
      // wallet-controller: moving out of the holder's wallet.
      ...(
        [
          ['createTransfer', '/api/v1/transfer', transfer, 201],
          ['createTransferBatch', '/api/v1/transfer/batch', () => ({ legs: [transfer()] }), 201],
          ['craftRecipe', '/api/v1/recipes/RECIPE/craft', () => ({ wallet: holder.wallet }), 201],
          ['createTrade', '/api/v1/trades', newTrade, 201],
          ['issueCredential', '/identity/issue_credential', credential, 201],
        ] as const
      ).flatMap(([operationId, path, body, status]): RelationCase[] => [
        {
          operationId,
          as: 'other',
          user: O,
          method: 'POST',
          path: () => path.replace('RECIPE', ids.recipe),
          body,
          status: 403,
        },
        {
          operationId,
          as: 'owner',
          user: H,
          method: 'POST',
          path: () => path.replace('RECIPE', ids.recipe),
          body,
          status,
        },
      ]),
      // wallet-controller of a loan (issue 36): lending from the holder's wallet.
      {
        operationId: 'lendAsset',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/assets/${ids.toLend}/lend`,
        body: () => ({
          from: holder.wallet,
          to: counter.wallet,
          expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        }),
        status: 403,
      },
      {
        operationId: 'lendAsset',
        as: 'owner',
        user: H,
        method: 'POST',
        path: () => `/api/v1/assets/${ids.toLend}/lend`,
        body: () => ({
          from: holder.wallet,
          to: counter.wallet,
          expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        }),
        status: 200,
      },
      // wallet-controller of the marketplace (issue 35): listing from, cancelling for and paying from a wallet.
      {
        operationId: 'createListing',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => '/api/v1/listings',
        body: () => ({ wallet: holder.wallet, assetId: ids.toList, currency: coin, price: '1' }),
        status: 403,
      },
      {
        operationId: 'createListing',
        as: 'owner',
        user: H,
        method: 'POST',
        path: () => '/api/v1/listings',
        body: () => ({ wallet: holder.wallet, assetId: ids.toList, currency: coin, price: '1' }),
        status: 201,
      },
      {
        operationId: 'cancelListing',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/listings/${ids.listing}/cancel`,
        status: 403,
      },
      {
        operationId: 'cancelListing',
        as: 'owner',
        user: H,
        method: 'POST',
        path: () => `/api/v1/listings/${ids.listing}/cancel`,
        status: 200,
      },
      {
        operationId: 'buyListing',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/listings/${ids.forSaleListing}/buy`,
        body: () => ({ wallet: counter.wallet }),
        status: 403,
      },
      {
        operationId: 'buyListing',
        as: 'owner',
        user: () => counter,
        method: 'POST',
        path: () => `/api/v1/listings/${ids.forSaleListing}/buy`,
        body: () => ({ wallet: counter.wallet }),
        status: 201,
      },
      // wallet-controller of offers (issue 35): offering from, cancelling for, and selling from a wallet.
      {
        operationId: 'createOffer',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => '/api/v1/offers',
        body: () => ({ wallet: holder.wallet, collection: realm, currency: coin, price: '1' }),
        status: 403,
      },
      {
        operationId: 'createOffer',
        as: 'owner',
        user: H,
        method: 'POST',
        path: () => '/api/v1/offers',
        body: () => ({ wallet: holder.wallet, collection: realm, currency: coin, price: '1' }),
        status: 201,
      },
      {
        operationId: 'cancelOffer',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/offers/${ids.offer}/cancel`,
        status: 403,
      },
      {
        operationId: 'cancelOffer',
        as: 'owner',
        user: () => counter,
        method: 'POST',
        path: () => `/api/v1/offers/${ids.offer}/cancel`,
        status: 200,
      },
      {
        operationId: 'acceptOffer',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/offers/${ids.acceptedOffer}/accept`,
        body: () => ({ wallet: holder.wallet }),
        status: 403,
      },
      {
        operationId: 'acceptOffer',
        as: 'owner',
        user: H,
        method: 'POST',
        path: () => `/api/v1/offers/${ids.acceptedOffer}/accept`,
        body: () => ({ wallet: holder.wallet }),
        status: 201,
      },
      // wallet-controller of the stores (issue 36): paying from a wallet.
      {
        operationId: 'purchaseStoreOffer',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/store-offers/${ids.storeOfferForSale}/purchase`,
        body: () => ({ wallet: counter.wallet, version: 1 }),
        status: 403,
      },
      {
        operationId: 'purchaseStoreOffer',
        as: 'owner',
        user: () => counter,
        method: 'POST',
        path: () => `/api/v1/store-offers/${ids.storeOfferForSale}/purchase`,
        body: () => ({ wallet: counter.wallet, version: 1 }),
        status: 201,
      },
      // wallet-controller of auctions (issue 35): auctioning from, and bidding from, a wallet.
      {
        operationId: 'createAuction',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => '/api/v1/auctions',
        body: () => ({
          wallet: holder.wallet,
          assetId: ids.toAuction,
          currency: coin,
          reservePrice: '1',
          minIncrement: '1',
          duration: 3600,
        }),
        status: 403,
      },
      {
        operationId: 'createAuction',
        as: 'owner',
        user: H,
        method: 'POST',
        path: () => '/api/v1/auctions',
        body: () => ({
          wallet: holder.wallet,
          assetId: ids.toAuction,
          currency: coin,
          reservePrice: '1',
          minIncrement: '1',
          duration: 3600,
        }),
        status: 201,
      },
      {
        operationId: 'bidAuction',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/auctions/${ids.auction}/bids`,
        body: () => ({ wallet: counter.wallet, amount: '2' }),
        status: 403,
      },
      {
        operationId: 'bidAuction',
        as: 'owner',
        user: () => counter,
        method: 'POST',
        path: () => `/api/v1/auctions/${ids.auction}/bids`,
        body: () => ({ wallet: counter.wallet, amount: '2' }),
        status: 201,
      },
      // The seller cancels an auction before any bid (issue 35); another player may not.
      {
        operationId: 'cancelAuction',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/auctions/${ids.cancellableAuction}/cancel`,
        status: 403,
      },
      {
        operationId: 'cancelAuction',
        as: 'owner',
        user: H,
        method: 'POST',
        path: () => `/api/v1/auctions/${ids.cancellableAuction}/cancel`,
        status: 200,
      },
      // wallet-controller of the loot boxes (issue 36): opening from, committing and revealing a wallet's seed.
      ...(
        [
          [
            'openLootBox',
            () => `/api/v1/loot-boxes/${ids.box}/open`,
            () => ({
              wallet: counter.wallet,
              assetId: ids.boxItem,
              clientSeed: 'matrix',
              seedCommitment: ids.counterSeed,
            }),
            () => counter,
            201,
          ],
          ['commitDrawSeed', () => '/api/v1/draw-seeds', () => ({ wallet: holder.wallet }), H, 200],
          [
            'redeemClaimCode',
            () => '/api/v1/claim-codes/redeem',
            () => ({ wallet: counter.wallet, code: ids.code }),
            () => counter,
            201,
          ],
          ['revealDrawSeed', () => `/api/v1/draw-seeds/${ids.holderSeed}/reveal`, undefined, H, 200],
        ] as const
      ).flatMap(([operationId, path, body, owner, status]): RelationCase[] => [
        { operationId, as: 'other', user: O, method: 'POST', path, body, status: 403 },
        { operationId, as: 'owner', user: owner, method: 'POST', path, body, status },
      ]),
      // trade-party / trade-counterparty: anyone else is told the trade does not exist.
      {
        operationId: 'getTrade',
        as: 'other',
        user: O,
        method: 'GET',
        path: () => `/api/v1/trades/${ids.trade}`,
        status: 404,
      },
      {
        operationId: 'getTrade',
        as: 'owner',
        user: () => counter,
        method: 'GET',
        path: () => `/api/v1/trades/${ids.trade}`,
        status: 200,
      },
      {
        operationId: 'cancelTrade',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/trades/${ids.cancelled}/cancel`,
        status: 404,
      },
      {
        operationId: 'cancelTrade',
        as: 'owner',
        user: H,
        method: 'POST',
        path: () => `/api/v1/trades/${ids.cancelled}/cancel`,
        status: 200,
      },
      {
        operationId: 'acceptTrade',
        as: 'other',
        user: O,
        method: 'POST',
        path: () => `/api/v1/trades/${ids.trade}/accept`,
        status: 404,
      },
      {
        operationId: 'acceptTrade',
        as: 'other',
        user: H,
        method: 'POST',
        path: () => `/api/v1/trades/${ids.trade}/accept`,
        status: 403,
      },
      {
        operationId: 'acceptTrade',
        as: 'owner',
        user: () => counter,
        method: 'POST',
        path: () => `/api/v1/trades/${ids.trade}/accept`,
        status: 201,
      },
      // resource-owner: another user's object answers 404, as if it did not exist.
      ...(
        [
          [
            'revokeCredential',
            'POST',
            () => `/identity/credentials/${ids.credential}/revoke`,
            () => ({}),
            200,
          ],
          ['getWebhook', 'GET', webhook(), undefined, 200],
          ['listWebhookDeliveries', 'GET', webhook('/deliveries'), undefined, 200],
          ['disableWebhook', 'POST', webhook('/disable'), undefined, 200],
          ['enableWebhook', 'POST', webhook('/enable'), undefined, 200],
          ['rotateWebhookSecret', 'POST', webhook('/rotate-secret'), undefined, 200],
          ['replayWebhook', 'POST', webhook('/replay?after=0'), undefined, 202],
          [
            'redeliverWebhookDelivery',
            'POST',
            webhook('/deliveries/whd_01JD4C5Q6R7S8T9V0W1X2Y3Z4A/redeliver'),
            undefined,
            404,
          ],
          ['deleteWebhook', 'DELETE', webhook(), undefined, 204],
        ] as const
      ).flatMap(([operationId, method, path, body, status]): RelationCase[] => [
        { operationId, as: 'other', user: O, method, path, body, status: 404 },
        { operationId, as: 'owner', user: H, method, path, body, status },
      ]),
      ...(
        [
          ['deleteApplication', 'DELETE', () => `/api/v1/applications/${ids.application}`, 204],
          ['revokeApiKey', 'DELETE', () => `/api/v1/api-keys/${ids.apiKey}`, 204],
          ['getServiceAccount', 'GET', account(), 200],
          ['createClientSecret', 'POST', account('/secrets'), 201],
          ['revokeClientSecret', 'DELETE', () => `${account('/secrets/')()}${ids.secret}`, 204],
          ['deleteServiceAccount', 'DELETE', account(), 204],
        ] as const
      ).flatMap(([operationId, method, path, status]): RelationCase[] => [
        { operationId, as: 'other', user: O, method, path, status: 404 },
        { operationId, as: 'owner', user: H, method, path, status },
      ]),
    ];

    it('every operation that names an object has a case for its owner and for a non-owner', () => {
      const covered = (as: RelationCase['as']) =>
        new Set(cases.filter((c) => c.as === as).map((c) => c.operationId));
      const owners = covered('owner');
      const others = covered('other');
      const missing = operations
        .filter(({ guard }) => !['none', 'self'].includes(guard.relation))
        .filter(({ operationId }) => !owners.has(operationId) || !others.has(operationId))
        .map(({ operationId, guard }) => `${operationId} (${guard.relation})`);
      expect(missing).toEqual([]);
    });

    it('answers each case by its relation', async () => {
      const wrong: string[] = [];
      for (const c of cases) {
        const user = c.user();
        // Account management takes the bearer token alone.
        const headers: Record<string, string> =
          c.path().startsWith('/api/v1/applications') ||
          c.path().startsWith('/api/v1/api-keys') ||
          c.path().startsWith('/api/v1/service-accounts')
            ? { authorization: user.headers.authorization }
            : { ...user.headers, 'idempotency-key': `case-${++seq}` };
        const response = await t.http(c.method, c.path(), { body: c.body?.(), headers });
        if (c.operationId === 'createClientSecret' && response.status === 201) ids.secret = response.body.id;
        if (response.status !== c.status)
          wrong.push(
            `${c.operationId} as ${c.as} (${user.username}): ${response.status} ${response.body?.type ?? ''}, expected ${c.status}`,
          );
      }
      expect(wrong).toEqual([]);
    });
  });
});
