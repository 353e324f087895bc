// One suite, both stores: the same plans applied through the SQLite and the PostgreSQL ledger store
// (src/domain/ledger/store/) must commit the same rows, report the same commits to the commit hook,
// reject on the same guard with the same finding, and replay the same idempotency records.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Asset } from '../../src/db/entities/Asset.ts';
import { AssetMetadataVersion } from '../../src/db/entities/AssetMetadataVersion.ts';
import { Collection } from '../../src/db/entities/Collection.ts';
import { CurrencyLot } from '../../src/db/entities/CurrencyLot.ts';
import { Holding } from '../../src/db/entities/Holding.ts';
import { IdempotencyRecord } from '../../src/db/entities/IdempotencyRecord.ts';
import { LedgerChange } from '../../src/db/entities/LedgerChange.ts';
import { Listing } from '../../src/db/entities/Listing.ts';
import { ListingTrait } from '../../src/db/entities/ListingTrait.ts';
import { DrawRecord, DrawSeed, LootBoxPity } from '../../src/db/entities/LootBox.ts';
import { Offer } from '../../src/db/entities/Offer.ts';
import { OutboxEvent } from '../../src/db/entities/OutboxEvent.ts';
import { PriceObservation } from '../../src/db/entities/PriceObservation.ts';
import { Sale } from '../../src/db/entities/Sale.ts';
import { StoreOffer, StoreOfferWallet, StorePurchase } from '../../src/db/entities/StoreOffer.ts';
import { Trade } from '../../src/db/entities/Trade.ts';
import { Transfer } from '../../src/db/entities/Transfer.ts';
import { Wallet } from '../../src/db/entities/Wallet.ts';
import { newId } from '../../src/domain/ids.ts';
import type { StoredAddress } from '../../src/domain/ledger/addresses.ts';
import { createIdempotency, type IdempotencyKey } from '../../src/domain/ledger/idempotency.ts';
import {
  type EventData,
  type LedgerStore,
  NegativeBalanceError,
  type NewAsset,
  type NewEvent,
  type NewTrade,
  type Plan,
} from '../../src/domain/ledger/store/index.ts';
import { planJson } from '../../src/domain/ledger/store/postgres.ts';
import { OUTBOX_LOCK_KEY } from '../../src/events/outbox-lock.ts';
import { DB_KINDS } from '../helpers/db.ts';
import {
  checkInvariants,
  createUser,
  type LedgerFixture,
  openLedger,
  supplyOf,
  type TestUser,
} from '../helpers/ledger-fixtures.ts';

const A = '0x00000000000000000000000000000000000000a1' as StoredAddress;
const B = '0x00000000000000000000000000000000000000b2' as StoredAddress;

/**
 * An event payload with only the fields a case reads back: a store writes `data` as given and never
 * looks inside, so these cases leave the rest of the contract's payload out.
 */
function payload<Type extends NewEvent['type']>(
  _type: Type,
  fields: Partial<EventData<Type>>,
): EventData<Type> {
  return fields as unknown as EventData<Type>;
}

