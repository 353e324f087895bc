// Transfers write their rows without the ORM (one synchronous transaction on SQLite, one call of
// gats_apply_plan on PostgreSQL). These tests read those rows back through the ORM's entities,
// check the order in which the rules answer, and the two places where the fast path meets others:
// an ORM transaction open on SQLite's single connection, and the outbox writers' lock on PostgreSQL.
import type { EntityManager } from '@mikro-orm/sql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Holding } from '../../../src/db/entities/Holding.ts';
import { IdempotencyRecord } from '../../../src/db/entities/IdempotencyRecord.ts';
import { OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import { Transfer } from '../../../src/db/entities/Transfer.ts';
import { inTransaction } from '../../../src/db/transactions.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { OUTBOX_LOCK_KEY } from '../../../src/events/outbox-lock.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  checkInvariants,
  createUser,
  type LedgerFixture,
  openLedger,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'ipfs://bafy/x.png', attributes: [], creator: 'Studio' };
const STRANGER = '0x00000000000000000000000000000000000000aa' as StoredAddress;

async function rejection(promise: Promise<unknown>): Promise<{ status: number; type: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { status: number; type: string };
  }
  throw new Error('expected a rejection');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(DB_KINDS)('transfer statements on %s', (kind) => {
  let fx: LedgerFixture;
  let studio: TestUser;
  let player: TestUser;
  let coin = 0;

  beforeAll(async () => {
    fx = await openLedger(kind);
    studio = await createUser(fx, 'studio');
    player = await createUser(fx);
    await fx.ledger.collections.create(studio, { id: 'stmts', name: 'Statements' });
  });

  afterAll(async () => {
    await fx?.close();
  });

  async function fundedCurrency(amount: string): Promise<string> {
    const id = `stmt-coin-${++coin}`;
    await fx.ledger.assets.createCurrency(studio, {
      id,
      name: id,
      symbol: 'S',
      decimals: 2,
      collection: 'stmts',
      metadata,
    });
    await fx.ledger.assets.mint(studio, id, { to: player.wallet as StoredAddress, amount });
    return id;
  }

  it('writes rows the ORM reads back as it would have written them', async () => {
    const id = await fundedCurrency('10');
    const before = Date.now();
    const result = await fx.ledger.transfers.create(
      player,
      { assetId: id, from: player.wallet as StoredAddress, to: STRANGER, amount: '1.5' },
      'rows-1',
    );
    const em = fx.orm.em.fork();
    const transfer = await em.findOneOrFail(Transfer, { id: result.body.id });
    expect(transfer).toMatchObject({
      fromAddress: player.wallet,
      toAddress: STRANGER,
      amount: 150n,
      status: 'completed',
      failureReason: null,
    });
    expect(transfer.createdAt.toISOString()).toBe(result.body.createdAt);
    expect(transfer.completedAt?.toISOString()).toBe(result.body.completedAt);
    expect(transfer.createdAt.getTime()).toBeGreaterThanOrEqual(before);

    const event = await em.findOneOrFail(
      OutboxEvent,
      { type: 'newTransfer', assetId: id },
      {
        orderBy: { id: 'desc' },
      },
    );
    expect(event).toMatchObject({
      data: result.body,
      collectionId: 'stmts',
      wallets: [player.wallet, STRANGER],
      fromWallet: player.wallet,
      toWallet: STRANGER,
    });
    expect(event.occurredAt.toISOString()).toBe(result.body.createdAt);

    const record = await em.findOneOrFail(IdempotencyRecord, {
      id: `${player.userId}:createTransfer:rows-1`,
    });
    expect(record).toMatchObject({
      status: 201,
      responseBody: result.body,
      responseHeaders: { Location: `/api/v1/transfers/${result.body.id}` },
    });
    expect(record.expiresAt.getTime() - record.createdAt.getTime()).toBe(86_400_000);

    const holdings = await em.find(Holding, { asset: id } as never, { orderBy: { wallet: 'asc' } });
    expect(holdings.map((h) => [h.wallet, h.balance])).toEqual(
      [
        [player.wallet, 850n],
        [STRANGER, 150n],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  it('applies a request again once its key has expired, and replays it before', async () => {
    const id = await fundedCurrency('10');
    const input = { assetId: id, from: player.wallet as StoredAddress, to: STRANGER, amount: '1' };
    const first = await fx.ledger.transfers.create(player, input, 'expiring');
    expect(await fx.ledger.transfers.create(player, input, 'expiring')).toEqual({ ...first, replayed: true });
    await fx.orm.em
      .fork()
      .nativeUpdate(
        IdempotencyRecord,
        { id: `${player.userId}:createTransfer:expiring` },
        { expiresAt: new Date(Date.now() - 1000) },
      );
    const again = await fx.ledger.transfers.create(player, input, 'expiring');
    expect(again.replayed).toBe(false);
    expect(again.body.id).not.toBe(first.body.id);
    expect(await fx.ledger.transfers.create(player, input, 'expiring')).toEqual({ ...again, replayed: true });
    expect(await fx.orm.em.fork().count(Transfer, { asset: id })).toBe(3); // the mint and two transfers
  });

  it('answers a stored key, then control, before the asset and the amount', async () => {
    const id = await fundedCurrency('10');
    const other = await createUser(fx);
    // Not controlled, and an invalid amount or an unknown asset besides: 403 comes first.
    for (const input of [
      { assetId: id, from: STRANGER, to: player.wallet as StoredAddress, amount: '0.001' },
      { assetId: 'no-such-coin', from: STRANGER, to: player.wallet as StoredAddress, amount: '1' },
    ]) {
      expect(await rejection(fx.ledger.transfers.create(other, input))).toMatchObject({
        status: 403,
        type: '/problems/wallet-not-controlled',
      });
    }
    // A key already used with another body: 422 even though this body is invalid too.
    const input = { assetId: id, from: player.wallet as StoredAddress, to: STRANGER, amount: '1' };
    await fx.ledger.transfers.create(player, input, 'precedence');
    for (const broken of [
      { ...input, amount: '0.001' },
      { ...input, assetId: 'no-such-coin' },
    ]) {
      expect(await rejection(fx.ledger.transfers.create(player, broken, 'precedence'))).toMatchObject({
        status: 422,
        type: '/problems/idempotency-key-reused',
      });
    }
    // Valid but insufficient: 409, and the key stays free.
    const tooMuch = { ...input, amount: '100' };
    expect(await rejection(fx.ledger.transfers.create(player, tooMuch, 'free-key'))).toMatchObject({
      status: 409,
      type: '/problems/insufficient-balance',
    });
    expect((await fx.ledger.transfers.create(player, input, 'free-key')).replayed).toBe(false);
  });

  it('commits the transfers asked for together, each applied alone or not at all', async () => {
    // On SQLite these share one transaction (group commit), each in its own savepoint.
    const id = await fundedCurrency('10');
    const before = await fx.orm.em.fork().count(Transfer, { asset: id });
    const from = player.wallet as StoredAddress;
    const ok = (amount: string) =>
      fx.ledger.transfers.create(player, { assetId: id, from, to: STRANGER, amount });
    const keyed = { assetId: id, from, to: STRANGER, amount: '0.5' };
    const results = await Promise.allSettled([
      ok('1'),
      ok('50'), // more than the balance: rejected alone
      ok('2'),
      fx.ledger.transfers.create(player, keyed, 'group-key'),
      fx.ledger.transfers.create(player, keyed, 'group-key'), // a retry: replayed, not applied again
      fx.ledger.transfers.create(player, { ...keyed, amount: '0.25' }, 'group-key'), // reused key
      ok('3'),
    ]);
    const outcome = results.map((result) =>
      result.status === 'fulfilled'
        ? result.value.replayed
          ? 'replayed'
          : 'applied'
        : (result.reason as { type: string }).type.replace('/problems/', ''),
    );
    // Without a key: each on its own. SQLite runs the group in call order, so the first of the three
    // same-key requests wins there; on PostgreSQL any of them may.
    expect([outcome[0], outcome[1], outcome[2], outcome[6]]).toEqual([
      'applied',
      'insufficient-balance',
      'applied',
      'applied',
    ]);
    const keyedOutcomes = outcome.slice(3, 6);
    expect(keyedOutcomes.filter((o) => o === 'applied')).toHaveLength(1);
    const winner = results[3 + keyedOutcomes.indexOf('applied')] as PromiseFulfilledResult<
      Awaited<ReturnType<typeof ok>>
    >;
    if (kind === 'sqlite') expect(keyedOutcomes).toEqual(['applied', 'replayed', 'idempotency-key-reused']);
    else
      expect([...keyedOutcomes].sort()).toEqual(
        winner.value.body.amount === '0.5'
          ? ['applied', 'idempotency-key-reused', 'replayed']
          : ['applied', 'idempotency-key-reused', 'idempotency-key-reused'],
      );
    expect(await fx.orm.em.fork().count(Transfer, { asset: id })).toBe(before + 4);
    expect(await fx.orm.em.fork().count(OutboxEvent, { assetId: id })).toBe(before + 4);
    const holdings = await fx.ledger.reads.walletAssets(from, { limit: 100 });
    const left = 1000n - 600n - (winner.value.body.amount === '0.5' ? 50n : 25n);
    expect(holdings.data.find((holding) => holding.asset.id === id)?.balance).toBe(
      `${left / 100n}.${String(left % 100n).padStart(2, '0')}`.replace(/\.?0+$/, ''),
    );
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  it.runIf(kind === 'sqlite')('waits for an ORM transaction open on the connection', async () => {
    const id = await fundedCurrency('10');
    const order: string[] = [];
    let transfer: Promise<unknown> | undefined;
    await inTransaction(fx.orm, async (em) => {
      await em.execute('select 1');
      transfer = fx.ledger.transfers
        .create(player, { assetId: id, from: player.wallet as StoredAddress, to: STRANGER, amount: '1' })
        .then(() => order.push('transfer'));
      await sleep(50);
      await em.execute('select 1');
      order.push('orm transaction');
    });
    await transfer;
    expect(order).toEqual(['orm transaction', 'transfer']);
  });

  it.runIf(kind === 'postgres')('holds the outbox writers lock until it commits', async () => {
    const id = await fundedCurrency('10');
    const order: string[] = [];
    let releaseTable!: () => void;
    const tableReleased = new Promise<void>((resolve) => {
      releaseTable = resolve;
    });
    let tableLocked!: () => void;
    const locked = new Promise<void>((resolve) => {
      tableLocked = resolve;
    });
    // Keeps the transfer waiting at its event insert, after it took the writers' shared lock.
    const blocker = fx.orm.em.fork().transactional(async (em) => {
      await (em as unknown as EntityManager).execute('lock table outbox_event in share mode');
      tableLocked();
      await tableReleased;
    });
    await locked;
    // The asset's events, read on a connection of the pool (outside the blocker's transaction).
    const events = async () => {
      const rows = await (fx.orm.em.fork() as unknown as EntityManager).execute<{ n: string | number }[]>(
        'select count(*) as n from outbox_event where asset_id = ?',
        [id],
      );
      return Number(rows[0].n);
    };
    const before = await events();
    const transfer = fx.ledger.transfers
      .create(player, { assetId: id, from: player.wallet as StoredAddress, to: STRANGER, amount: '1' })
      .then(() => order.push('transfer committed'));
    await sleep(200);
    // PostgreSQL releases a transaction's locks once its commit is visible but before the client
    // hears of it, so the two answers may arrive in either order: what the lock promises is that
    // when the writers have settled, the transfer's event is committed.
    /** What the relay does at a gap: takes the writers' lock exclusively, so waits for those in flight. */
    const waitForOutboxWriters = () =>
      fx.orm.em.fork().transactional(async (em) => {
        await (em as unknown as EntityManager).execute('select pg_advisory_xact_lock(?)', [OUTBOX_LOCK_KEY]);
      });
    let eventsWhenSettled = -1;
    const settled = waitForOutboxWriters().then(async () => {
      eventsWhenSettled = await events();
      order.push('writers settled');
    });
    await sleep(200);
    expect(order).toEqual([]);
    releaseTable();
    await Promise.all([blocker, transfer, settled]);
    expect(order.sort()).toEqual(['transfer committed', 'writers settled']);
    expect(eventsWhenSettled).toBe(before + 1);
  });
});
