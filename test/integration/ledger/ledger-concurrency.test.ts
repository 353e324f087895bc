// The ledger's invariants under concurrency, on real SQLite and PostgreSQL: competing spends, NFT
// races, concurrent mints against a cap, and same-key retries, all fired at once.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import { Transfer } from '../../../src/db/entities/Transfer.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  checkInvariants,
  createUser,
  type LedgerFixture,
  openLedger,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'ipfs://bafy/x.png', attributes: [], creator: 'Studio' };

async function settle<T>(
  promises: Promise<T>[],
): Promise<{ ok: T[]; failed: { status: number; type: string }[] }> {
  const results = await Promise.allSettled(promises);
  const ok: T[] = [];
  const failed: { status: number; type: string }[] = [];
  for (const result of results) {
    if (result.status === 'fulfilled') ok.push(result.value);
    else if (typeof (result.reason as { status?: unknown }).status === 'number') failed.push(result.reason);
    else throw result.reason;
  }
  return { ok, failed };
}

describe.each(DB_KINDS)('ledger concurrency on %s', (kind) => {
  let fx: LedgerFixture;
  let studio: TestUser;
  let seq = 0;

  beforeAll(async () => {
    fx = await openLedger(kind);
    studio = await createUser(fx, 'studio');
    await fx.ledger.collections.create(studio, { id: 'race', name: 'Race' });
  });

  afterAll(async () => {
    await fx?.close();
  });

  async function currency(maxSupply?: string): Promise<string> {
    const id = `coin-${++seq}`;
    await fx.ledger.assets.createCurrency(studio, {
      id,
      name: id,
      symbol: 'C',
      decimals: 0,
      maxSupply,
      collection: 'race',
      metadata,
    });
    return id;
  }

  it('lets exactly 10 of 100 simultaneous transfers spend a balance of 10', async () => {
    const spender = await createUser(fx);
    const id = await currency();
    await fx.ledger.assets.mint(studio, id, { to: spender.wallet as StoredAddress, amount: '10' });
    const receivers = await Promise.all(Array.from({ length: 4 }, () => createUser(fx)));
    const { ok, failed } = await settle(
      Array.from({ length: 100 }, (_, i) =>
        fx.ledger.transfers.create(spender, {
          assetId: id,
          from: spender.wallet as StoredAddress,
          to: receivers[i % receivers.length].wallet as StoredAddress,
          amount: '1',
        }),
      ),
    );
    expect(ok).toHaveLength(10);
    expect(failed).toHaveLength(90);
    expect(new Set(failed.map((f) => `${f.status} ${f.type}`))).toEqual(
      new Set(['409 /problems/insufficient-balance']),
    );
    const em = fx.orm.em.fork();
    expect(await em.count(Transfer, { asset: id })).toBe(11); // the mint and the 10 spends
    expect(await em.count(OutboxEvent, { assetId: id })).toBe(11);
    expect(await checkInvariants(fx.orm)).toEqual([]);
  });

  it('never mints past the max supply under concurrent mints', async () => {
    const id = await currency('25');
    const { ok, failed } = await settle(
      Array.from({ length: 40 }, () =>
        fx.ledger.assets.mint(studio, id, { to: studio.wallet as StoredAddress, amount: '1' }),
      ),
    );
    expect(ok).toHaveLength(25);
    expect(failed.every((f) => f.type === '/problems/max-supply-exceeded')).toBe(true);
    expect((await fx.ledger.assets.get(id)).totalSupply).toBe('25');
  });

  it('keeps the invariants under random concurrent transfers, NFT races and same-key retries', async () => {
    const users = await Promise.all(Array.from({ length: 4 }, () => createUser(fx)));
    const coin = await currency();
    for (const user of users)
      await fx.ledger.assets.mint(studio, coin, { to: user.wallet as StoredAddress, amount: '20' });
    const nfts: string[] = [];
    for (const user of users)
      nfts.push((await fx.ledger.assets.createNft(user, { name: 'Relic', metadata })).body.id);

    const operation = fc.record({
      from: fc.nat({ max: users.length - 1 }),
      to: fc.nat({ max: users.length - 1 }),
      nft: fc.option(fc.nat({ max: nfts.length - 1 }), { freq: 3 }),
      amount: fc.integer({ min: 1, max: 12 }),
      /** Requests sharing a key are retries of one another: at most one may apply. */
      key: fc.option(fc.constantFrom('k1', 'k2', 'k3'), { freq: 2 }),
    });
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 10, maxLength: 40 }), async (operations) => {
        round++;
        const before = await fx.orm.em.fork().count(Transfer, {});
        const requests = operations
          .filter((op) => op.from !== op.to)
          .map((op) => {
            const sender = users[op.from];
            const input = {
              assetId: op.nft === null ? coin : nfts[op.nft],
              from: sender.wallet as StoredAddress,
              to: users[op.to].wallet as StoredAddress,
              amount: op.nft === null ? String(op.amount) : '1',
            };
            if (op.key === null) return { sender, body: input, key: undefined };
            // A keyed request has one body per (round, key, sender), so firing it twice is a retry.
            const body = {
              assetId: coin,
              from: input.from,
              to: users[(op.from + 1) % users.length].wallet as StoredAddress,
              amount: '1',
            };
            return { sender, body, key: `${round}-${op.key}` };
          });
        const { ok, failed } = await settle(
          requests.flatMap(({ sender, body, key }) => {
            const call = () => fx.ledger.transfers.create(sender, body, key);
            return key === undefined ? [call()] : [call(), call()];
          }),
        );
        for (const failure of failed) {
          expect(['/problems/insufficient-balance', '/problems/idempotency-key-reused']).toContain(
            failure.type,
          );
        }
        // Every applied transfer is one row; replays add none.
        const applied = ok.filter((result) => !result.replayed);
        const replayedIds = ok.filter((result) => result.replayed).map((result) => result.body.id);
        expect(new Set(applied.map((result) => result.body.id)).size).toBe(applied.length);
        for (const id of replayedIds) expect(applied.map((result) => result.body.id)).toContain(id);
        expect(await fx.orm.em.fork().count(Transfer, {})).toBe(before + applied.length);
        expect(await checkInvariants(fx.orm)).toEqual([]);
      }),
      { numRuns: 12 },
    );
  });
});