describe.each(DB_KINDS)('ledger store conformance on %s', (kind) => {
  let fx: LedgerFixture;
  let store: LedgerStore;
  let studio: TestUser;
  let player: TestUser;
  let from: StoredAddress;
  const invalidated: string[][] = [];
  const idempotency = () => createIdempotency(fx.database, 60);

  beforeAll(async () => {
    fx = await openLedger(kind);
    store = fx.database.store;
    studio = await createUser(fx, 'studio');
    player = await createUser(fx);
    from = player.wallet as StoredAddress;
    await fx.ledger.collections.create(studio, { id: 'conf', name: 'Conformance' });
    fx.database.commits.onInvalidate((keys) => invalidated.push([...keys].sort()));
  });

  afterAll(async () => {
    await fx?.close();
  });

  let counter = 0;
  function currency(overrides: Partial<NewAsset> = {}): NewAsset {
    const id = `conf-${++counter}`;
    return {
      id,
      kind: 'fungible',
      name: id,
      description: null,
      metadata: { image: 'ipfs://x' },
      collectionId: 'conf',
      creatorId: studio.userId,
      symbol: 'C',
      decimals: 0,
      totalSupply: 0n,
      maxSupply: 1000n,
      owner: null,
      createdAt: new Date(),
      ...overrides,
    };
  }

  function transferEvent(assetId: string, f: string, t: string, at: Date): NewEvent {
    return {
      type: 'newTransfer',
      occurredAt: at,
      data: payload('newTransfer', { assetId, from: f, to: t }),
      assetId,
      collectionId: 'conf',
      wallets: [f, t],
      fromWallet: f,
      toWallet: t,
    };
  }

  /** A currency with `amount` minted into the player's wallet, through one plan. */
  async function funded(amount: bigint): Promise<string> {
    const asset = currency();
    const at = new Date();
    expect(
      await store.apply({
        at,
        guards: [{ kind: 'assetAbsent', assetId: asset.id }],
        assets: [asset],
        supplies: [{ assetId: asset.id, delta: amount }],
        balances: [{ assetId: asset.id, wallet: from, delta: amount }],
        transfers: [
          {
            id: newId('tr'),
            assetId: asset.id,
            from: `0x${'0'.repeat(40)}` as StoredAddress,
            to: from,
            amount,
            requestedBy: studio.userId,
            createdAt: at,
          },
        ],
      }),
    ).toEqual({ outcome: 'applied' });
    return asset.id;
  }

  function transferPlan(assetId: string, to: StoredAddress, amount: bigint, key?: IdempotencyKey): Plan {
    const at = new Date();
    const id = newId('tr');
    return {
      at,
      idempotency: key && {
        key,
        response: { status: 201, body: { id, amount: String(amount) }, headers: { Location: `/t/${id}` } },
      },
      guards: [
        { kind: 'controls', userId: player.userId, wallet: from },
        { kind: 'holds', assetId, wallet: from, atLeast: amount },
      ],
      balances: [
        { assetId, wallet: from, delta: -amount },
        { assetId, wallet: to, delta: amount },
      ],
      transfers: [{ id, assetId, from, to, amount, requestedBy: player.userId, createdAt: at }],
      events: [transferEvent(assetId, from, to, at)],
    };
  }

  async function balances(assetId: string): Promise<Record<string, bigint>> {
    const rows = await fx.orm.em.fork().find(Holding, { asset: assetId } as never);
    return Object.fromEntries(rows.map((row) => [row.wallet, row.balance as bigint]));
  }

  const count = (entity: typeof Transfer | typeof OutboxEvent, assetId: string) =>
    fx.orm.em.fork().count(entity as typeof Transfer, { asset: assetId } as never);
  const events = (assetId: string) => fx.orm.em.fork().count(OutboxEvent, { assetId });

  it('applies a transfer plan: balances, transfer row, event, record, and tells the commit hook', async () => {
    const id = await funded(100n);
    invalidated.length = 0;
    const key = idempotency().keyOf({
      userId: player.userId,
      operation: 'conf',
      key: 'k1',
      request: { a: 1 },
    });
    const plan = transferPlan(id, A, 30n, key);
    expect(await store.apply(plan)).toEqual({ outcome: 'applied' });
    // Reported before apply resolved: the two wallets and the holders of the asset.
    expect(invalidated).toEqual([[`h:${id}`, `w:${A}`, `w:${from}`].sort()]);
    expect(await balances(id)).toEqual({ [from]: 70n, [A]: 30n });
    const transfer = await fx.orm.em.fork().findOneOrFail(Transfer, { id: plan.transfers?.[0].id });
    expect(transfer).toMatchObject({ fromAddress: from, toAddress: A, amount: 30n, status: 'completed' });
    expect(transfer.createdAt.getTime()).toBe(plan.at.getTime());
    const event = await fx.orm.em.fork().findOneOrFail(OutboxEvent, { assetId: id });
    expect(event).toMatchObject({
      type: 'newTransfer',
      wallets: [from, A],
      fromWallet: from,
      toWallet: A,
      collectionId: 'conf',
    });
    const record = await fx.orm.em.fork().findOneOrFail(IdempotencyRecord, { id: key?.id });
    expect(record).toMatchObject({ status: 201, responseBody: plan.idempotency?.response.body });
    expect(record.expiresAt.getTime() - record.createdAt.getTime()).toBe(60_000);
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  it('replays a key that holds an unexpired record, and takes over an expired one', async () => {
    const id = await funded(100n);
    const idem = idempotency();
    const key = idem.keyOf({
      userId: player.userId,
      operation: 'conf',
      key: 'replay',
      request: {},
    }) as IdempotencyKey;
    const first = transferPlan(id, A, 10n, key);
    expect(await store.apply(first)).toEqual({ outcome: 'applied' });
    const again = await store.apply(transferPlan(id, A, 10n, key));
    expect(again.outcome).toBe('replay');
    if (again.outcome !== 'replay') return;
    expect(idem.replay(again.record, key)).toEqual({ ...first.idempotency?.response, replayed: true });
    expect(await balances(id)).toEqual({ [from]: 90n, [A]: 10n });
    await fx.orm.em
      .fork()
      .nativeUpdate(IdempotencyRecord, { id: key.id }, { expiresAt: new Date(Date.now() - 1000) });
    expect(await store.apply(transferPlan(id, A, 10n, key))).toEqual({ outcome: 'applied' });
    expect(await balances(id)).toEqual({ [from]: 80n, [A]: 20n });
  });

  it('rejects on the first failing guard, in plan order, and writes nothing', async () => {
    const id = await funded(5n);
    const key = idempotency().keyOf({ userId: player.userId, operation: 'conf', key: 'rej', request: {} });
    const stranger = { ...transferPlan(id, A, 50n, key), guards: [] as Plan['guards'] };
    stranger.guards = [
      { kind: 'controls', userId: studio.userId, wallet: from },
      { kind: 'holds', assetId: id, wallet: from, atLeast: 50n },
    ];
    const controls = await store.apply(stranger);
    expect(controls).toEqual({ outcome: 'rejected', guard: stranger.guards[0] });
    const short = transferPlan(id, A, 50n, key);
    expect(await store.apply(short)).toEqual({ outcome: 'rejected', guard: short.guards[1], found: 5n });
    // An absent holding holds 0.
    const nobody = transferPlan(id, A, 1n);
    nobody.guards = [{ kind: 'holds', assetId: id, wallet: B, atLeast: 1n }];
    expect(await store.apply(nobody)).toEqual({ outcome: 'rejected', guard: nobody.guards[0], found: 0n });
    expect(await balances(id)).toEqual({ [from]: 5n });
    expect(await count(Transfer, id)).toBe(1); // the mint
    expect(await events(id)).toBe(0);
    expect(await fx.orm.em.fork().count(IdempotencyRecord, { id: key?.id })).toBe(0);
  });

  it('applies a plan of several legs all together or not at all', async () => {
    const id = await funded(10n);
    const at = new Date();
    const legs = (second: bigint): Plan => ({
      at,
      guards: [
        { kind: 'controls', userId: player.userId, wallet: from },
        // Guards see the state before the plan: the domain sums a wallet's debits into one guard.
        { kind: 'holds', assetId: id, wallet: from, atLeast: 4n + second },
      ],
      balances: [
        { assetId: id, wallet: from, delta: -4n },
        { assetId: id, wallet: A, delta: 4n },
        { assetId: id, wallet: from, delta: -second },
        { assetId: id, wallet: B, delta: second },
      ],
      transfers: [
        { id: newId('tr'), assetId: id, from, to: A, amount: 4n, requestedBy: player.userId, createdAt: at },
        {
          id: newId('tr'),
          assetId: id,
          from,
          to: B,
          amount: second,
          requestedBy: player.userId,
          createdAt: at,
        },
      ],
      events: [transferEvent(id, from, A, at), transferEvent(id, from, B, at)],
    });
    expect(await store.apply(legs(7n))).toMatchObject({ outcome: 'rejected', found: 10n });
    expect(await balances(id)).toEqual({ [from]: 10n });
    expect(await store.apply(legs(6n))).toEqual({ outcome: 'applied' });
    expect(await balances(id)).toEqual({ [from]: 0n, [A]: 4n, [B]: 6n });
    expect(await count(Transfer, id)).toBe(3);
    const rows = await fx.orm.em.fork().find(OutboxEvent, { assetId: id }, { orderBy: { id: 'asc' } });
    expect(rows.map((row) => row.toWallet)).toEqual([A, B]); // ids drawn in plan order
  });

  it('refuses an unguarded change that would take a balance below zero', async () => {
    const id = await funded(3n);
    const plan: Plan = {
      at: new Date(),
      guards: [],
      balances: [
        { assetId: id, wallet: from, delta: -5n },
        { assetId: id, wallet: A, delta: 5n },
      ],
    };
    await expect(store.apply(plan)).rejects.toBeInstanceOf(NegativeBalanceError);
    expect(await balances(id)).toEqual({ [from]: 3n });
    // Unguarded deltas that stay at or above zero apply (on-chain transfers applied as seen).
    expect(
      await store.apply({
        ...plan,
        balances: [
          { assetId: id, wallet: from, delta: -3n },
          { assetId: id, wallet: A, delta: 3n },
        ],
      }),
    ).toEqual({ outcome: 'applied' });
    expect(await balances(id)).toEqual({ [from]: 0n, [A]: 3n });
  });

  it('checks a supply against its cap and applies supply changes', async () => {
    const id = await funded(990n);
    const mint = (amount: bigint): Plan => ({
      at: new Date(),
      guards: [{ kind: 'supplyWithin', assetId: id, adding: amount, max: 1000n }],
      supplies: [{ assetId: id, delta: amount }],
      balances: [{ assetId: id, wallet: B, delta: amount }],
    });
    expect(await store.apply(mint(11n))).toEqual({
      outcome: 'rejected',
      guard: mint(11n).guards[0],
      found: 990n,
    });
    expect(await store.apply(mint(10n))).toEqual({ outcome: 'applied' });
    expect(await supplyOf(fx.orm, id)).toBe(1000n);
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  it('creates assets with increasing seq, refuses a taken id, sets an NFT owner', async () => {
    const at = new Date();
    const nft = currency({
      kind: 'nft',
      symbol: null,
      decimals: null,
      totalSupply: null,
      maxSupply: null,
      owner: from,
    });
    const plan: Plan = {
      at,
      guards: [{ kind: 'assetAbsent', assetId: nft.id }],
      assets: [nft],
      balances: [{ assetId: nft.id, wallet: from, delta: 1n }],
      events: [
        {
          type: 'newNFT',
          occurredAt: at,
          data: payload('newNFT', { id: nft.id }),
          assetId: nft.id,
          collectionId: 'conf',
          wallets: [from],
          fromWallet: null,
          toWallet: from,
        },
      ],
    };
    invalidated.length = 0;
    expect(await store.apply(plan)).toEqual({ outcome: 'applied' });
    expect(invalidated).toEqual([[`a:${nft.id}`, `h:${nft.id}`, `w:${from}`]]);
    expect(await store.apply(plan)).toEqual({ outcome: 'rejected', guard: plan.guards[0] });
    const other = currency();
    await store.apply({ at, guards: [], assets: [other] });
    const [first, second] = await Promise.all([
      fx.orm.em.fork().findOneOrFail(Asset, { id: nft.id }),
      fx.orm.em.fork().findOneOrFail(Asset, { id: other.id }),
    ]);
    expect(second.seq).toBeGreaterThan(first.seq);
    expect(first).toMatchObject({ kind: 'nft', owner: from, metadata: { image: 'ipfs://x' } });
    expect(
      await store.apply({
        at,
        guards: [],
        owners: [{ assetId: nft.id, owner: A }],
        balances: [
          { assetId: nft.id, wallet: from, delta: -1n },
          { assetId: nft.id, wallet: A, delta: 1n },
        ],
      }),
    ).toEqual({ outcome: 'applied' });
    expect((await fx.orm.em.fork().findOneOrFail(Asset, { id: nft.id })).owner).toBe(A);
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  it('writes price rows, wallet rows and internal ledger changes', async () => {
    const id = await funded(1n);
    const at = new Date();
    const wallet = `0x${randomBytes(20).toString('hex')}` as StoredAddress;
    invalidated.length = 0;
    const plan: Plan = {
      at,
      guards: [{ kind: 'walletAbsent', wallet }],
      wallets: [
        { address: wallet, userId: player.userId, kind: 'linked', encryptedPrivateKey: null, createdAt: at },
      ],
      prices: [
        {
          assetId: id,
          price: '1.5',
          priceScaled: 1_500_000_000_000_000_000n,
          currency: 'USD',
          source: 'test',
          observedAt: at,
          postedBy: studio.userId,
          createdAt: at,
        },
      ],
      events: [
        {
          type: 'priceUpdate',
          occurredAt: at,
          data: payload('priceUpdate', { assetId: id }),
          assetId: id,
          collectionId: 'conf',
          wallets: [],
        },
      ],
      ledgerChanges: [{ kind: 'walletLinked', occurredAt: at, userId: player.userId, wallet }],
    };
    expect(await store.apply(plan)).toEqual({ outcome: 'applied' });
    expect(invalidated).toEqual([[`u:${player.userId}`, `w:${wallet}`]]);
    expect(await fx.orm.em.fork().findOneOrFail(Wallet, { address: wallet })).toMatchObject({
      kind: 'linked',
    });
    const price = await fx.orm.em.fork().findOneOrFail(PriceObservation, { asset: id } as never);
    expect(price).toMatchObject({ price: '1.5', priceScaled: 1_500_000_000_000_000_000n, currency: 'USD' });
    expect(price.observedAt.getTime()).toBe(at.getTime());
    expect(await fx.orm.em.fork().count(LedgerChange, { wallet })).toBe(1);
    expect(await store.apply(plan)).toEqual({ outcome: 'rejected', guard: plan.guards[0] });
    expect(await fx.orm.em.fork().count(LedgerChange, { wallet })).toBe(1);
  });

  it('gives each event the plan’s operation id, or its own when it has one (issue 36)', async () => {
    const id = await funded(1n);
    const at = new Date();
    const event = (operationId?: string) => ({
      type: 'priceUpdate' as const,
      occurredAt: at,
      data: payload('priceUpdate', { assetId: id }),
      assetId: id,
      collectionId: 'conf',
      wallets: [],
      ...(operationId && { operationId }),
    });
    const [plan, own] = [newId('op'), newId('op')];
    expect(await store.apply({ at, guards: [], events: [event(), event(own)], operationId: plan })).toEqual({
      outcome: 'applied',
    });
    const rows = await fx.orm.em
      .fork()
      .find(OutboxEvent, { assetId: id, type: 'priceUpdate' }, { orderBy: { id: 'asc' } });
    expect(rows.map((row) => row.operationId)).toEqual([plan, own]);
  });

  it('keeps balances exact under concurrent opposite plans (no lost update, no deadlock)', async () => {
    const id = await funded(1000n);
    const other = await createUser(fx);
    const otherWallet = other.wallet as StoredAddress;
    const move = (user: TestUser, f: StoredAddress, t: StoredAddress, amount: bigint): Plan => {
      const at = new Date();
      return {
        at,
        guards: [
          { kind: 'controls', userId: user.userId, wallet: f },
          { kind: 'holds', assetId: id, wallet: f, atLeast: amount },
        ],
        balances: [
          { assetId: id, wallet: f, delta: -amount },
          { assetId: id, wallet: t, delta: amount },
        ],
        transfers: [
          { id: newId('tr'), assetId: id, from: f, to: t, amount, requestedBy: user.userId, createdAt: at },
        ],
        events: [transferEvent(id, f, t, at)],
      };
    };
    await store.apply(move(player, from, otherWallet, 500n));
    const outcomes = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        i % 2 === 0
          ? store.apply(move(player, from, otherWallet, 7n))
          : store.apply(move(other, otherWallet, from, 5n)),
      ),
    );
    expect(outcomes.every((outcome) => outcome.outcome === 'applied')).toBe(true);
    expect(await balances(id)).toEqual({
      [from]: 500n - 30n * 7n + 30n * 5n,
      [otherWallet]: 500n + 30n * 7n - 30n * 5n,
    });
    expect(await events(id)).toBe(61);
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  // Issue 21: a burn is a leg to the zero address that credits no one and lowers the supply; a burned
  // NFT is owned by the zero address; a batch is one plan whose guards cover every leg.
  const ZERO = `0x${'0'.repeat(40)}` as StoredAddress;

  it('applies a burn plan: the debit, the supply down, no credit, the transfer to the zero address', async () => {
    const id = await funded(100n);
    const at = new Date();
    const plan: Plan = {
      at,
      guards: [
        { kind: 'controls', userId: player.userId, wallet: from },
        { kind: 'holds', assetId: id, wallet: from, atLeast: 40n },
      ],
      balances: [{ assetId: id, wallet: from, delta: -40n }],
      supplies: [{ assetId: id, delta: -40n }],
      transfers: [
        {
          id: newId('tr'),
          assetId: id,
          from,
          to: ZERO,
          amount: 40n,
          requestedBy: player.userId,
          createdAt: at,
        },
      ],
      events: [transferEvent(id, from, ZERO, at)],
    };
    expect(await store.apply(plan)).toEqual({ outcome: 'applied' });
    expect(await balances(id)).toEqual({ [from]: 60n });
    expect(await supplyOf(fx.orm, id)).toBe(60n);
    expect(await count(Transfer, id)).toBe(2);
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  /** An NFT created straight into the player's wallet, through one plan. */
  async function mintedNft(overrides: Partial<NewAsset> = {}): Promise<string> {
    const asset: NewAsset = {
      ...currency(),
      id: newId('nft'),
      kind: 'nft',
      symbol: null,
      decimals: null,
      totalSupply: null,
      maxSupply: null,
      owner: from,
      ...overrides,
    };
    expect(
      await store.apply({
        at: new Date(),
        guards: [],
        assets: [asset],
        balances: [{ assetId: asset.id, wallet: asset.owner ?? from, delta: 1n }],
      }),
    ).toEqual({ outcome: 'applied' });
    return asset.id;
  }

  it('burns an NFT for good: owned by the zero address, held by no one, its holds guard fails after', async () => {
    const at = new Date();
    const nft = { id: await mintedNft() };
    const burn = (): Plan => ({
      at: new Date(),
      guards: [{ kind: 'holds', assetId: nft.id, wallet: from, atLeast: 1n }],
      balances: [{ assetId: nft.id, wallet: from, delta: -1n }],
      owners: [{ assetId: nft.id, owner: ZERO }],
      transfers: [
        {
          id: newId('tr'),
          assetId: nft.id,
          from,
          to: ZERO,
          amount: 1n,
          requestedBy: player.userId,
          createdAt: at,
        },
      ],
    });
    expect(await store.apply(burn())).toEqual({ outcome: 'applied' });
    expect((await fx.orm.em.fork().findOneOrFail(Asset, { id: nft.id })).owner).toBe(ZERO);
    const again = await store.apply(burn());
    expect(again).toMatchObject({
      outcome: 'rejected',
      guard: { kind: 'holds', assetId: nft.id },
      found: 0n,
    });
    expect(await count(Transfer, nft.id)).toBe(1);
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  it('applies a multi-leg plan whole, or rejects it on the summed debit with nothing written', async () => {
    const id = await funded(100n);
    const legs = (amounts: bigint[]): Plan => {
      const at = new Date();
      const total = amounts.reduce((sum, n) => sum + n, 0n);
      return {
        at,
        guards: [
          { kind: 'controls', userId: player.userId, wallet: from },
          { kind: 'holds', assetId: id, wallet: from, atLeast: total },
        ],
        balances: amounts.flatMap((amount, i) => [
          { assetId: id, wallet: from, delta: -amount },
          { assetId: id, wallet: i % 2 ? A : B, delta: amount },
        ]),
        transfers: amounts.map((amount, i) => ({
          id: newId('tr'),
          assetId: id,
          from,
          to: i % 2 ? A : B,
          amount,
          requestedBy: player.userId,
          createdAt: at,
        })),
        events: amounts.map((_, i) => transferEvent(id, from, i % 2 ? A : B, at)),
      };
    };
    expect(await store.apply(legs([10n, 20n, 30n]))).toEqual({ outcome: 'applied' });
    expect(await balances(id)).toEqual({ [from]: 40n, [B]: 40n, [A]: 20n });
    const refused = await store.apply(legs([30n, 5n, 6n]));
    expect(refused).toMatchObject({
      outcome: 'rejected',
      guard: { kind: 'holds', atLeast: 41n },
      found: 40n,
    });
    expect(await balances(id)).toEqual({ [from]: 40n, [B]: 40n, [A]: 20n });
    expect(await count(Transfer, id)).toBe(4);
    expect(await events(id)).toBe(3);
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  describe('timed currency grants (issue 36)', () => {
    const ZERO_WALLET = `0x${'0'.repeat(40)}` as StoredAddress;
    const HOUR = 3_600_000;

    /** The lots of a holding, soonest end first: amount and end time (ms). */
    async function lotsOf(assetId: string, wallet: StoredAddress): Promise<[bigint, number][]> {
      const rows = await fx.orm.em
        .fork()
        .find(CurrencyLot, { assetId, wallet }, { orderBy: { expiresAt: 'asc', id: 'asc' } });
      return rows.map((row) => [row.amount as bigint, (row.expiresAt as Date).getTime()]);
    }

    /** Mints `amount` of `assetId` to `to` as a lot ending at `ends`. */
    async function grant(assetId: string, to: StoredAddress, amount: bigint, ends: number): Promise<string> {
      const at = new Date();
      const transferId = newId('tr');
      const lotId = newId('lot');
      expect(
        await store.apply({
          at,
          guards: [],
          supplies: [{ assetId, delta: amount }],
          balances: [{ assetId, wallet: to, delta: amount }],
          transfers: [
            {
              id: transferId,
              assetId,
              from: ZERO_WALLET,
              to,
              amount,
              requestedBy: studio.userId,
              createdAt: at,
            },
          ],
          lots: [
            {
              id: lotId,
              assetId,
              wallet: to,
              amount,
              expiresAt: new Date(ends),
              sourceId: transferId,
              createdAt: at,
            },
          ],
        }),
      ).toEqual({ outcome: 'applied' });
      return lotId;
    }

    /** The sweep's burn of a lot as read (its remaining amount), at `at`. */
    const sweep = (
      lotId: string,
      assetId: string,
      wallet: StoredAddress,
      amount: bigint,
      at: Date,
    ): Plan => ({
      at,
      guards: [{ kind: 'lotAt', lotId, assetId, wallet, amount }],
      balances: [{ assetId, wallet, delta: -amount }],
      supplies: [{ assetId, delta: -amount }],
      transfers: [
        {
          id: newId('tr'),
          assetId,
          from: wallet,
          to: ZERO_WALLET,
          amount,
          requestedBy: null,
          createdAt: at,
          lotId,
        },
      ],
      events: [{ ...transferEvent(assetId, wallet, ZERO_WALLET, at), operationId: newId('op') }],
    });

    it('spends live lots first, soonest end first, moves them with their units, and a burn consumes them', async () => {
      const id = await funded(100n);
      const now = Date.now();
      await grant(id, from, 20n, now + 2 * HOUR);
      await grant(id, from, 10n, now + HOUR);
      expect(await store.apply(transferPlan(id, B, 15n))).toEqual({ outcome: 'applied' });
      expect(await lotsOf(id, from)).toEqual([[15n, now + 2 * HOUR]]);
      expect(await lotsOf(id, B)).toEqual([
        [10n, now + HOUR],
        [5n, now + 2 * HOUR],
      ]);
      expect(await balances(id)).toEqual({ [from]: 115n, [B]: 15n });
      // A burn of 20: the 15 timed units, then 5 permanent ones.
      const at = new Date();
      const burn: Plan = {
        at,
        guards: [{ kind: 'holds', assetId: id, wallet: from, atLeast: 20n }],
        balances: [{ assetId: id, wallet: from, delta: -20n }],
        supplies: [{ assetId: id, delta: -20n }],
        transfers: [
          {
            id: newId('tr'),
            assetId: id,
            from,
            to: ZERO_WALLET,
            amount: 20n,
            requestedBy: null,
            createdAt: at,
          },
        ],
      };
      expect(await store.apply(burn)).toEqual({ outcome: 'applied' });
      expect(await lotsOf(id, from)).toEqual([]);
      expect(await balances(id)).toEqual({ [from]: 95n, [B]: 15n });
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('never moves units past their end (holds counts them out, swept or not), never escrows timed units', async () => {
      const id = await funded(10n);
      const ends = Date.now() + HOUR;
      await grant(id, from, 5n, ends);
      const later = (plan: Plan): Plan => ({ ...plan, at: new Date(ends + 1000) });
      const tooMuch = later(transferPlan(id, B, 11n));
      expect(await store.apply(tooMuch)).toMatchObject({
        outcome: 'rejected',
        guard: tooMuch.guards[1],
        found: 10n,
      });
      expect(await store.apply(later(transferPlan(id, B, 10n)))).toEqual({ outcome: 'applied' });
      expect(await lotsOf(id, from)).toEqual([[5n, ends]]);
      expect(await balances(id)).toEqual({ [from]: 5n, [B]: 10n });
      // Before its end the lot is spendable, but not to a reservation (`untimed`).
      const reserve: Plan = {
        at: new Date(),
        guards: [{ kind: 'holds', assetId: id, wallet: from, atLeast: 1n, untimed: true }],
        reserves: [{ assetId: id, wallet: from, delta: 1n }],
      };
      expect(await store.apply(reserve)).toMatchObject({ outcome: 'rejected', found: 0n });
      await expect(store.apply({ ...reserve, guards: [] })).rejects.toBeInstanceOf(NegativeBalanceError);
      expect(await lotsOf(id, from)).toEqual([[5n, ends]]);
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('burns a lot once at its end (lotAt: open before, changed, missing after), the rest of the wallet untouched', async () => {
      const id = await funded(30n);
      const ends = Date.now() + HOUR;
      const lot = await grant(id, from, 8n, ends);
      expect(await store.apply(transferPlan(id, B, 3n))).toEqual({ outcome: 'applied' });
      const early = sweep(lot, id, from, 5n, new Date());
      expect(await store.apply(early)).toEqual({
        outcome: 'rejected',
        guard: early.guards[0],
        reason: 'open',
      });
      const stale = sweep(lot, id, from, 8n, new Date(ends + 1000));
      expect(await store.apply(stale)).toEqual({
        outcome: 'rejected',
        guard: stale.guards[0],
        reason: 'changed',
      });
      const due = sweep(lot, id, from, 5n, new Date(ends + 1000));
      expect(await store.apply(due)).toEqual({ outcome: 'applied' });
      expect(await store.apply(due)).toEqual({
        outcome: 'rejected',
        guard: due.guards[0],
        reason: 'missing',
      });
      expect(await lotsOf(id, from)).toEqual([]);
      // 30 + 8 granted, 3 sent (from the lot), the lot's other 5 burned.
      expect(await balances(id)).toEqual({ [from]: 30n, [B]: 3n });
      expect(await supplyOf(fx.orm, id)).toBe(33n);
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('two sweeps of one lot at once: exactly one burns it', async () => {
      const id = await funded(0n);
      const ends = Date.now() + HOUR;
      const lot = await grant(id, from, 9n, ends);
      const at = new Date(ends + 1000);
      const outcomes = await Promise.all([
        store.apply(sweep(lot, id, from, 9n, at)),
        store.apply(sweep(lot, id, from, 9n, at)),
      ]);
      expect(outcomes.map((o) => o.outcome).sort()).toEqual(['applied', 'rejected']);
      expect(await balances(id)).toEqual({ [from]: 0n });
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('one plan passing timed units on: the second leg spends the lot the first leg brought', async () => {
      const id = await funded(10n);
      const ends = Date.now() + HOUR;
      await grant(id, from, 5n, ends);
      // B holds 3 permanent units only (minted to it); in one plan it gets 2 timed units from the
      // player and sends 5 on: the 2 timed ones first.
      const minted = new Date();
      expect(
        await store.apply({
          at: minted,
          guards: [],
          supplies: [{ assetId: id, delta: 3n }],
          balances: [{ assetId: id, wallet: B, delta: 3n }],
          transfers: [
            {
              id: newId('tr'),
              assetId: id,
              from: ZERO_WALLET,
              to: B,
              amount: 3n,
              requestedBy: null,
              createdAt: minted,
            },
          ],
        }),
      ).toEqual({ outcome: 'applied' });
      expect(await lotsOf(id, B)).toEqual([]);
      const at = new Date();
      const leg = (f: StoredAddress, t: StoredAddress, amount: bigint) => ({
        id: newId('tr'),
        assetId: id,
        from: f,
        to: t,
        amount,
        requestedBy: null,
        createdAt: at,
      });
      expect(
        await store.apply({
          at,
          guards: [{ kind: 'holds', assetId: id, wallet: from, atLeast: 2n }],
          balances: [
            { assetId: id, wallet: from, delta: -2n },
            { assetId: id, wallet: B, delta: 2n },
            { assetId: id, wallet: B, delta: -5n },
            { assetId: id, wallet: A, delta: 5n },
          ],
          transfers: [leg(from, B, 2n), leg(B, A, 5n)],
        }),
      ).toEqual({ outcome: 'applied' });
      expect(await lotsOf(id, B)).toEqual([]);
      expect(await lotsOf(id, A)).toEqual([[2n, ends]]);
      expect(await lotsOf(id, from)).toEqual([[3n, ends]]);
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('an unguarded debit trims the soonest lots to the balance; a lot moved back merges with its kind', async () => {
      const id = await funded(0n);
      const now = Date.now();
      await grant(id, from, 5n, now + HOUR);
      await grant(id, from, 5n, now + 2 * HOUR);
      expect(
        await store.apply({
          at: new Date(),
          guards: [],
          balances: [{ assetId: id, wallet: from, delta: -7n }],
          supplies: [{ assetId: id, delta: -7n }],
        }),
      ).toEqual({ outcome: 'applied' });
      expect(await lotsOf(id, from)).toEqual([[3n, now + 2 * HOUR]]);
      expect(await store.apply(transferPlan(id, B, 2n))).toEqual({ outcome: 'applied' });
      const back = transferPlan(id, from, 2n);
      const at = back.at;
      const id2 = newId('tr');
      expect(
        await store.apply({
          ...back,
          guards: [],
          balances: [
            { assetId: id, wallet: B, delta: -2n },
            { assetId: id, wallet: from, delta: 2n },
          ],
          transfers: [
            { id: id2, assetId: id, from: B, to: from, amount: 2n, requestedBy: null, createdAt: at },
          ],
        }),
      ).toEqual({ outcome: 'applied' });
      expect(await lotsOf(id, from)).toEqual([[3n, now + 2 * HOUR]]);
      expect(await lotsOf(id, B)).toEqual([]);
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });
  });

  // ---- Stores (issue 36) ----
  it('checks a store offer available (status, version, window, limits), counts its units once, and writes its purchase (issue 36)', async () => {
    const offer = async (fields: Partial<StoreOffer> = {}) => {
      const em = fx.orm.em.fork();
      const at = new Date();
      const row = em.create(StoreOffer, {
        id: newId('sof'),
        collectionId: 'conf',
        name: 'Offer',
        version: 1,
        status: 'active',
        price: [],
        grants: [],
        payTo: A,
        limitPerWallet: null,
        limitTotal: null,
        sold: 0,
        startsAt: null,
        endsAt: null,
        createdBy: studio.userId,
        createdAt: at,
        updatedAt: at,
        ...fields,
      });
      await em.flush();
      return row.id;
    };
    const buy = (offerId: string, wallet: StoredAddress, quantity = 1, version = 1): Plan => {
      const at = new Date();
      const id = newId('op');
      return {
        at,
        guards: [{ kind: 'offerAvailable', offerId, version, wallet, quantity, at }],
        offerSales: [{ offerId, wallet, quantity }],
        storePurchases: [
          {
            id,
            offerId,
            version,
            collectionId: 'conf',
            wallet,
            userId: player.userId,
            quantity,
            paid: [{ assetId: 'gold', amount: '1.5' }],
            payTo: A,
            granted: [{ assetId: 'gems', amount: String(quantity) }],
            createdAt: at,
          },
        ],
      };
    };
    const limited = await offer({ limitTotal: 3, limitPerWallet: 2 });
    expect(await store.apply(buy(limited, from, 2))).toEqual({ outcome: 'applied' });
    expect(await store.apply(buy(limited, from))).toMatchObject({
      outcome: 'rejected',
      reason: 'walletLimit',
    });
    // Two buyers for the last unit at once: exactly one applies.
    const outcomes = await Promise.all([store.apply(buy(limited, A)), store.apply(buy(limited, B))]);
    expect(outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(1);
    expect(outcomes.find((o) => o.outcome === 'rejected')).toMatchObject({ reason: 'soldOut' });
    const em = fx.orm.em.fork();
    expect((await em.findOneOrFail(StoreOffer, { id: limited })).sold).toBe(3);
    expect((await em.findOneOrFail(StoreOfferWallet, { offerId: limited, wallet: from })).bought).toBe(2);
    const purchases = await em.find(StorePurchase, { offerId: limited }, { orderBy: { id: 'asc' } });
    expect(purchases.map((p) => [p.wallet, p.quantity])).toContainEqual([from, 2]);
    expect(purchases[0]).toMatchObject({ paid: [{ assetId: 'gold', amount: '1.5' }], version: 1, payTo: A });

    const reason = async (offerId: string, plan = buy(offerId, from)) => {
      const outcome = await store.apply(plan);
      return outcome.outcome === 'rejected' ? outcome.reason : outcome.outcome;
    };
    expect(await reason(newId('sof'))).toBe('missing');
    expect(await reason(await offer({ status: 'closed' }))).toBe('closed');
    expect(await reason(await offer({ version: 2 }))).toBe('version');
    expect(await reason(await offer({ startsAt: new Date(Date.now() + 60_000) }))).toBe('notStarted');
    expect(await reason(await offer({ endsAt: new Date(Date.now() - 1) }))).toBe('expired');
    expect(await reason(await offer({ limitTotal: 1 }), buy(limited, from, 2))).toBe('soldOut');
    expect(await reason(await offer({ endsAt: new Date(Date.now() + 60_000), limitTotal: 5 }))).toBe(
      'applied',
    );
  });

  it('takes a draw seed’s nonces one at a time, checks pity counters, and writes draws (issue 36)', async () => {
    const em = fx.orm.em.fork();
    const seedId = newId('dsd');
    em.create(DrawSeed, {
      id: seedId,
      wallet: from,
      activeKey: null,
      status: 'active',
      commitment: 'c'.repeat(64),
      sealedSeed: 'sealed',
      serverSeed: null,
      nextNonce: 0,
      createdAt: new Date(),
      revealedAt: null,
    });
    await em.flush();
    const boxId = newId('lbx');
    const open = (nonce: number, pity: number): Plan => {
      const at = new Date();
      const id = newId('op');
      return {
        at,
        guards: [
          { kind: 'seedAt', seedId, wallet: from, nonce },
          { kind: 'pityAt', boxId, wallet: from, count: pity },
        ],
        seedNonces: [{ seedId, next: nonce + 1 }],
        pityCounts: [{ boxId, wallet: from, count: pity + 1 }],
        draws: [
          {
            id,
            boxId,
            assetId: 'box',
            wallet: from,
            seedId,
            nonce,
            data: { id, nonce } as never,
            createdAt: at,
          },
        ],
      };
    };
    // Two openings planned on the same nonce at once: exactly one takes it.
    const outcomes = await Promise.all([store.apply(open(0, 0)), store.apply(open(0, 0))]);
    expect(outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(1);
    expect(outcomes.find((o) => o.outcome === 'rejected')).toMatchObject({ reason: 'nonce' });
    expect(await store.apply(open(1, 0))).toMatchObject({ outcome: 'rejected', reason: 'pity' });
    expect(await store.apply(open(1, 1))).toEqual({ outcome: 'applied' });
    const read = fx.orm.em.fork();
    expect((await read.findOneOrFail(DrawSeed, { id: seedId })).nextNonce).toBe(2);
    expect((await read.findOneOrFail(LootBoxPity, { boxId, wallet: from })).count).toBe(2);
    const draws = await read.find(DrawRecord, { seedId }, { orderBy: { nonce: 'asc' } });
    expect(draws.map((d) => [d.nonce, d.data.nonce])).toEqual([
      [0, 0],
      [1, 1],
    ]);
    await read.nativeUpdate(DrawSeed, { id: seedId }, { status: 'revealed' });
    expect(await store.apply(open(2, 2))).toMatchObject({ outcome: 'rejected', reason: 'revealed' });
    const other = { ...open(2, 2), guards: [{ kind: 'seedAt' as const, seedId, wallet: A, nonce: 2 }] };
    expect(await store.apply(other)).toMatchObject({ outcome: 'rejected', reason: 'missing' });
  });

  // Issue 21's store primitives: movable / burnable guards (frozen, soulbound), trades, versions.
  it('writes listings, checks them active, sells one once, and writes its sale (issue 35)', async () => {
    const assetId = await funded(10n);
    const listing = (expiresAt: Date | null = null) => ({
      id: newId('lst'),
      sellerUserId: player.userId,
      sellerWallet: from,
      assetId,
      collectionId: 'conf',
      amount: 4n,
      currencyId: assetId,
      price: 12345678901234567890n,
      expiresAt,
      createdAt: new Date(),
      metadata: {},
    });
    const open = listing();
    expect(await store.apply({ at: new Date(), guards: [], listings: [open] })).toEqual({
      outcome: 'applied',
    });
    expect(await fx.orm.em.fork().findOneOrFail(Listing, { id: open.id })).toMatchObject({
      status: 'active',
      endReason: null,
      sellerWallet: from,
      amount: 4n,
      price: 12345678901234567890n,
      expiresAt: null,
      operationId: null,
      closedBy: null,
    });
    const sell = (): Plan => {
      const at = new Date();
      return {
        at,
        guards: [{ kind: 'listingActive', listingId: open.id, at }],
        listingStatuses: [
          { listingId: open.id, status: 'sold', reason: null, by: studio.userId, operationId: 'op_1', at },
        ],
        sales: [
          {
            id: newId('op'),
            listingId: open.id,
            assetId,
            collectionId: 'conf',
            amount: 4n,
            currencyId: assetId,
            price: 100n,
            royalty: 5n,
            fee: 2n,
            sellerProceeds: 93n,
            sellerWallet: from,
            buyerWallet: A,
            createdAt: at,
          },
        ],
      };
    };
    // Two purchases at once: exactly one sells it (one sale row), the other finds it sold.
    const outcomes = await Promise.all([store.apply(sell()), store.apply(sell())]);
    expect(outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(1);
    expect(outcomes.find((o) => o.outcome === 'rejected')).toMatchObject({ reason: 'sold' });
    expect(await fx.orm.em.fork().findOneOrFail(Listing, { id: open.id })).toMatchObject({
      status: 'sold',
      closedBy: studio.userId,
      operationId: 'op_1',
    });
    const sales = await fx.orm.em.fork().find(Sale, { listingId: open.id });
    expect(sales.map((sale) => [sale.price, sale.royalty, sale.fee, sale.sellerProceeds])).toEqual([
      [100n, 5n, 2n, 93n],
    ]);

    const check = (listingId: string, when = new Date()): Plan => ({
      at: when,
      guards: [{ kind: 'listingActive', listingId, at: when }],
    });
    const ended = listing();
    await store.apply({ at: new Date(), guards: [], listings: [ended] });
    const at = new Date();
    await store.apply({
      at,
      guards: [],
      listingStatuses: [
        { listingId: ended.id, status: 'ended', reason: 'moved', by: null, operationId: null, at },
      ],
    });
    expect(await fx.orm.em.fork().findOneOrFail(Listing, { id: ended.id })).toMatchObject({
      status: 'ended',
      endReason: 'moved',
    });
    expect(await store.apply(check(ended.id))).toMatchObject({ outcome: 'rejected', reason: 'ended' });
    expect(await store.apply(check(newId('lst')))).toMatchObject({ outcome: 'rejected', reason: 'missing' });
    const expiring = listing(new Date(Date.now() + 5_000));
    await store.apply({ at: new Date(), guards: [], listings: [expiring] });
    expect(await store.apply(check(expiring.id))).toEqual({ outcome: 'applied' });
    expect(await store.apply(check(expiring.id, expiring.expiresAt as Date))).toMatchObject({
      outcome: 'rejected',
      reason: 'expired',
    });
  });

  it('writes a listing’s trait rows with it, rewrites them with its item’s metadata, deletes them when it closes (issue 35)', async () => {
    const assetId = await funded(10n);
    const expiresAt = new Date(Date.now() + 3_600_000);
    const listing = (price: bigint) => ({
      id: newId('lst'),
      sellerUserId: player.userId,
      sellerWallet: from,
      assetId,
      collectionId: 'conf',
      amount: 1n,
      currencyId: assetId,
      price,
      expiresAt,
      createdAt: new Date(),
      // Each value once, as its text; an object's value and one longer than the column left out.
      metadata: {
        attributes: [
          { trait_type: 'rarity', value: 'epic' },
          { trait_type: 'power', value: 7 },
          { trait_type: 'power', value: 7 },
          { trait_type: 'shiny', value: true },
          { trait_type: 'nested', value: { a: 1 } },
          { trait_type: 'long', value: 'x'.repeat(501) },
        ],
      },
    });
    const [cheap, dear] = [listing(5n), listing(9n)];
    const rows = async () =>
      (
        await fx.orm.em
          .fork()
          .find(
            ListingTrait,
            { currencyId: assetId },
            { orderBy: [{ price: 'asc' }, { traitType: 'asc' }, { traitValue: 'asc' }] },
          )
      ).map((row) => [row.listingId, row.traitType, row.traitValue, row.collectionId, row.price]);
    expect(await store.apply({ at: new Date(), guards: [], listings: [cheap, dear] })).toEqual({
      outcome: 'applied',
    });
    const of = (l: typeof cheap, ...traits: [string, string][]) =>
      traits.map(([type, value]) => [l.id, type, value, 'conf', l.price]);
    const epic: [string, string][] = [
      ['power', '7'],
      ['rarity', 'epic'],
      ['shiny', 'true'],
    ];
    expect(await rows()).toEqual([...of(cheap, ...epic), ...of(dear, ...epic)]);
    const [row] = await fx.orm.em.fork().find(ListingTrait, { listingId: cheap.id });
    expect(row.currencyId).toBe(assetId);
    expect(row.expiresAt?.getTime()).toBe(expiresAt.getTime());

    // The item's metadata changes: its active listings are found under its new values only.
    const metadata = { attributes: [{ trait_type: 'rarity', value: 'rare' }] };
    expect(await store.apply({ at: new Date(), guards: [], assetUpdates: [{ assetId, metadata }] })).toEqual({
      outcome: 'applied',
    });
    expect(await rows()).toEqual([...of(cheap, ['rarity', 'rare']), ...of(dear, ['rarity', 'rare'])]);

    // Sold, then ended: each closed listing's rows go with it, and a close of a closed one changes nothing.
    const close = (l: typeof cheap, status: 'sold' | 'ended'): Plan => {
      const at = new Date();
      return {
        at,
        guards: [],
        listingStatuses: [
          {
            listingId: l.id,
            status,
            reason: status === 'ended' ? 'moved' : null,
            by: null,
            operationId: null,
            at,
          },
        ],
      };
    };
    await store.apply(close(cheap, 'sold'));
    expect(await rows()).toEqual(of(dear, ['rarity', 'rare']));
    await store.apply(close(dear, 'ended'));
    await store.apply(close(dear, 'ended'));
    expect(await rows()).toEqual([]);
    // A metadata change of an item with no active listing writes no rows.
    await store.apply({ at: new Date(), guards: [], assetUpdates: [{ assetId, metadata }] });
    expect(await rows()).toEqual([]);
  });

  describe('a listing closed meanwhile stays closed (issue 35)', () => {
    /** An active listing of 1 of a fresh currency, held by the player. */
    async function activeListing() {
      const assetId = await funded(10n);
      const listing = {
        id: newId('lst'),
        sellerUserId: player.userId,
        sellerWallet: from,
        assetId,
        collectionId: 'conf',
        amount: 1n,
        currencyId: assetId,
        price: 7n,
        expiresAt: null,
        createdAt: new Date(),
        metadata: {},
      };
      expect(await store.apply({ at: new Date(), guards: [], listings: [listing] })).toEqual({
        outcome: 'applied',
      });
      return listing;
    }

    /** A purchase of the listing: guarded on it, sold, its sale row and `sale` event. */
    function salePlan(listing: Awaited<ReturnType<typeof activeListing>>): Plan {
      const at = new Date();
      const operationId = newId('op');
      return {
        at,
        guards: [{ kind: 'listingActive', listingId: listing.id, at }],
        listingStatuses: [
          { listingId: listing.id, status: 'sold', reason: null, by: studio.userId, operationId, at },
        ],
        sales: [
          {
            id: operationId,
            listingId: listing.id,
            assetId: listing.assetId,
            collectionId: 'conf',
            amount: 1n,
            currencyId: listing.assetId,
            price: 7n,
            royalty: 0n,
            fee: 0n,
            sellerProceeds: 7n,
            sellerWallet: from,
            buyerWallet: A,
            createdAt: at,
          },
        ],
        events: [
          {
            type: 'sale',
            occurredAt: at,
            data: payload('sale', { listingId: listing.id }),
            assetId: listing.assetId,
            wallets: [from, A],
          },
        ],
        operationId,
      };
    }

    /**
     * What a move, burn or freeze of a listed item writes for a listing it read active (no guard on
     * the listing: ./listings.ts endListingsOf): the end, its `listingEnded` event, and its own event.
     */
    function endingPlan(listing: Awaited<ReturnType<typeof activeListing>>): Plan {
      const at = new Date();
      return {
        at,
        guards: [{ kind: 'controls', userId: player.userId, wallet: from }],
        listingStatuses: [
          { listingId: listing.id, status: 'ended', reason: 'moved', by: null, operationId: null, at },
        ],
        events: [
          transferEvent(listing.assetId, from, B, at),
          {
            type: 'listingEnded',
            occurredAt: at,
            data: payload('listingEnded', { id: listing.id, status: 'ended' }),
            assetId: listing.assetId,
            wallets: [from],
            onlyIfListingClosed: listing.id,
          },
        ],
      };
    }

    const typesOf = async (assetId: string) =>
      (await fx.orm.em.fork().find(OutboxEvent, { assetId }, { orderBy: { id: 'asc' } })).map((e) => e.type);

    async function expectSoldOnce(listing: Awaited<ReturnType<typeof activeListing>>, sale: Plan) {
      expect(await fx.orm.em.fork().findOneOrFail(Listing, { id: listing.id })).toMatchObject({
        status: 'sold',
        endReason: null,
        operationId: sale.operationId,
      });
      expect(await fx.orm.em.fork().count(Sale, { listingId: listing.id })).toBe(1);
    }

    it('an end planned for a listing sold before it applies: the listing stays sold, no listingEnded', async () => {
      const listing = await activeListing();
      const sale = salePlan(listing);
      expect(await store.apply(sale)).toEqual({ outcome: 'applied' });
      expect(await store.apply(endingPlan(listing))).toEqual({ outcome: 'applied' });
      await expectSoldOnce(listing, sale);
      // The plan's own event is written; the end it did not make is not announced.
      expect((await typesOf(listing.assetId)).filter((t) => t !== 'newTransfer')).toEqual(['sale']);
      expect(await typesOf(listing.assetId)).toContain('newTransfer');
    });

    it('an end of an active listing is written with its event', async () => {
      const listing = await activeListing();
      expect(await store.apply(endingPlan(listing))).toEqual({ outcome: 'applied' });
      expect(await fx.orm.em.fork().findOneOrFail(Listing, { id: listing.id })).toMatchObject({
        status: 'ended',
        endReason: 'moved',
      });
      expect(await typesOf(listing.assetId)).toContain('listingEnded');
    });

    if (kind === 'postgres') {
      it('a plan held between its guards and its write while a sale commits leaves the sale sold', async () => {
        const listing = await activeListing();
        const sale = salePlan(listing);
        let ending: Promise<unknown> | undefined;
        await fx.orm.em.fork().transactional(async (em) => {
          const run = (sql: string, params: unknown[]) =>
            em.getConnection().execute(sql, params, 'all', em.getTransactionContext());
          // The sale, applied by the function itself in a transaction held open: it holds the
          // listing's row (listingActive locks it, the status update writes it) until it commits.
          expect(
            await run('select gats_apply_plan(?::jsonb, ?) as existing', [planJson(sale), OUTBOX_LOCK_KEY]),
          ).toEqual([{ existing: null }]);
          // The ending plan read the listing active; its guards pass, its update of the row waits.
          ending = store.apply(endingPlan(listing));
          const waiting = async () =>
            (
              await fx.orm.em
                .fork()
                .getConnection()
                .execute(
                  "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%gats_apply_plan%'",
                )
            )[0].n as number;
          const deadline = Date.now() + 10_000;
          while ((await waiting()) === 0) {
            if (Date.now() > deadline) throw new Error('the ending plan never waited for the sale');
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        });
        // The sale committed first; the ending plan then found the listing sold and left it so.
        expect(await ending).toEqual({ outcome: 'applied' });
        await expectSoldOnce(listing, sale);
        expect((await typesOf(listing.assetId)).filter((t) => t !== 'newTransfer')).toEqual(['sale']);
      });
    }
  });

  describe('offers and reserved balances (issue 35)', () => {
    const reserved = async (assetId: string, wallet: StoredAddress) =>
      ((await fx.orm.em.fork().findOne(Holding, { asset: assetId, wallet } as never))?.reserved as
        | bigint
        | undefined) ?? 0n;

    function offer(
      assetId: string,
      price: bigint,
      expiresAt: Date | null = null,
      trait: { type: string; value: string } | null = null,
    ) {
      return {
        id: newId('ofr'),
        bidderUserId: player.userId,
        bidderWallet: from,
        assetId: null,
        collectionId: 'conf',
        trait,
        currencyId: assetId,
        price,
        expiresAt,
        createdAt: new Date(),
      };
    }

    /** The offer's plan: its row, its price reserved, guarded by the free balance. */
    const open = (o: ReturnType<typeof offer>): Plan => ({
      at: new Date(),
      guards: [{ kind: 'holds', assetId: o.currencyId, wallet: from, atLeast: o.price }],
      offers: [o],
      reserves: [{ assetId: o.currencyId, wallet: from, delta: o.price }],
    });

    /** Pays the offer's price from its reservation to A, closing it. */
    const accept = (o: ReturnType<typeof offer>, at = new Date()): Plan => ({
      at,
      guards: [
        { kind: 'offerOpen', offerId: o.id, at },
        { kind: 'reservedAtLeast', assetId: o.currencyId, wallet: from, atLeast: o.price },
      ],
      offerStatuses: [
        { offerId: o.id, status: 'accepted', by: studio.userId, operationId: 'op_x', soldAssetId: null, at },
      ],
      reserves: [{ assetId: o.currencyId, wallet: from, delta: -o.price }],
      balances: [
        { assetId: o.currencyId, wallet: from, delta: -o.price },
        { assetId: o.currencyId, wallet: A, delta: o.price },
      ],
    });

    const release = (o: ReturnType<typeof offer>): Plan => ({
      at: new Date(),
      guards: [{ kind: 'offerOpen', offerId: o.id }],
      offerStatuses: [
        {
          offerId: o.id,
          status: 'cancelled',
          by: player.userId,
          operationId: null,
          soldAssetId: null,
          at: new Date(),
        },
      ],
      reserves: [{ assetId: o.currencyId, wallet: from, delta: -o.price }],
    });

    it('reserves an offer: the holds guard sees the free part only, the balance stays whole', async () => {
      const id = await funded(10n);
      // A trait offer (issue 35): its attribute stored with it.
      const first = offer(id, 7n, null, { type: 'rarity', value: 'rare' });
      expect(await store.apply(open(first))).toEqual({ outcome: 'applied' });
      expect(await balances(id)).toEqual({ [from]: 10n });
      expect(await reserved(id, from)).toBe(7n);
      // 3 free: a second offer of 4, or a transfer of 4, finds 3.
      expect(await store.apply(open(offer(id, 4n)))).toMatchObject({ outcome: 'rejected', found: 3n });
      expect(await store.apply(transferPlan(id, B, 4n))).toMatchObject({ outcome: 'rejected', found: 3n });
      expect(await store.apply(transferPlan(id, B, 3n))).toEqual({ outcome: 'applied' });
      // An unguarded debit of reserved units fails as a negative balance would: nothing is written.
      await expect(
        store.apply({ at: new Date(), guards: [], balances: [{ assetId: id, wallet: from, delta: -1n }] }),
      ).rejects.toBeInstanceOf(NegativeBalanceError);
      await expect(
        store.apply({ at: new Date(), guards: [], reserves: [{ assetId: id, wallet: from, delta: 1n }] }),
      ).rejects.toBeInstanceOf(NegativeBalanceError);
      expect(await balances(id)).toEqual({ [from]: 7n, [B]: 3n });
      expect(await fx.orm.em.fork().findOneOrFail(Offer, { id: first.id })).toMatchObject({
        status: 'open',
        price: 7n,
        assetId: null,
        traitType: 'rarity',
        traitValue: 'rare',
      });
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('pays an offer once from its reservation: of two acceptances and a release exactly one applies', async () => {
      const id = await funded(10n);
      const o = offer(id, 6n);
      await store.apply(open(o));
      const outcomes = await Promise.all([
        store.apply(accept(o)),
        store.apply(accept(o)),
        store.apply(release(o)),
      ]);
      expect(outcomes.filter((x) => x.outcome === 'applied')).toHaveLength(1);
      const row = await fx.orm.em.fork().findOneOrFail(Offer, { id: o.id });
      expect(outcomes.filter((x) => x.outcome === 'rejected').map((x) => 'reason' in x && x.reason)).toEqual([
        row.status,
        row.status,
      ]);
      expect(await reserved(id, from)).toBe(0n);
      expect(await balances(id)).toEqual(
        row.status === 'accepted' ? { [from]: 4n, [A]: 6n } : { [from]: 10n },
      );
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('refuses an acceptance past the expiry and a missing offer; a release ignores the expiry', async () => {
      const id = await funded(10n);
      const o = offer(id, 5n, new Date(Date.now() + 60_000));
      await store.apply(open(o));
      expect(await store.apply(accept(o, o.expiresAt as Date))).toMatchObject({
        outcome: 'rejected',
        reason: 'expired',
      });
      expect(await store.apply(accept(offer(id, 1n)))).toMatchObject({
        outcome: 'rejected',
        reason: 'missing',
      });
      expect(await store.apply({ ...release(o), at: new Date(Date.now() + 120_000) })).toEqual({
        outcome: 'applied',
      });
      expect(await reserved(id, from)).toBe(0n);
      expect(await store.apply(release(o))).toMatchObject({ outcome: 'rejected', reason: 'cancelled' });
      expect(await store.apply(accept(o))).toMatchObject({ outcome: 'rejected', reason: 'cancelled' });
    });
  });

  describe('frozen, soulbound, trades and metadata versions', () => {
    const freeze = (assetId: string, frozen = true): Plan => ({
      at: new Date(),
      guards: [],
      assetUpdates: [{ assetId, frozen }],
    });

    /** An NFT transfer from the player's wallet, checked movable. */
    function moveNft(assetId: string, to: StoredAddress): Plan {
      const at = new Date();
      return {
        at,
        guards: [
          { kind: 'controls', userId: player.userId, wallet: from },
          { kind: 'movable', assetId },
          { kind: 'holds', assetId, wallet: from, atLeast: 1n },
        ],
        balances: [
          { assetId, wallet: from, delta: -1n },
          { assetId, wallet: to, delta: 1n },
        ],
        owners: [{ assetId, owner: to }],
        transfers: [
          { id: newId('tr'), assetId, from, to, amount: 1n, requestedBy: player.userId, createdAt: at },
        ],
      };
    }

    it('new assets and collections are neither frozen nor soulbound, and burn by their holder', async () => {
      const id = await mintedNft();
      const asset = await fx.orm.em.fork().findOneOrFail(Asset, { id });
      expect(asset).toMatchObject({ frozen: false, soulbound: false, metadataVersion: 0 });
      const collection = await fx.orm.em.fork().findOneOrFail(Collection, { id: 'conf' });
      expect(collection).toMatchObject({ soulbound: false, burnPolicy: 'holder' });
    });

    it('movable refuses a frozen, a soulbound, a soulbound-collection or a missing asset', async () => {
      const frozen = await mintedNft();
      expect(await store.apply(freeze(frozen))).toEqual({ outcome: 'applied' });
      expect((await fx.orm.em.fork().findOneOrFail(Asset, { id: frozen })).frozen).toBe(true);
      const plan = moveNft(frozen, A);
      expect(await store.apply(plan)).toEqual({
        outcome: 'rejected',
        guard: plan.guards[1],
        reason: 'frozen',
      });
      // Unfrozen, it moves again.
      expect(await store.apply(freeze(frozen, false))).toEqual({ outcome: 'applied' });
      expect(await store.apply(moveNft(frozen, A))).toEqual({ outcome: 'applied' });

      const bound = await mintedNft();
      await store.apply({ at: new Date(), guards: [], assetUpdates: [{ assetId: bound, soulbound: true }] });
      // Soulbound and frozen: soulbound is the reason (unfreezing would not help).
      await store.apply(freeze(bound));
      expect(await store.apply(moveNft(bound, A))).toMatchObject({
        outcome: 'rejected',
        reason: 'soulbound',
      });

      await fx.ledger.collections.create(studio, { id: 'conf-bound', name: 'Soulbound' });
      await fx.orm.em.fork().nativeUpdate(Collection, { id: 'conf-bound' }, { soulbound: true });
      const badge = await mintedNft({ collectionId: 'conf-bound' });
      expect(await store.apply(moveNft(badge, A))).toMatchObject({
        outcome: 'rejected',
        reason: 'soulbound',
      });

      const missing = moveNft(newId('nft'), A);
      missing.guards = [{ kind: 'movable', assetId: newId('nft') }];
      expect(await store.apply(missing)).toEqual({
        outcome: 'rejected',
        guard: missing.guards[0],
        reason: 'missing',
      });
      expect(await count(Transfer, bound)).toBe(0);
      expect(await count(Transfer, badge)).toBe(0);
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('items that expire (issue 36): movable and burnable compare the end time with the plan’s time, refuse a lent item; assetExpiry applies a return once', async () => {
      const hour = 3_600_000;
      const later = new Date(Date.now() + hour);
      const lend = (assetId: string, expiresAt: Date, lender: StoredAddress): Plan => ({
        at: new Date(),
        guards: [{ kind: 'assetExpiry', assetId, expiresAt: null }],
        assetUpdates: [{ assetId, expiresAt, lender }],
      });
      // A timed item moves before its end; a plan whose time is at or past it is refused, unswept.
      const timed = await mintedNft();
      expect(await store.apply(lend(timed, later, A))).toEqual({ outcome: 'applied' });
      // Its end time is set now: a second loan is refused on its guard.
      const twice = lend(timed, later, A);
      expect(await store.apply(twice)).toEqual({
        outcome: 'rejected',
        guard: twice.guards[0],
        reason: 'changed',
      });
      const lent = moveNft(timed, A);
      expect(await store.apply(lent)).toEqual({ outcome: 'rejected', guard: lent.guards[1], reason: 'lent' });
      const pastEnd = { ...moveNft(timed, A), at: new Date(later.getTime() + 1) };
      expect(await store.apply(pastEnd)).toMatchObject({ outcome: 'rejected', reason: 'expired' });
      const burnLate: Plan = {
        at: later,
        guards: [{ kind: 'burnable', assetId: timed }],
        owners: [{ assetId: timed, owner: ZERO }],
      };
      expect(await store.apply(burnLate)).toMatchObject({ outcome: 'rejected', reason: 'expired' });
      // The sweep's plan: due only at or after the end; applied once, then refused (changed).
      const sweep = (at: Date): Plan => ({
        at,
        guards: [
          { kind: 'assetExpiry', assetId: timed, expiresAt: later, owner: from, due: true },
          { kind: 'holds', assetId: timed, wallet: from, atLeast: 1n },
        ],
        balances: [
          { assetId: timed, wallet: from, delta: -1n },
          { assetId: timed, wallet: A, delta: 1n },
        ],
        owners: [{ assetId: timed, owner: A }],
        assetUpdates: [{ assetId: timed, expiresAt: null, lender: null }],
      });
      expect(await store.apply(sweep(new Date()))).toMatchObject({ outcome: 'rejected', reason: 'open' });
      const results = await Promise.all([store.apply(sweep(later)), store.apply(sweep(later))]);
      expect(results.filter((r) => r.outcome === 'applied')).toHaveLength(1);
      expect(results.find((r) => r.outcome === 'rejected')).toMatchObject({ reason: 'changed' });
      const back = await fx.orm.em.fork().findOneOrFail(Asset, { id: timed });
      expect([back.owner, back.expiresAt, back.lender]).toEqual([A, null, null]);
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('burnable lets a soulbound asset burn and refuses a frozen one', async () => {
      const burn = (assetId: string): Plan => {
        const at = new Date();
        return {
          at,
          guards: [
            { kind: 'burnable', assetId },
            { kind: 'holds', assetId, wallet: from, atLeast: 1n },
          ],
          balances: [{ assetId, wallet: from, delta: -1n }],
          owners: [{ assetId, owner: ZERO }],
          transfers: [
            {
              id: newId('tr'),
              assetId,
              from,
              to: ZERO,
              amount: 1n,
              requestedBy: player.userId,
              createdAt: at,
            },
          ],
        };
      };
      const bound = await mintedNft();
      await store.apply({ at: new Date(), guards: [], assetUpdates: [{ assetId: bound, soulbound: true }] });
      expect(await store.apply(burn(bound))).toEqual({ outcome: 'applied' });
      const frozen = await mintedNft();
      await store.apply(freeze(frozen));
      const refused = burn(frozen);
      expect(await store.apply(refused)).toEqual({
        outcome: 'rejected',
        guard: refused.guards[0],
        reason: 'frozen',
      });
      const missing = burn(newId('nft'));
      expect(await store.apply(missing)).toMatchObject({ outcome: 'rejected', reason: 'missing' });
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('a freeze racing transfers of a currency: each transfer commits before it or is refused', async () => {
      const id = await funded(1000n);
      const move = (): Plan => {
        const plan = transferPlan(id, A, 1n);
        plan.guards.push({ kind: 'movable', assetId: id });
        return plan;
      };
      const before = await Promise.all(Array.from({ length: 10 }, () => store.apply(move())));
      expect(before.every((o) => o.outcome === 'applied')).toBe(true);
      const racing = [
        ...Array.from({ length: 15 }, () => store.apply(move())),
        store.apply(freeze(id)),
        ...Array.from({ length: 15 }, () => store.apply(move())),
      ];
      const outcomes = await Promise.all(racing);
      expect(outcomes[15]).toEqual({ outcome: 'applied' });
      const moved = outcomes.filter((o) => o.outcome === 'applied').length - 1;
      for (const o of outcomes) if (o.outcome === 'rejected') expect(o.reason).toBe('frozen');
      // Once the freeze committed, nothing moves.
      expect(await store.apply(move())).toMatchObject({ outcome: 'rejected', reason: 'frozen' });
      expect(await balances(id)).toEqual({ [from]: 1000n - 10n - BigInt(moved), [A]: 10n + BigInt(moved) });
      expect(await count(Transfer, id)).toBe(1 + 10 + moved);
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    if (kind === 'postgres') {
      // The interleavings the race above may or may not hit, forced with a transaction held open.
      const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

      it('a transfer whose guard meets a freeze in flight waits for it and is refused', async () => {
        const id = await mintedNft();
        let settled = false;
        let transfer: Promise<unknown> | undefined;
        await fx.orm.em.fork().transactional(async (em) => {
          // What a freeze plan does: the asset FOR UPDATE (asset_locks), then the update.
          const sql = (query: string) =>
            em.getConnection().execute(query, [id], 'run', em.getTransactionContext());
          await sql('select 1 from "asset" where "id" = ? for update');
          await sql('update "asset" set "frozen" = true where "id" = ?');
          transfer = store.apply(moveNft(id, A)).finally(() => {
            settled = true;
          });
          await pause(300);
          expect(settled).toBe(false);
        });
        expect(await transfer).toMatchObject({ outcome: 'rejected', reason: 'frozen' });
        expect(await count(Transfer, id)).toBe(0);
      });

      it('a freeze waits for a transfer that passed its movable guard', async () => {
        const id = await mintedNft();
        let settled = false;
        let frozen: Promise<unknown> | undefined;
        await fx.orm.em.fork().transactional(async (em) => {
          // What the movable guard of a transfer in flight holds.
          await em
            .getConnection()
            .execute(
              'select 1 from "asset" where "id" = ? for key share',
              [id],
              'all',
              em.getTransactionContext(),
            );
          frozen = store.apply(freeze(id)).finally(() => {
            settled = true;
          });
          await pause(300);
          expect(settled).toBe(false);
        });
        expect(await frozen).toEqual({ outcome: 'applied' });
      });
    }

    function trade(overrides: Partial<NewTrade> = {}): NewTrade {
      const at = new Date();
      return {
        id: newId('trd'),
        status: 'open',
        proposerUserId: player.userId,
        proposerWallet: from,
        counterpartyWallet: A,
        offer: [{ assetId: 'sword', amount: '1' }],
        request: [{ assetId: 'gold', amount: '100' }],
        expiresAt: new Date(at.getTime() + 60_000),
        createdAt: at,
        updatedAt: at,
        operationId: null,
        closedBy: null,
        ...overrides,
      };
    }

    it('writes trades, checks them open, closes them once', async () => {
      const open = trade();
      expect(await store.apply({ at: new Date(), guards: [], trades: [open] })).toEqual({
        outcome: 'applied',
      });
      const row = await fx.orm.em.fork().findOneOrFail(Trade, { id: open.id });
      expect(row).toMatchObject({
        status: 'open',
        proposerWallet: from,
        counterpartyWallet: A,
        offer: open.offer,
        request: open.request,
        operationId: null,
        closedBy: null,
      });
      expect(row.expiresAt.getTime()).toBe(open.expiresAt.getTime());
      const accept = (): Plan => {
        const at = new Date();
        return {
          at,
          guards: [{ kind: 'tradeOpen', tradeId: open.id, at }],
          tradeStatuses: [
            { tradeId: open.id, status: 'accepted', by: studio.userId, operationId: 'op_1', at },
          ],
        };
      };
      // Two accepts at once: exactly one closes it, the other finds it accepted.
      const outcomes = await Promise.all([store.apply(accept()), store.apply(accept())]);
      expect(outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(1);
      expect(outcomes.find((o) => o.outcome === 'rejected')).toMatchObject({ reason: 'accepted' });
      expect(await fx.orm.em.fork().findOneOrFail(Trade, { id: open.id })).toMatchObject({
        status: 'accepted',
        closedBy: studio.userId,
        operationId: 'op_1',
      });

      const cancelled = trade();
      await store.apply({ at: new Date(), guards: [], trades: [cancelled] });
      const at = new Date();
      await store.apply({
        at,
        guards: [{ kind: 'tradeOpen', tradeId: cancelled.id, at }],
        tradeStatuses: [
          { tradeId: cancelled.id, status: 'cancelled', by: player.userId, operationId: null, at },
        ],
      });
      const check = (tradeId: string, when = new Date()): Plan => ({
        at: when,
        guards: [{ kind: 'tradeOpen', tradeId, at: when }],
      });
      expect(await store.apply(check(cancelled.id))).toMatchObject({
        outcome: 'rejected',
        reason: 'cancelled',
      });
      expect(await store.apply(check(newId('trd')))).toMatchObject({
        outcome: 'rejected',
        reason: 'missing',
      });
      const expiring = trade({ expiresAt: new Date(Date.now() + 5_000) });
      await store.apply({ at: new Date(), guards: [], trades: [expiring] });
      expect(await store.apply(check(expiring.id))).toEqual({ outcome: 'applied' });
      expect(await store.apply(check(expiring.id, expiring.expiresAt))).toMatchObject({
        outcome: 'rejected',
        reason: 'expired',
      });
    });

    it('updates metadata against a version, once per version, and keeps every version', async () => {
      const id = await mintedNft({ metadata: { attributes: [{ trait_type: 'level', value: 1 }] } });
      const update = (version: number, level: number, name = 'Sword'): Plan => {
        const at = new Date();
        const metadata = { attributes: [{ trait_type: 'level', value: level }] };
        return {
          at,
          guards: [{ kind: 'assetVersion', assetId: id, version }],
          assetUpdates: [{ assetId: id, name, metadata, description: null, metadataVersion: version + 1 }],
          metadataVersions: [
            { assetId: id, version: version + 1, name, metadata, changedBy: studio.userId, changedAt: at },
          ],
        };
      };
      expect(await store.apply(update(0, 2))).toEqual({ outcome: 'applied' });
      const stale = update(0, 3);
      expect(await store.apply(stale)).toEqual({ outcome: 'rejected', guard: stale.guards[0], found: 1n });
      // Concurrent updates against the same version: one wins, the others find the next version.
      const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => store.apply(update(1, 10 + i))));
      expect(outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(1);
      for (const o of outcomes) if (o.outcome === 'rejected') expect(o.found).toBe(2n);
      const asset = await fx.orm.em.fork().findOneOrFail(Asset, { id });
      expect(asset).toMatchObject({ metadataVersion: 2, name: 'Sword', description: null, frozen: false });
      const versions = await fx.orm.em
        .fork()
        .find(AssetMetadataVersion, { assetId: id }, { orderBy: { version: 'asc' } });
      expect(versions.map((v) => v.version)).toEqual([1, 2]);
      expect(versions[1].metadata).toEqual(asset.metadata);
      expect(versions[0]).toMatchObject({ name: 'Sword', changedBy: studio.userId });
      // An update that sets only one column leaves the others as they are.
      await store.apply({ at: new Date(), guards: [], assetUpdates: [{ assetId: id, frozen: true }] });
      expect(await fx.orm.em.fork().findOneOrFail(Asset, { id })).toMatchObject({
        frozen: true,
        metadataVersion: 2,
        name: 'Sword',
        metadata: asset.metadata,
      });
      // With `owner`, the owner read must hold too.
      const moved: Plan = {
        at: new Date(),
        guards: [{ kind: 'assetVersion', assetId: id, version: 2, owner: A }],
      };
      expect(await store.apply(moved)).toEqual({ outcome: 'rejected', guard: moved.guards[0], found: 2n });
      expect(
        await store.apply({
          at: new Date(),
          guards: [{ kind: 'assetVersion', assetId: id, version: 2, owner: from }],
        }),
      ).toEqual({ outcome: 'applied' });
      // With `frozen`, the frozen state read must hold too (the asset is frozen now).
      const thawed: Plan = {
        at: new Date(),
        guards: [{ kind: 'assetVersion', assetId: id, version: 2, frozen: false }],
      };
      expect(await store.apply(thawed)).toEqual({ outcome: 'rejected', guard: thawed.guards[0], found: 2n });
      expect(
        await store.apply({
          at: new Date(),
          guards: [{ kind: 'assetVersion', assetId: id, version: 2, frozen: true }],
        }),
      ).toEqual({ outcome: 'applied' });
      const missing: Plan = {
        at: new Date(),
        guards: [{ kind: 'assetVersion', assetId: newId('nft'), version: 0 }],
      };
      expect(await store.apply(missing)).toMatchObject({ outcome: 'rejected', reason: 'missing' });
    });
  });
});
