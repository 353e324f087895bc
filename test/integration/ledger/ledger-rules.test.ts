// The ledger's rules, through the domain services on real SQLite and PostgreSQL databases.
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../../src/crypto/secret-box.ts';
import { OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import { Transfer } from '../../../src/db/entities/Transfer.ts';
import { Wallet } from '../../../src/db/entities/Wallet.ts';
import { parseAddress, type StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { personalCollectionId } from '../../../src/domain/ledger/collections.ts';
import { walletKeyContext } from '../../../src/domain/ledger/wallets.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  checkInvariants,
  createUser,
  type LedgerFixture,
  openLedger,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';

const metadata = {
  image: 'https://cdn.example.com/x.png',
  attributes: [{ trait_type: 'rarity', value: 'rare' }],
  creator: 'Studio',
};
const STRANGER = '0xdbf03b407c01e7cd3cbea99509d93f8dddc8c6fb' as StoredAddress;

async function rejection(
  promise: Promise<unknown>,
): Promise<{ status: number; type: string; detail?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { status: number; type: string };
  }
  throw new Error('expected a rejection');
}

describe.each(DB_KINDS)('ledger rules on %s', (kind) => {
  let fx: LedgerFixture;
  let studio: TestUser;
  let player: TestUser;
  let admin: TestUser;
  let collection: string;

  async function counts(): Promise<{ transfers: number; events: number }> {
    const em = fx.orm.em.fork();
    return { transfers: await em.count(Transfer, {}), events: await em.count(OutboxEvent, {}) };
  }

  async function newCurrency(options: { decimals?: number; maxSupply?: string } = {}): Promise<string> {
    const id = `c${Math.random().toString(36).slice(2, 10)}`;
    await fx.ledger.assets.createCurrency(studio, {
      id,
      name: 'Coin',
      symbol: 'COIN',
      decimals: options.decimals ?? 2,
      maxSupply: options.maxSupply,
      collection,
      metadata,
    });
    return id;
  }

  beforeAll(async () => {
    fx = await openLedger(kind);
    studio = await createUser(fx, 'studio');
    player = await createUser(fx, 'player');
    admin = await createUser(fx, 'admin');
    collection = 'dawn-quest';
    await fx.ledger.collections.create(studio, { id: collection, name: 'Dawn Quest' });
  });

  afterAll(async () => {
    if (fx) {
      expect(await checkInvariants(fx.orm)).toEqual([]);
      await fx.close();
    }
  });

  describe('wallets', () => {
    it('gives each user a real secp256k1 custodial wallet whose key is sealed to its address', async () => {
      const wallet = await fx.orm.em.fork().findOneOrFail(Wallet, { address: player.wallet });
      expect(wallet.kind).toBe('custodial');
      expect(wallet.encryptedPrivateKey).not.toMatch(/^0x/);
      const key = createSecretBox('ledger-test-secret-0123456789abcdef').open(
        wallet.encryptedPrivateKey as string,
        walletKeyContext(wallet.address),
      );
      expect(privateKeyToAccount(key as `0x${string}`).address.toLowerCase()).toBe(player.wallet);
      expect(await fx.ledger.wallets.listWallets(player.userId)).toEqual([
        {
          address: privateKeyToAccount(key as `0x${string}`).address,
          kind: 'custodial',
          createdAt: wallet.createdAt.toISOString(),
        },
      ]);
    });

    it('links an external wallet with a signed SIWE challenge, once per nonce', async () => {
      const account = privateKeyToAccount(
        '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
      );
      const address = account.address.toLowerCase() as StoredAddress;
      const user = await createUser(fx);
      const challenge = await fx.ledger.walletLinks.createChallenge(user.userId, address);
      expect(challenge.message).toContain('localhost:3000 wants you to sign in with your Ethereum account:');
      expect(challenge.message).toContain(account.address);
      expect(challenge.message).toContain(`Nonce: ${challenge.nonce}`);
      expect(Date.parse(challenge.expiresAt) - Date.now()).toBeGreaterThan(9 * 60_000);

      const signature = await account.signMessage({ message: challenge.message });
      const linked = await fx.ledger.walletLinks.link(user.userId, challenge.message, signature);
      expect(linked).toMatchObject({ address: account.address, kind: 'linked' });
      expect((await fx.ledger.wallets.listWallets(user.userId)).map((w) => w.kind)).toEqual([
        'custodial',
        'linked',
      ]);
      // The nonce is spent.
      expect(
        (await rejection(fx.ledger.walletLinks.link(user.userId, challenge.message, signature))).type,
      ).toBe('/problems/invalid-siwe-nonce');

      // Another user proving control of the same address is refused.
      const other = await createUser(fx);
      const second = await fx.ledger.walletLinks.createChallenge(other.userId, address);
      const secondSignature = await account.signMessage({ message: second.message });
      expect(
        (await rejection(fx.ledger.walletLinks.link(other.userId, second.message, secondSignature))).type,
      ).toBe('/problems/wallet-already-linked');

      // Linking it again to its owner changes nothing.
      const again = await fx.ledger.walletLinks.createChallenge(user.userId, address);
      expect(
        await fx.ledger.walletLinks.link(
          user.userId,
          again.message,
          await account.signMessage({ message: again.message }),
        ),
      ).toEqual(linked);
    });

    it('refuses a wrong signature, a foreign domain and a nonce of another user', async () => {
      const account = privateKeyToAccount(
        '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
      );
      const impostor = privateKeyToAccount(
        '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
      );
      const address = account.address.toLowerCase() as StoredAddress;
      const user = await createUser(fx);

      const challenge = await fx.ledger.walletLinks.createChallenge(user.userId, address);
      const forged = await impostor.signMessage({ message: challenge.message });
      expect((await rejection(fx.ledger.walletLinks.link(user.userId, challenge.message, forged))).type).toBe(
        '/problems/invalid-siwe-signature',
      );
      // The attempt consumed the nonce.
      const genuine = await account.signMessage({ message: challenge.message });
      expect(
        (await rejection(fx.ledger.walletLinks.link(user.userId, challenge.message, genuine))).type,
      ).toBe('/problems/invalid-siwe-nonce');

      const fresh = await fx.ledger.walletLinks.createChallenge(user.userId, address);
      const elsewhere = fresh.message.replace('localhost:3000 wants', 'evil.example wants');
      expect(
        (
          await rejection(
            fx.ledger.walletLinks.link(
              user.userId,
              elsewhere,
              await account.signMessage({ message: elsewhere }),
            ),
          )
        ).type,
      ).toBe('/problems/invalid-siwe-message');
      const thief = await createUser(fx);
      expect(
        (
          await rejection(
            fx.ledger.walletLinks.link(
              thief.userId,
              fresh.message,
              await account.signMessage({ message: fresh.message }),
            ),
          )
        ).type,
      ).toBe('/problems/invalid-siwe-nonce');
    });
  });

  describe('collections and currencies', () => {
    it('refuses a duplicate collection id', async () => {
      expect(
        await rejection(fx.ledger.collections.create(studio, { id: collection, name: 'Again' })),
      ).toMatchObject({
        status: 409,
        type: '/problems/collection-exists',
      });
    });

    it('lists collections by id with a cursor', async () => {
      for (const id of ['zz-b', 'zz-a', 'zz-c']) await fx.ledger.collections.create(studio, { id, name: id });
      const first = await fx.ledger.collections.list({ limit: 2 });
      const rest = await fx.ledger.collections.list({ limit: 100, cursor: first.next_cursor as string });
      const ids = [...first.data, ...rest.data].map((c) => c.id);
      expect(ids).toEqual([...ids].sort());
      expect(ids).toEqual(expect.arrayContaining([collection, 'zz-a', 'zz-b', 'zz-c']));
      expect(rest.next_cursor).toBeNull();
      expect(
        (await rejection(fx.ledger.transfers.list({ limit: 5, cursor: first.next_cursor as string }))).type,
      ).toBe('/problems/validation-failed');
    });

    it('creates a currency with zero supply and refuses duplicates and bad caps', async () => {
      const id = await newCurrency({ maxSupply: '1000' });
      expect(await fx.ledger.assets.get(id)).toMatchObject({
        kind: 'fungible',
        totalSupply: '0',
        maxSupply: '1000',
        decimals: 2,
        owner: null,
      });
      const base = { name: 'X', symbol: 'X', decimals: 2, collection, metadata };
      expect((await rejection(fx.ledger.assets.createCurrency(studio, { ...base, id }))).type).toBe(
        '/problems/asset-exists',
      );
      expect(
        (
          await rejection(
            fx.ledger.assets.createCurrency(studio, { ...base, id: 'capped', maxSupply: '1.001' }),
          )
        ).type,
      ).toBe('/problems/invalid-amount');
      expect(
        (await rejection(fx.ledger.assets.createCurrency(studio, { ...base, id: 'capped', maxSupply: '0' })))
          .type,
      ).toBe('/problems/invalid-amount');
      expect(
        (
          await rejection(
            fx.ledger.assets.createCurrency(studio, { ...base, id: 'capped', collection: 'nope' }),
          )
        ).status,
      ).toBe(404);
    });

    it('mints as a transfer from the zero address, up to the max supply, by the creator or an admin', async () => {
      const id = await newCurrency({ maxSupply: '100' });
      const before = await counts();
      const mint = await fx.ledger.assets.mint(studio, id, {
        to: player.wallet as StoredAddress,
        amount: '60.5',
      });
      expect(mint.status).toBe(201);
      expect(mint.body).toMatchObject({
        from: '0x0000000000000000000000000000000000000000',
        amount: '60.5',
        status: 'completed',
      });
      expect(mint.headers.Location).toBe(`/api/v1/transfers/${mint.body.id}`);
      await fx.ledger.assets.mint(admin, id, { to: STRANGER, amount: '39.5' });
      expect((await fx.ledger.assets.get(id)).totalSupply).toBe('100');
      expect(await counts()).toEqual({ transfers: before.transfers + 2, events: before.events + 2 });

      expect(
        await rejection(fx.ledger.assets.mint(studio, id, { to: STRANGER, amount: '0.01' })),
      ).toMatchObject({ status: 409, type: '/problems/max-supply-exceeded' });
      expect((await rejection(fx.ledger.assets.mint(player, id, { to: STRANGER, amount: '1' }))).status).toBe(
        403,
      );
      expect((await rejection(fx.ledger.assets.mint(studio, id, { to: STRANGER, amount: '0' }))).type).toBe(
        '/problems/invalid-amount',
      );
      expect(
        (await rejection(fx.ledger.assets.mint(studio, 'missing', { to: STRANGER, amount: '1' }))).status,
      ).toBe(404);
      expect(
        (
          await rejection(
            fx.ledger.assets.mint(studio, id, {
              to: parseAddress('0x0000000000000000000000000000000000000000', '/x'),
              amount: '1',
            }),
          )
        ).status,
      ).toBe(400);
      expect(await counts()).toEqual({ transfers: before.transfers + 2, events: before.events + 2 });
    });
  });

  describe('NFTs', () => {
    it("mints into the caller's custodial wallet by default and writes a newNFT event", async () => {
      const before = await counts();
      const created = await fx.ledger.assets.createNft(player, { name: 'Sword', metadata });
      expect(created.body).toMatchObject({
        kind: 'nft',
        collection: personalCollectionId(player.userId),
        symbol: null,
        totalSupply: null,
      });
      expect(created.body.owner?.toLowerCase()).toBe(player.wallet);
      expect(created.headers.Location).toBe(`/assets/${created.body.id}`);
      const event = await fx.orm.em.fork().findOneOrFail(OutboxEvent, { assetId: created.body.id });
      expect(event).toMatchObject({ type: 'newNFT', data: created.body, toWallet: player.wallet });
      expect(await counts()).toEqual({ transfers: before.transfers, events: before.events + 1 });
    });

    it('refuses to mint into a wallet the caller does not control, or into a missing collection', async () => {
      expect(
        (await rejection(fx.ledger.assets.createNft(player, { name: 'S', metadata, to: STRANGER }))).type,
      ).toBe('/problems/wallet-not-controlled');
      expect(
        (await rejection(fx.ledger.assets.createNft(player, { name: 'S', metadata, collection: 'missing' })))
          .status,
      ).toBe(404);
    });
  });

  describe('transfers', () => {
    it('moves currency atomically and records the transfer and its event', async () => {
      const id = await newCurrency();
      await fx.ledger.assets.mint(studio, id, { to: player.wallet as StoredAddress, amount: '10' });
      const before = await counts();
      const result = await fx.ledger.transfers.create(player, {
        assetId: id,
        from: player.wallet as StoredAddress,
        to: STRANGER,
        amount: '2.25',
      });
      expect(result.body).toMatchObject({
        assetId: id,
        amount: '2.25',
        status: 'completed',
        failureReason: null,
      });
      expect(await fx.ledger.transfers.get(result.body.id)).toEqual(result.body);
      const owners = await fx.ledger.reads.assetOwners(id, { limit: 10 });
      expect(owners.data.map((o) => [o.wallet.toLowerCase(), o.balance]).sort()).toEqual(
        [
          [player.wallet, '7.75'],
          [STRANGER, '2.25'],
        ].sort(),
      );
      const event = await fx.orm.em
        .fork()
        .findOneOrFail(OutboxEvent, { type: 'newTransfer', data: { id: result.body.id } } as never);
      expect(event).toMatchObject({ data: result.body, fromWallet: player.wallet, toWallet: STRANGER });
      expect(await counts()).toEqual({ transfers: before.transfers + 1, events: before.events + 1 });
    });

    it('rejects each broken rule with its problem and changes nothing', async () => {
      const id = await newCurrency();
      await fx.ledger.assets.mint(studio, id, { to: player.wallet as StoredAddress, amount: '5' });
      const nft = (await fx.ledger.assets.createNft(player, { name: 'Bow', metadata })).body.id;
      const from = player.wallet as StoredAddress;
      const before = await counts();
      const cases: [Parameters<typeof fx.ledger.transfers.create>[1], number, string][] = [
        [{ assetId: id, from: STRANGER, to: from, amount: '1' }, 403, '/problems/wallet-not-controlled'],
        [{ assetId: id, from, to: STRANGER, amount: '5.01' }, 409, '/problems/insufficient-balance'],
        [{ assetId: id, from, to: STRANGER, amount: '0' }, 400, '/problems/invalid-amount'],
        [{ assetId: id, from, to: STRANGER, amount: '0.001' }, 400, '/problems/invalid-amount'],
        [{ assetId: nft, from, to: STRANGER, amount: '2' }, 400, '/problems/invalid-amount'],
        [{ assetId: id, from, to: from, amount: '1' }, 400, '/problems/validation-failed'],
        [
          {
            assetId: id,
            from,
            to: parseAddress('0x0000000000000000000000000000000000000000', '/x'),
            amount: '1',
          },
          400,
          '/problems/validation-failed',
        ],
        [{ assetId: 'missing', from, to: STRANGER, amount: '1' }, 404, '/problems/not-found'],
      ];
      for (const [input, status, type] of cases) {
        expect(
          await rejection(fx.ledger.transfers.create(player, input)),
          JSON.stringify(input),
        ).toMatchObject({ status, type });
      }
      // Someone else's NFT: the caller controls `from` but it does not hold the NFT.
      const other = await createUser(fx);
      expect(
        await rejection(
          fx.ledger.transfers.create(other, {
            assetId: nft,
            from: other.wallet as StoredAddress,
            to: STRANGER,
            amount: '1',
          }),
        ),
      ).toMatchObject({
        status: 409,
        type: '/problems/insufficient-balance',
      });
      expect(await counts()).toEqual(before);
    });

    it('moves an NFT to its new owner', async () => {
      const nft = (await fx.ledger.assets.createNft(player, { name: 'Shield', metadata })).body.id;
      await fx.ledger.transfers.create(player, {
        assetId: nft,
        from: player.wallet as StoredAddress,
        to: STRANGER,
        amount: '1',
      });
      expect((await fx.ledger.assets.get(nft)).owner?.toLowerCase()).toBe(STRANGER);
      expect((await fx.ledger.reads.assetOwners(nft, { limit: 5 })).data).toEqual([
        { wallet: '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB', balance: '1' },
      ]);
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('replays a retry with the same Idempotency-Key and refuses the key with another body', async () => {
      const id = await newCurrency();
      await fx.ledger.assets.mint(studio, id, { to: player.wallet as StoredAddress, amount: '10' });
      const input = { assetId: id, from: player.wallet as StoredAddress, to: STRANGER, amount: '1' };
      const first = await fx.ledger.transfers.create(player, input, 'key-1');
      const retry = await fx.ledger.transfers.create(player, { ...input }, 'key-1');
      expect(retry).toEqual({ ...first, replayed: true });
      expect(
        (await rejection(fx.ledger.transfers.create(player, { ...input, amount: '2' }, 'key-1'))).type,
      ).toBe('/problems/idempotency-key-reused');
      // Keys are scoped to their user: another user's key-1 is another request.
      const other = await createUser(fx);
      expect((await rejection(fx.ledger.transfers.create(other, input, 'key-1'))).status).toBe(403);
      expect(
        (await fx.ledger.reads.walletAssets(STRANGER, { limit: 100 })).data.find((h) => h.asset.id === id)
          ?.balance,
      ).toBe('1');
    });

    it('lists transfers newest first by wallet and asset, with a stable cursor', async () => {
      const id = await newCurrency();
      await fx.ledger.assets.mint(studio, id, { to: player.wallet as StoredAddress, amount: '100' });
      for (let i = 1; i <= 5; i++) {
        await fx.ledger.transfers.create(player, {
          assetId: id,
          from: player.wallet as StoredAddress,
          to: STRANGER,
          amount: String(i),
        });
      }
      const first = await fx.ledger.transfers.list({ assetId: id, limit: 3 });
      expect(first.data.map((t) => t.amount)).toEqual(['5', '4', '3']);
      // A transfer committed between pages does not shift the next page.
      await fx.ledger.transfers.create(player, {
        assetId: id,
        from: player.wallet as StoredAddress,
        to: STRANGER,
        amount: '6',
      });
      const second = await fx.ledger.transfers.list({
        assetId: id,
        limit: 3,
        cursor: first.next_cursor as string,
      });
      expect(second.data.map((t) => t.amount)).toEqual(['2', '1', '100']);
      expect(second.next_cursor).toBeNull();
      const byWallet = await fx.ledger.transfers.list({ wallet: STRANGER, assetId: id, limit: 100 });
      expect(byWallet.data).toHaveLength(6);
      expect(
        (
          await fx.ledger.transfers.list({
            wallet: '0x1111111111111111111111111111111111111111' as StoredAddress,
            limit: 5,
          })
        ).data,
      ).toEqual([]);
    });
  });

  describe('holdings', () => {
    it("lists a wallet's assets by asset id with kind and collection filters; an unknown wallet is empty", async () => {
      const holder = await createUser(fx);
      const gold = await newCurrency();
      await fx.ledger.assets.mint(studio, gold, { to: holder.wallet as StoredAddress, amount: '3' });
      for (let i = 0; i < 3; i++) await fx.ledger.assets.createNft(holder, { name: `Item ${i}`, metadata });
      const wallet = holder.wallet as StoredAddress;
      const all = await fx.ledger.reads.walletAssets(wallet, { limit: 100 });
      expect(all.data).toHaveLength(4);
      expect(all.data.map((h) => h.asset.id)).toEqual(all.data.map((h) => h.asset.id).sort());
      const nfts = await fx.ledger.reads.walletAssets(wallet, { limit: 2, kind: 'nft' });
      const more = await fx.ledger.reads.walletAssets(wallet, {
        limit: 2,
        kind: 'nft',
        cursor: nfts.next_cursor as string,
      });
      expect([...nfts.data, ...more.data].map((h) => h.balance)).toEqual(['1', '1', '1']);
      expect((await fx.ledger.reads.walletAssets(wallet, { limit: 10, kind: 'fungible' })).data).toEqual([
        { asset: expect.objectContaining({ id: gold }), balance: '3' },
      ]);
      expect((await fx.ledger.reads.walletAssets(wallet, { limit: 10, collection: 'zz-a' })).data).toEqual(
        [],
      );
      expect(
        await fx.ledger.reads.walletAssets('0x2222222222222222222222222222222222222222' as StoredAddress, {
          limit: 10,
        }),
      ).toEqual({
        wallet: '0x2222222222222222222222222222222222222222',
        data: [],
        next_cursor: null,
      });
      const mine = await fx.ledger.reads.userAssets(holder.userId, { limit: 3 });
      const rest = await fx.ledger.reads.userAssets(holder.userId, {
        limit: 3,
        cursor: mine.next_cursor as string,
      });
      expect([...mine.data, ...rest.data]).toHaveLength(4);
      expect(rest.next_cursor).toBeNull();
    });

    it('answers the API listings (on SQLite from their own thread) exactly as the pages, bad cursors as 400', async () => {
      const holder = await createUser(fx);
      const gold = await newCurrency();
      await fx.ledger.assets.mint(studio, gold, { to: holder.wallet as StoredAddress, amount: '2.5' });
      await fx.ledger.assets.createNft(holder, { name: 'Thread item', metadata });
      const wallet = holder.wallet as StoredAddress;
      const filters = { limit: 1 };
      const listed = await fx.ledger.reads.listing({ op: 'walletAssets', wallet, filters });
      const page = await fx.ledger.reads.walletAssets(wallet, filters);
      expect(JSON.parse(listed.body.toString('utf8'))).toEqual(page);
      expect(listed.body.toString('utf8')).toBe(JSON.stringify(page));
      expect(listed.assetIds).toEqual(page.data.map((holding) => holding.asset.id));
      expect(listed.wallets).toEqual([]);
      const mine = await fx.ledger.reads.listing({
        op: 'userAssets',
        userId: holder.userId,
        filters: { limit: 5 },
      });
      expect(JSON.parse(mine.body.toString('utf8'))).toEqual(
        await fx.ledger.reads.userAssets(holder.userId, { limit: 5 }),
      );
      expect(mine.wallets).toEqual([wallet]);
      // A write committed before the listing is asked is in it.
      await fx.ledger.assets.mint(studio, gold, { to: wallet, amount: '1' });
      const after = await fx.ledger.reads.listing({ op: 'walletAssets', wallet, filters: { limit: 5 } });
      expect(
        JSON.parse(after.body.toString('utf8')).data.find(
          (h: { asset: { id: string } }) => h.asset.id === gold,
        ),
      ).toMatchObject({ balance: '3.5' });
      // The domain's errors cross the thread as themselves (400 problem, field pointer kept).
      const bad = await rejection(
        fx.ledger.reads.listing({
          op: 'walletAssets',
          wallet,
          filters: { limit: 5, cursor: 'bm90LWEtY3Vyc29y' },
        }),
      );
      expect(bad).toMatchObject({
        status: 400,
        type: '/problems/validation-failed',
        errors: [{ pointer: '/query/cursor', detail: 'is not a cursor of this list' }],
      });
    });
  });

  describe('prices', () => {
    it('posts prices, answers the latest observed one, and refuses bad input', async () => {
      const id = await newCurrency();
      expect((await rejection(fx.ledger.prices.current(id, 'USD'))).type).toBe('/problems/price-not-found');
      expect((await rejection(fx.ledger.prices.current('missing', 'USD'))).type).toBe('/problems/not-found');
      const posted = await fx.ledger.prices.post(admin, id, {
        price: '1.50',
        currency: 'USD',
        source: 'oracle',
        observedAt: '2026-01-01T10:00:00.000Z',
      });
      expect(posted.body).toEqual({
        assetId: id,
        price: '1.5',
        currency: 'USD',
        source: 'oracle',
        observedAt: '2026-01-01T10:00:00.000Z',
      });
      await fx.ledger.prices.post(admin, id, {
        price: '1',
        currency: 'USD',
        source: 'oracle',
        observedAt: '2025-12-31T10:00:00.000Z',
      });
      expect((await fx.ledger.prices.current(id, 'USD')).price).toBe('1.5');
      expect((await rejection(fx.ledger.prices.current(id, 'EUR'))).type).toBe('/problems/price-not-found');
      expect(
        (
          await rejection(
            fx.ledger.prices.post(admin, id, {
              price: '0.0000000000000000001',
              currency: 'USD',
              source: 'o',
            }),
          )
        ).type,
      ).toBe('/problems/invalid-amount');
      const future = new Date(Date.now() + 10 * 60_000).toISOString();
      expect(
        (
          await rejection(
            fx.ledger.prices.post(admin, id, {
              price: '1',
              currency: 'USD',
              source: 'o',
              observedAt: future,
            }),
          )
        ).type,
      ).toBe('/problems/validation-failed');
      expect(
        (
          await rejection(
            fx.ledger.prices.post(admin, 'missing', { price: '1', currency: 'USD', source: 'o' }),
          )
        ).status,
      ).toBe(404);
    });

    it('aggregates observations into OHLC candles', async () => {
      const id = await newCurrency();
      const points: [string, string][] = [
        ['2026-01-01T10:00:05.000Z', '10'],
        ['2026-01-01T10:20:00.000Z', '12.5'],
        ['2026-01-01T10:40:00.000Z', '9'],
        ['2026-01-01T10:59:59.999Z', '11'],
        ['2026-01-01T12:30:00.000Z', '20'],
      ];
      for (const [observedAt, price] of points)
        await fx.ledger.prices.post(admin, id, { price, currency: 'USD', source: 'o', observedAt });
      const history = await fx.ledger.prices.history(id, {
        currency: 'USD',
        interval: '1h',
        from: '2026-01-01T10:30:00.000Z',
        to: '2026-01-01T13:00:00.000Z',
      });
      expect(history).toEqual({
        assetId: id,
        currency: 'USD',
        interval: '1h',
        from: '2026-01-01T10:00:00.000Z',
        to: '2026-01-01T13:00:00.000Z',
        candles: [
          { start: '2026-01-01T10:00:00.000Z', open: '10', high: '12.5', low: '9', close: '11', count: 4 },
          { start: '2026-01-01T12:00:00.000Z', open: '20', high: '20', low: '20', close: '20', count: 1 },
        ],
      });
      expect(
        (
          await rejection(
            fx.ledger.prices.history(id, {
              currency: 'USD',
              interval: '1m',
              from: '2026-01-01T00:00:00.000Z',
              to: '2026-01-02T00:00:00.000Z',
            }),
          )
        ).type,
      ).toBe('/problems/range-too-large');
      const defaults = await fx.ledger.prices.history(id, { currency: 'USD', interval: '1m' });
      expect((Date.parse(defaults.to) - Date.parse(defaults.from)) / 60_000).toBeLessThanOrEqual(1000);
    });
  });
});
