// Issue 34, PostgreSQL: a wallet's event read on a long, partitioned log stops, in its `from` and `to`
// branches, at the wallet's newest event as `from` or `to` (wallet_last_event, src/events/reads.ts),
// so the ledger function must write that id with every event that names the wallet so, in the
// event's transaction (src/db/functions/gats_apply_plan.sql): a mint, a transfer, a metadata change
// (the owner as `to`), a burn; never lowered by a plan whose earlier id commits later; never for the
// zero address (every currency mint's `from`, every burn's `to`), whose reads have no bound. An event
// past the bound would be an event no wallet read returns. `checkInvariants`
// (test/helpers/ledger-fixtures.ts) holds every wallet's bound to its newest event in every ledger
// test; event-read-plans.test.ts shows the partitions the bound leaves out.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../../src/db/entities/OutboxEvent.ts';
import { type StoredAddress, ZERO_ADDRESS } from '../../../src/domain/ledger/addresses.ts';
import { OUTBOX_LOCK_KEY } from '../../../src/events/outbox-lock.ts';
import { EventStore } from '../../../src/events/store.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  checkInvariants,
  createUser,
  type LedgerFixture,
  openLedger,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';

interface Row {
  [column: string]: unknown;
}

const ALL_TYPES = new Set(EVENT_TYPES);

describe.runIf(DB_KINDS.includes('postgres'))(
  "a wallet's newest event in wallet_last_event (PostgreSQL)",
  () => {
    let fx: LedgerFixture;
    let studio: TestUser;
    let players: TestUser[];
    let nfts: string[];
    const query = (sql: string, params: unknown[] = []) =>
      fx.orm.em.getConnection().execute<Row[]>(sql, params, 'all');
    const boundOf = async (wallet: string) => {
      const [row] = await query('select event_id from wallet_last_event where wallet = ?', [wallet]);
      return row ? Number(row.event_id) : null;
    };
    const newestOf = async (wallet: string) => {
      const [row] = await query(
        'select max(id) as id from outbox_event where from_wallet = ? or to_wallet = ?',
        [wallet, wallet],
      );
      return row.id === null ? null : Number(row.id);
    };
    const address = (user: TestUser) => user.wallet as StoredAddress;
    const metadata = { image: 'ipfs://p', attributes: [], creator: 'S' };

    beforeAll(async () => {
      fx = await openLedger('postgres');
      studio = await createUser(fx, 'studio');
      players = [await createUser(fx), await createUser(fx), await createUser(fx)];
      await fx.ledger.collections.create(studio, {
        id: 'wallet-bounds',
        name: 'Wallet bounds',
        metadataPolicy: { name: true },
      });
      await fx.ledger.assets.createCurrency(studio, {
        id: 'bound-coin',
        name: 'Bound coin',
        symbol: 'BC',
        decimals: 0,
        collection: 'wallet-bounds',
        metadata,
      });
      for (const player of players)
        await fx.ledger.assets.mint(studio, 'bound-coin', { to: address(player), amount: '1000' });
      const minted = await fx.ledger.assets.mintBatch(
        studio,
        'wallet-bounds',
        players.map((player) => ({ to: address(player), nft: { name: 'Token', metadata } })),
      );
      nfts = minted.body.nfts.map((nft) => nft.id);
    });

    afterAll(async () => {
      await fx?.close();
    });

    it('is the newest event of each wallet after mints, a transfer, a metadata change and a burn; none for the zero address', async () => {
      const [first, second, third] = players;
      for (const player of players)
        expect(await boundOf(address(player))).toBe(await newestOf(address(player)));
      await fx.ledger.transfers.create(first, {
        assetId: nfts[0],
        from: address(first),
        to: address(second),
        amount: '1',
      });
      await fx.ledger.assetUpdates.updateMetadata(studio, nfts[2], { name: 'Polished token' });
      await fx.ledger.transfers.burn(second, { assetId: 'bound-coin', from: address(second), amount: '5' });
      // The metadata change names the NFT's owner as `to`: the third player's bound moved with it.
      const [{ type }] = await query('select type from outbox_event where id = ?', [
        await newestOf(address(third)),
      ]);
      expect(type).toBe('assetUpdated');
      for (const player of players)
        expect(await boundOf(address(player))).toBe(await newestOf(address(player)));
      // Mints came from it and the burn went to it; it keeps no row (each such plan would queue on it).
      expect(await newestOf(ZERO_ADDRESS)).not.toBeNull();
      expect(await boundOf(ZERO_ADDRESS)).toBeNull();
      expect(await checkInvariants(fx.orm)).toEqual([]);
    });

    it('stays at the newest event under concurrent writes to the same wallets, and the reads find every event', async () => {
      // Currency transfers around the three wallets and an NFT passed along, all at once: plans naming
      // the same wallets wait on each other's rows, in every order of the pairs.
      const writes = Array.from({ length: 10 }, (_, round) =>
        players.map((player, index) =>
          fx.ledger.transfers.create(player, {
            assetId: 'bound-coin',
            from: address(player),
            to: address(players[(index + 1 + (round % 2)) % players.length]),
            amount: '1',
          }),
        ),
      ).flat();
      const moves = Array.from({ length: 6 }, (_, round) =>
        fx.ledger.transfers
          .create(players[round % 3], {
            assetId: nfts[1],
            from: address(players[round % 3]),
            to: address(players[(round + 1) % 3]),
            amount: '1',
          })
          .catch(() => 'refused'),
      );
      const outcomes = await Promise.allSettled([...writes, ...moves]);
      expect(outcomes.slice(0, writes.length).every((outcome) => outcome.status === 'fulfilled')).toBe(true);
      expect(await checkInvariants(fx.orm)).toEqual([]);
      // Every event of each wallet (and every price update: none here) through the bound, as the service
      // reads them (the relay's position: the newest event), in id order; and the zero address's, unbounded.
      const store = new EventStore(fx.database);
      const [{ newest }] = await query('select max(id) as newest from outbox_event');
      for (const wallet of [...players.map(address), ZERO_ADDRESS]) {
        const stored = (
          await query(
            "select id from outbox_event where from_wallet = ? or to_wallet = ? or type = 'priceUpdate' order by id",
            [wallet, wallet],
          )
        ).map((row) => Number(row.id));
        const read = await store.after(0, 200, { types: ALL_TYPES, wallet }, Number(newest));
        expect(read.map((event) => event.id)).toEqual(stored);
        expect(stored.length).toBeGreaterThan(3);
      }
    });

    it('is filled, as asset_last_event is, by a migration that holds the event writers (their advisory lock)', () => {
      // An old instance's plan (the function's text before the migrations commit) that committed an
      // event after a fill read the log would leave its wallet's or NFT's row below it.
      for (const name of [
        'Migration20261130223457_asset_last_event',
        'Migration20261201073317_wallet_last_event',
      ]) {
        const migration = readFileSync(
          new URL(`../../../src/db/migrations/${name}.ts`, import.meta.url),
          'utf8',
        );
        expect(migration, name).toContain(`'select pg_advisory_xact_lock(${OUTBOX_LOCK_KEY});'`);
      }
    });
  },
);
