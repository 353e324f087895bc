// Issue 34, PostgreSQL: an NFT's event read on a long, partitioned log stops at the NFT's newest event
// (asset_last_event, src/events/reads.ts), so the ledger function must write that id with every
// event that names the NFT, in the event's transaction (src/db/functions/gats_apply_plan.sql): a
// price update, whose NFT the plan had not locked, as much as a mint, a transfer or a metadata
// change; never lowered by a plan whose earlier id commits later; never on a currency's row. An event
// past the bound would be an event no filtered read returns. `checkInvariants`
// (test/helpers/ledger-fixtures.ts) holds every NFT's bound to its newest event in every ledger test;
// event-read-plans.test.ts shows the partitions the bound leaves out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../../src/db/entities/OutboxEvent.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
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
  "an NFT's newest event in asset_last_event (PostgreSQL)",
  () => {
    let fx: LedgerFixture;
    let studio: TestUser;
    let player: TestUser;
    let other: TestUser;
    let nfts: string[];
    const query = (sql: string, params: unknown[] = []) =>
      fx.orm.em.getConnection().execute<Row[]>(sql, params, 'all');
    const lastEventOf = async (id: string) => {
      const [row] = await query('select event_id from asset_last_event where asset_id = ?', [id]);
      return row ? Number(row.event_id) : null;
    };
    const newestEventOf = async (id: string) => {
      const [row] = await query('select max(id) as id from outbox_event where asset_id = ?', [id]);
      return Number(row.id);
    };
    const metadata = { image: 'ipfs://p', attributes: [], creator: 'S' };

    beforeAll(async () => {
      fx = await openLedger('postgres');
      studio = await createUser(fx, 'studio');
      player = await createUser(fx);
      other = await createUser(fx);
      await fx.ledger.collections.create(studio, {
        id: 'bounds',
        name: 'Bounds',
        metadataPolicy: { name: true },
      });
      await fx.ledger.assets.createCurrency(studio, {
        id: 'bound-gold',
        name: 'Bound gold',
        symbol: 'BG',
        decimals: 0,
        collection: 'bounds',
        metadata,
      });
      await fx.ledger.assets.mint(studio, 'bound-gold', {
        to: player.wallet as StoredAddress,
        amount: '100',
      });
      const minted = await fx.ledger.assets.mintBatch(
        studio,
        'bounds',
        Array.from({ length: 4 }, () => ({
          to: player.wallet as StoredAddress,
          nft: { name: 'Stone', metadata },
        })),
      );
      nfts = minted.body.nfts.map((nft) => nft.id);
    });

    afterAll(async () => {
      await fx?.close();
    });

    it('is the newest event of each NFT after a mint, a transfer, a metadata change and a price update', async () => {
      // The batch mint: each NFT's bound is its own newNFT event.
      for (const id of nfts) expect(await lastEventOf(id)).toBe(await newestEventOf(id));
      const [moved, changed, priced] = nfts;
      await fx.ledger.transfers.create(player, {
        assetId: moved,
        from: player.wallet as StoredAddress,
        to: other.wallet as StoredAddress,
        amount: '1',
      });
      await fx.ledger.assetUpdates.updateMetadata(studio, changed, { name: 'Polished stone' });
      await fx.ledger.prices.post(studio, priced, { price: '12.5', currency: 'USD', source: 'test' });
      const [{ type }] = await query('select type from outbox_event where id = ?', [
        await newestEventOf(priced),
      ]);
      expect(type).toBe('priceUpdate');
      for (const id of nfts) expect(await lastEventOf(id)).toBe(await newestEventOf(id));
      // A currency's events are dense (a page fills near any point): it has no bound, and its
      // transfers leave its asset row as it was (Migration20261129190136_asset_supply).
      const version = async () =>
        (await query(`select ctid::text as ctid, xmin::text as xmin from asset where id = 'bound-gold'`))[0];
      const before = await version();
      await fx.ledger.transfers.create(player, {
        assetId: 'bound-gold',
        from: player.wallet as StoredAddress,
        to: other.wallet as StoredAddress,
        amount: '5',
      });
      expect(await version()).toEqual(before);
      expect(await lastEventOf('bound-gold')).toBeNull();
    });

    it('stays at the newest event under concurrent writes to the same NFTs, and the reads find every event', async () => {
      const [moved, changed, priced, spare] = nfts;
      const owners = [other, player];
      // Prices of every NFT (their rows not locked before the events), transfers of one back and forth,
      // metadata changes: all at once, several plans waiting on the same rows.
      const writes = Array.from({ length: 12 }, (_, round) => [
        ...[moved, changed, priced, spare].map((id) =>
          fx.ledger.prices.post(studio, id, { price: `${round + 1}`, currency: 'USD', source: 'test' }),
        ),
        fx.ledger.transfers
          .create(owners[round % 2], {
            assetId: moved,
            from: owners[round % 2].wallet as StoredAddress,
            to: owners[(round + 1) % 2].wallet as StoredAddress,
            amount: '1',
          })
          .catch(() => 'refused'),
        fx.ledger.assetUpdates
          .updateMetadata(studio, changed, { name: `Stone ${round}` })
          .catch(() => 'refused'),
      ]).flat();
      const outcomes = await Promise.allSettled(writes);
      // The prices always apply (no guard); a transfer or a metadata change may meet a changed state.
      const prices = outcomes.filter((_, index) => index % 6 < 4);
      expect(prices.every((outcome) => outcome.status === 'fulfilled')).toBe(true);
      const applied = (kind: number) =>
        outcomes.filter(
          (outcome, index) =>
            index % 6 === kind && outcome.status === 'fulfilled' && outcome.value !== 'refused',
        ).length;
      expect(applied(4), 'transfers applied').toBeGreaterThan(0);
      expect(applied(5), 'metadata changes applied').toBeGreaterThan(0);
      expect(await checkInvariants(fx.orm)).toEqual([]);
      // Every event of each NFT is read through the bound, as the service reads them (the relay's
      // position: the newest event), and in id order.
      const store = new EventStore(fx.database);
      const [{ newest }] = await query('select max(id) as newest from outbox_event');
      for (const id of nfts) {
        const stored = (await query('select id from outbox_event where asset_id = ? order by id', [id])).map(
          (row) => Number(row.id),
        );
        const read = await store.after(0, 100, { types: ALL_TYPES, assetId: id }, Number(newest));
        expect(read.map((event) => event.id)).toEqual(stored);
        expect(stored.length).toBeGreaterThan(1);
      }
    });
  },
);
