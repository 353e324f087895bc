// The SQLite ledger store: a plan is one piece of work of the group-commit writer
// (../../../db/write-statements.ts, `sqliteWriter`): prepared statements run synchronously, no
// `await` between BEGIN and COMMIT, so nothing else in the process runs between a guard's read and
// the writes that rely on it. Pieces asked for in one turn of the event loop commit together, each in
// its own savepoint; a rejected plan rolls back to its savepoint and changes nothing.
//
// Amounts are stored as the ORM's uint256 type stores them on SQLite (zero-padded text, so they
// compare and sort as numbers), dates as epoch milliseconds, JSON as text.
import type { Orm } from '../../../db/orm.ts';
import type { Row } from '../../../db/read-statements.ts';
import { sqliteSequence } from '../../../db/sequences.ts';
import { type StoredRecord, storedAnswer, storedRecordOf } from '../../../db/stored-answer.ts';
import { Uint256Type } from '../../../db/types/uint256.ts';
import { sqliteWriter } from '../../../db/write-statements.ts';
import type { Change } from '../../../events/change-keys.ts';
import type { CommitHook } from '../../../events/commit-hook.ts';
import { chainDrafts, RESERVE_AUDIT_SEQS, SET_AUDIT_TIP } from '../../audit.ts';
import { ZERO_ADDRESS } from '../addresses.ts';
import { amountOf } from '../asset-rows.ts';
import { listingTraitsOf } from './listing-traits.ts';
import {
  type GuardFailure,
  type GuardReason,
  type LedgerStore,
  movedLotId,
  NegativeBalanceError,
  type Plan,
  type PlanOutcome,
} from './plan.ts';

/** Thrown inside the work to roll its savepoint back; caught in `apply`. */
class Rejected {
  readonly failure: GuardFailure;
  constructor(failure: GuardFailure) {
    this.failure = failure;
  }
}

/** Thrown inside the work when the key holds an unexpired record (nothing was written). */
class Replay {
  readonly record: StoredRecord;
  constructor(record: Row) {
    this.record = storedRecordOf(record);
  }
}

const SQL = {
  readRecord:
    'select request_hash, status, response_body, response_deflated, response_headers, expires_at from idempotency_record where id = ?',
  deleteExpired: 'delete from idempotency_record where id = ? and expires_at <= ?',
  insertRecord:
    'insert into idempotency_record (id, request_hash, status, response_body, response_deflated, response_headers, ' +
    'created_at, expires_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
  controls: 'select 1 as yes from wallet where address = ? and user_id = ?',
  balance: 'select balance, reserved from holding where asset_id = ? and wallet = ?',
  // A currency's supply has a row of its own (issue 34 item 5); an NFT has none.
  supply: 'select total_supply from asset_supply where asset_id = ?',
  assetExists: 'select 1 as yes from asset where id = ?',
  walletExists: 'select 1 as yes from wallet where address = ?',
  writeBalance:
    'insert into holding (wallet, asset_id, balance, updated_at) values (?, ?, ?, ?) ' +
    'on conflict (wallet, asset_id) do update set balance = excluded.balance, updated_at = excluded.updated_at',
  writeSupply: 'update asset_supply set total_supply = ? where asset_id = ?',
  insertSupply: 'insert into asset_supply (asset_id, total_supply) values (?, ?)',
  setOwner: 'update asset set owner = ? where id = ?',
  insertAsset:
    'insert into asset (id, seq, kind, name, description, metadata, collection_id, creator_id, symbol, decimals, ' +
    'max_supply, owner, soulbound, created_at, expires_at, lender, minted_to, mint_seq) ' +
    'values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  insertWallet:
    'insert into wallet (address, user_id, kind, encrypted_private_key, created_at) values (?, ?, ?, ?, ?)',
  insertTransfer:
    'insert into transfer (id, seq, asset_id, from_address, to_address, amount, status, failure_reason, ' +
    "requested_by_id, created_at, completed_at) values (?, ?, ?, ?, ?, ?, 'completed', null, ?, ?, ?)",
  insertPrice:
    'insert into price_observation (asset_id, price, price_scaled, currency, source, observed_at, posted_by_id, created_at) ' +
    'values (?, ?, ?, ?, ?, ?, ?, ?)',
  insertEvent:
    'insert into outbox_event (type, occurred_at, data, asset_id, collection_id, wallets, from_wallet, to_wallet, ' +
    'operation_id) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  // ---- The audit trail (issue 37, src/domain/audit.ts) ----
  reserveAudit: RESERVE_AUDIT_SEQS,
  setAuditTip: SET_AUDIT_TIP,
  insertAudit:
    'insert into audit_entry (seq, at, action, actor_id, object_type, object_id, owner_id, collection_id, body, ' +
    'prev_hash, hash) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  insertLedgerChange: 'insert into ledger_change (kind, occurred_at, user_id, wallet) values (?, ?, ?, ?)',
  movable:
    'select a.frozen, a.soulbound, c.soulbound as collection_soulbound, a.expires_at, a.lender from asset a ' +
    'join collection c on c.id = a.collection_id where a.id = ?',
  assetVersion: 'select metadata_version, frozen, owner from asset where id = ?',
  tradeOpen: 'select status, expires_at from trade where id = ?',
  setName: 'update asset set name = ? where id = ?',
  setDescription: 'update asset set description = ? where id = ?',
  setMetadata: 'update asset set metadata = ? where id = ?',
  setFrozen: 'update asset set frozen = ?, frozen_by = ? where id = ?',
  setSoulbound: 'update asset set soulbound = ? where id = ?',
  setMetadataVersion: 'update asset set metadata_version = ? where id = ?',
  insertMetadataVersion:
    'insert into asset_metadata_version (asset_id, version, name, metadata, changed_by, changed_at) values (?, ?, ?, ?, ?, ?)',
  insertTrade:
    'insert into trade (id, status, proposer_user_id, proposer_wallet, counterparty_wallet, offer, request, ' +
    'expires_at, created_at, updated_at, operation_id, closed_by) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  closeTrade: 'update trade set status = ?, closed_by = ?, operation_id = ?, updated_at = ? where id = ?',
  listingActive: 'select status, expires_at from listing where id = ?',
  insertListing:
    'insert into listing (id, status, end_reason, seller_user_id, seller_wallet, asset_id, collection_id, amount, ' +
    "currency_id, price, expires_at, created_at, updated_at, operation_id, closed_by) values (?, 'active', null, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null, null)",
  closeListing:
    // A closed listing stays as it closed (a sale is never turned into an end).
    "update listing set status = ?, end_reason = ?, closed_by = ?, operation_id = ?, updated_at = ? where id = ? and status = 'active'",
  // Issue 35: the trait floor's rows (src/db/entities/ListingTrait.ts).
  insertListingTrait:
    'insert into listing_trait (listing_id, trait_type, trait_value, collection_id, currency_id, price, expires_at) ' +
    'values (?, ?, ?, ?, ?, ?, ?)',
  deleteListingTraits: 'delete from listing_trait where listing_id = ?',
  deleteItemListingTraits:
    "delete from listing_trait where listing_id in (select id from listing where asset_id = ? and status = 'active')",
  insertItemListingTrait:
    'insert into listing_trait (listing_id, trait_type, trait_value, collection_id, currency_id, price, expires_at) ' +
    "select id, ?, ?, collection_id, currency_id, price, expires_at from listing where asset_id = ? and status = 'active'",
  // Issue 35: offers and reserved balances.
  offerOpen: 'select status, expires_at from offer where id = ?',
  insertOffer:
    'insert into offer (id, status, bidder_user_id, bidder_wallet, asset_id, collection_id, trait_type, trait_value, ' +
    'currency_id, price, expires_at, created_at, updated_at, operation_id, sold_asset_id, closed_by) ' +
    "values (?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null, null, null)",
  closeOffer:
    "update offer set status = ?, closed_by = ?, operation_id = ?, sold_asset_id = ?, updated_at = ? where id = ? and status = 'open'",
  auctionOpen: 'select status, ends_at, best_bid from auction where id = ?',
  insertAuction:
    'insert into auction (id, status, seller_user_id, seller_wallet, asset_id, collection_id, currency_id, reserve_price, ' +
    'min_increment, ends_at, extension_seconds, best_bid, best_bidder, best_bidder_user_id, bids, created_at, updated_at, operation_id) ' +
    "values (?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?, null, null, null, 0, ?, ?, null)",
  bidAuction:
    'update auction set best_bid = ?, best_bidder = ?, best_bidder_user_id = ?, ends_at = ?, bids = bids + 1, updated_at = ? ' +
    "where id = ? and status = 'open'",
  settleAuction:
    "update auction set status = ?, operation_id = ?, updated_at = ? where id = ? and status = 'open'",
  writeReserved: 'update holding set reserved = ?, updated_at = ? where asset_id = ? and wallet = ?',
  insertSale:
    'insert into sale (id, listing_id, asset_id, collection_id, amount, currency_id, price, royalty, fee, seller_proceeds, ' +
    'seller_wallet, buyer_wallet, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  // ---- Stores (issue 36) ----
  offerAvailable:
    'select status, version, starts_at, ends_at, limit_total, limit_per_wallet, sold from store_offer where id = ?',
  offerWalletBought: 'select bought from store_offer_wallet where offer_id = ? and wallet = ?',
  offerSold: 'update store_offer set sold = sold + ? where id = ?',
  offerWalletSold:
    'insert into store_offer_wallet (offer_id, wallet, bought) values (?, ?, ?) ' +
    'on conflict (offer_id, wallet) do update set bought = bought + excluded.bought',
  insertStorePurchase:
    'insert into store_purchase (id, offer_id, version, collection_id, wallet, user_id, quantity, paid, pay_to, ' +
    'granted, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  // ---- Loot boxes and draws (issue 36) ----
  seedAt: 'select wallet, status, next_nonce from draw_seed where id = ?',
  pityAt: 'select count from loot_box_pity where box_id = ? and wallet = ?',
  setSeedNonce: 'update draw_seed set next_nonce = ? where id = ?',
  setPity:
    'insert into loot_box_pity (box_id, wallet, count) values (?, ?, ?) ' +
    'on conflict (box_id, wallet) do update set count = excluded.count',
  insertDraw:
    'insert into draw (id, box_id, asset_id, wallet, seed_id, nonce, data, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
  // ---- Items that expire (issue 36) ----
  assetExpiry: 'select expires_at, owner from asset where id = ?',
  setExpiry: 'update asset set expires_at = ?, lender = ? where id = ?',
  // ---- Timed currency grants (issue 36) ----
  lotsOf:
    'select id, amount, expires_at, source_id from currency_lot where asset_id = ? and wallet = ? ' +
    'order by expires_at, id',
  lotsEndedBy: 'select amount from currency_lot where asset_id = ? and wallet = ? and expires_at <= ?',
  lotAt: 'select id, asset_id, wallet, amount, expires_at from currency_lot where id = ?',
  lotLike:
    'select id, amount from currency_lot where asset_id = ? and wallet = ? and expires_at = ? and source_id = ?',
  insertLot:
    'insert into currency_lot (id, asset_id, wallet, amount, expires_at, source_id, created_at) values (?, ?, ?, ?, ?, ?, ?)',
  setLot: 'update currency_lot set amount = ? where id = ?',
  deleteLot: 'delete from currency_lot where id = ?',
} as const;

/** The smaller of two amounts (Math.min takes no bigint). */
const least = (a: bigint, b: bigint) => (a < b ? a : b);

function epochMs(value: unknown): number {
  return typeof value === 'number' ? value : new Date(String(value)).getTime();
}

export function createSqliteLedgerStore(orm: Orm, hook: CommitHook): LedgerStore {
  const platform = orm.em.getPlatform();
  const uint256 = new Uint256Type();
  const amount = (value: bigint | null) =>
    value === null ? null : uint256.convertToDatabaseValue(value, platform);

  const prepared = sqliteWriter<Change>(orm, (changes) => hook.committed(changes)).then((writer) => {
    const s = Object.fromEntries(
      Object.entries(SQL).map(([name, sql]) => [name, writer.statement(sql)]),
    ) as Record<keyof typeof SQL, ReturnType<typeof writer.statement>>;
    const sequence = sqliteSequence(writer);

    /**
     * Holdings read or written by the running plan (balance and reserved part), so a second leg on a
     * holding sees the first.
     */
    function holdingOf(
      holdings: Map<string, { balance: bigint; reserved: bigint }>,
      assetId: string,
      wallet: string,
    ) {
      const key = `${assetId}\u0000${wallet}`;
      let holding = holdings.get(key);
      if (holding === undefined) {
        const row = s.balance.get(assetId, wallet);
        holding = row
          ? { balance: amountOf(row.balance), reserved: amountOf(row.reserved) }
          : { balance: 0n, reserved: 0n };
        holdings.set(key, holding);
      }
      return holding;
    }

    function check(plan: Plan): void {
      for (const guard of plan.guards) {
        switch (guard.kind) {
          case 'controls':
            if (!s.controls.get(guard.wallet, guard.userId)) throw new Rejected({ guard });
            break;
          case 'holds': {
            // The free part: reserved units are held but never spendable, nor are the units of lots
            // past their end (issue 36; with `untimed`, of any lot).
            const row = s.balance.get(guard.assetId, guard.wallet);
            let found = row ? amountOf(row.balance) - amountOf(row.reserved) : 0n;
            if (row) {
              const by = guard.untimed ? Number.MAX_SAFE_INTEGER : plan.at.getTime();
              for (const lot of s.lotsEndedBy.all(guard.assetId, guard.wallet, by))
                found -= amountOf(lot.amount);
            }
            if (found < guard.atLeast) throw new Rejected({ guard, found });
            break;
          }
          case 'reservedAtLeast': {
            const row = s.balance.get(guard.assetId, guard.wallet);
            const found = row ? amountOf(row.reserved) : 0n;
            if (found < guard.atLeast) throw new Rejected({ guard, found });
            break;
          }
          case 'auctionOpen': {
            const row = s.auctionOpen.get(guard.auctionId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            if (row.status !== 'open') throw new Rejected({ guard, reason: row.status as GuardReason });
            if (guard.bestBid !== undefined) {
              const best = row.best_bid == null ? null : amountOf(row.best_bid);
              if (best !== guard.bestBid) throw new Rejected({ guard, reason: 'changed' });
            }
            const ended = epochMs(row.ends_at) <= guard.at.getTime();
            if (ended !== Boolean(guard.ended))
              throw new Rejected({ guard, reason: ended ? 'expired' : 'open' });
            break;
          }
          case 'offerOpen': {
            const row = s.offerOpen.get(guard.offerId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            if (row.status === 'accepted' || row.status === 'cancelled' || row.status === 'expired')
              throw new Rejected({ guard, reason: row.status });
            if (guard.at && row.expires_at != null && epochMs(row.expires_at) <= guard.at.getTime())
              throw new Rejected({ guard, reason: 'expired' });
            break;
          }
          case 'supplyWithin': {
            const row = s.supply.get(guard.assetId);
            const found = row?.total_supply == null ? 0n : amountOf(row.total_supply);
            if (found + guard.adding > guard.max) throw new Rejected({ guard, found });
            break;
          }
          case 'assetAbsent':
            if (s.assetExists.get(guard.assetId)) throw new Rejected({ guard });
            break;
          case 'walletAbsent':
            if (s.walletExists.get(guard.wallet)) throw new Rejected({ guard });
            break;
          case 'movable':
          case 'burnable': {
            const row = s.movable.get(guard.assetId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            // Soulbound first: unfreezing would not make it movable.
            if (guard.kind === 'movable' && (row.soulbound || row.collection_soulbound))
              throw new Rejected({ guard, reason: 'soulbound' });
            if (row.frozen) throw new Rejected({ guard, reason: 'frozen' });
            // Issue 36: past its end time (swept or not) nothing moves it; lent, only the sweep does.
            if (row.expires_at != null && epochMs(row.expires_at) <= plan.at.getTime())
              throw new Rejected({ guard, reason: 'expired' });
            if (row.lender != null) throw new Rejected({ guard, reason: 'lent' });
            break;
          }
          case 'tradeOpen': {
            const row = s.tradeOpen.get(guard.tradeId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            if (row.status === 'accepted' || row.status === 'cancelled')
              throw new Rejected({ guard, reason: row.status });
            if (epochMs(row.expires_at) <= guard.at.getTime())
              throw new Rejected({ guard, reason: 'expired' });
            break;
          }
          case 'listingActive': {
            const row = s.listingActive.get(guard.listingId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            if (row.status !== 'active') throw new Rejected({ guard, reason: row.status as GuardReason });
            if (guard.at && row.expires_at != null && epochMs(row.expires_at) <= guard.at.getTime())
              throw new Rejected({ guard, reason: 'expired' });
            break;
          }
          case 'assetVersion': {
            const row = s.assetVersion.get(guard.assetId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            const found = BigInt(Number(row.metadata_version));
            const moved =
              (guard.frozen !== undefined && Boolean(row.frozen) !== guard.frozen) ||
              (guard.owner !== undefined && (row.owner ?? null) !== guard.owner);
            if (found !== BigInt(guard.version) || moved) throw new Rejected({ guard, found });
            break;
          }
          // ---- Stores (issue 36) ----
          case 'offerAvailable': {
            const row = s.offerAvailable.get(guard.offerId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            const at = guard.at.getTime();
            if (row.status !== 'active') throw new Rejected({ guard, reason: 'closed' });
            if (Number(row.version) !== guard.version) throw new Rejected({ guard, reason: 'version' });
            if (row.starts_at != null && epochMs(row.starts_at) > at)
              throw new Rejected({ guard, reason: 'notStarted' });
            if (row.ends_at != null && epochMs(row.ends_at) <= at)
              throw new Rejected({ guard, reason: 'expired' });
            if (row.limit_total != null && Number(row.sold) + guard.quantity > Number(row.limit_total))
              throw new Rejected({ guard, reason: 'soldOut' });
            if (row.limit_per_wallet != null) {
              const bought = Number(s.offerWalletBought.get(guard.offerId, guard.wallet)?.bought ?? 0);
              if (bought + guard.quantity > Number(row.limit_per_wallet))
                throw new Rejected({ guard, reason: 'walletLimit' });
            }
            break;
          }
          // ---- Loot boxes and draws (issue 36) ----
          case 'seedAt': {
            const row = s.seedAt.get(guard.seedId);
            if (!row || row.wallet !== guard.wallet) throw new Rejected({ guard, reason: 'missing' });
            if (row.status !== 'active') throw new Rejected({ guard, reason: 'revealed' });
            if (Number(row.next_nonce) !== guard.nonce) throw new Rejected({ guard, reason: 'nonce' });
            break;
          }
          case 'pityAt': {
            const count = Number(s.pityAt.get(guard.boxId, guard.wallet)?.count ?? 0);
            if (count !== guard.count) throw new Rejected({ guard, reason: 'pity' });
            break;
          }
          // ---- Items that expire (issue 36) ----
          // ---- Timed currency grants (issue 36) ----
          case 'lotAt': {
            const row = s.lotAt.get(guard.lotId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            if (
              row.asset_id !== guard.assetId ||
              row.wallet !== guard.wallet ||
              amountOf(row.amount) !== guard.amount
            )
              throw new Rejected({ guard, reason: 'changed' });
            if (epochMs(row.expires_at) > plan.at.getTime()) throw new Rejected({ guard, reason: 'open' });
            break;
          }
          case 'assetExpiry': {
            const row = s.assetExpiry.get(guard.assetId);
            if (!row) throw new Rejected({ guard, reason: 'missing' });
            const found = row.expires_at == null ? null : epochMs(row.expires_at);
            if (found !== (guard.expiresAt?.getTime() ?? null) || (guard.owner && row.owner !== guard.owner))
              throw new Rejected({ guard, reason: 'changed' });
            if (guard.due && (found === null || found > plan.at.getTime()))
              throw new Rejected({ guard, reason: 'open' });
            break;
          }
        }
      }
    }

    /** Adds `units` to the lot of `wallet` with this end and source (a new row, or the one it has). */
    function creditLot(
      assetId: string,
      wallet: string,
      units: bigint,
      expiresAt: number,
      sourceId: string,
      id: string,
      at: number,
    ): void {
      const like = s.lotLike.get(assetId, wallet, expiresAt, sourceId);
      if (like) s.setLot.run(amount(amountOf(like.amount) + units), like.id);
      else s.insertLot.run(id, assetId, wallet, amount(units), expiresAt, sourceId, at);
    }

    /** Takes `units` from a lot (deleting it at 0); returns what is left. */
    function debitLot(lot: Row, units: bigint): bigint {
      const left = amountOf(lot.amount) - units;
      if (left > 0n) s.setLot.run(amount(left), lot.id);
      else s.deleteLot.run(lot.id);
      return left;
    }

    /**
     * Issue 36, timed currency grants (docs/architecture/stores-and-rewards.md): each transfer's debit
     * takes the sender's live lots first, soonest end first, and moves them to the receiver (a burn
     * consumes them); a sweep's burn (`lotId`) takes its lot. Then the plan's new lots, then, for every
     * holding the plan debits or reserves on, `sum(lots) + reserved <= balance` (a debit no guard
     * covered trims the soonest lots; a reservation past it fails as a negative balance).
     */
    function applyLots(plan: Plan, holdings: Map<string, { balance: bigint; reserved: bigint }>): void {
      const at = plan.at.getTime();
      const debited = new Map<string, { assetId: string; wallet: string }>();
      for (const t of plan.transfers ?? []) {
        if (t.from === ZERO_ADDRESS) continue;
        if (t.lotId !== undefined) {
          const lot = s.lotAt.get(t.lotId);
          if (lot) debitLot(lot, least(t.amount, amountOf(lot.amount)));
          continue;
        }
        const lots = s.lotsOf.all(t.assetId, t.from);
        let need = t.amount;
        for (const lot of lots) {
          if (need === 0n) break;
          const ends = epochMs(lot.expires_at);
          if (ends <= at) continue;
          const units = least(need, amountOf(lot.amount));
          debitLot(lot, units);
          need -= units;
          if (t.to !== ZERO_ADDRESS)
            creditLot(
              t.assetId,
              t.to,
              units,
              ends,
              String(lot.source_id),
              movedLotId(t.id, String(lot.id)),
              at,
            );
        }
      }
      for (const lot of plan.lots ?? [])
        creditLot(lot.assetId, lot.wallet, lot.amount, lot.expiresAt.getTime(), lot.sourceId, lot.id, at);
      const reserving = new Set(
        (plan.reserves ?? []).filter((r) => r.delta > 0n).map((r) => `${r.assetId}\u0000${r.wallet}`),
      );
      for (const b of plan.balances ?? [])
        if (b.delta < 0n)
          debited.set(`${b.assetId}\u0000${b.wallet}`, { assetId: b.assetId, wallet: b.wallet });
      for (const r of plan.reserves ?? [])
        if (r.delta > 0n)
          debited.set(`${r.assetId}\u0000${r.wallet}`, { assetId: r.assetId, wallet: r.wallet });
      for (const [key, { assetId, wallet }] of debited) {
        const holding = holdingOf(holdings, assetId, wallet);
        const lots = s.lotsOf.all(assetId, wallet);
        let excess =
          lots.reduce((sum, lot) => sum + amountOf(lot.amount), 0n) + holding.reserved - holding.balance;
        if (excess <= 0n) continue;
        if (reserving.has(key)) throw new NegativeBalanceError(assetId, wallet);
        for (const lot of lots) {
          if (excess <= 0n) break;
          const units = least(excess, amountOf(lot.amount));
          debitLot(lot, units);
          excess -= units;
        }
      }
    }

    /** Returns the listings whose status change found them closed already (changed nothing). */
    function applyChanges(plan: Plan): Set<string> {
      for (const a of plan.assets ?? []) {
        s.insertAsset.run(
          a.id,
          sequence('asset'),
          a.kind,
          a.name,
          a.description,
          JSON.stringify(a.metadata),
          a.collectionId,
          a.creatorId,
          a.symbol,
          a.decimals,
          amount(a.maxSupply),
          a.owner,
          a.soulbound ? 1 : 0,
          a.createdAt.getTime(),
          a.expiresAt?.getTime() ?? null,
          a.lender ?? null,
          a.mintedTo ?? null,
          // Issue 37: a ledger NFT's mint takes its place in its wallet's history from the transfers' counter.
          a.mintedTo ? sequence('transfer') : null,
        );
        if (a.totalSupply != null) s.insertSupply.run(a.id, amount(a.totalSupply));
      }
      for (const w of plan.wallets ?? []) {
        s.insertWallet.run(w.address, w.userId, w.kind, w.encryptedPrivateKey, w.createdAt.getTime());
      }
      const holdings = new Map<string, { balance: bigint; reserved: bigint }>();
      // Issue 35: reserved parts first (a payment from a reservation releases it, then debits).
      for (const change of plan.reserves ?? []) {
        const holding = holdingOf(holdings, change.assetId, change.wallet);
        const reserved = holding.reserved + change.delta;
        if (reserved < 0n || reserved > holding.balance)
          throw new NegativeBalanceError(change.assetId, change.wallet);
        holding.reserved = reserved;
        s.writeReserved.run(amount(reserved), plan.at.getTime(), change.assetId, change.wallet);
      }
      if (plan.balances?.length) {
        const now = plan.at.getTime();
        for (const change of plan.balances) {
          const holding = holdingOf(holdings, change.assetId, change.wallet);
          const balance = holding.balance + change.delta;
          // Below its reserved part (0 for most holdings) is below what the holding may spend.
          if (balance < holding.reserved) throw new NegativeBalanceError(change.assetId, change.wallet);
          holding.balance = balance;
          s.writeBalance.run(change.wallet, change.assetId, amount(balance), now);
        }
      }
      for (const change of plan.supplies ?? []) {
        // Only a currency has a supply row (PostgreSQL's update finds none either otherwise).
        const row = s.supply.get(change.assetId);
        if (row?.total_supply == null) continue;
        s.writeSupply.run(amount(amountOf(row.total_supply) + change.delta), change.assetId);
      }
      for (const change of plan.owners ?? []) s.setOwner.run(change.owner, change.assetId);
      for (const u of plan.assetUpdates ?? []) {
        if (u.name !== undefined) s.setName.run(u.name, u.assetId);
        if (u.description !== undefined) s.setDescription.run(u.description, u.assetId);
        if (u.metadata !== undefined) {
          s.setMetadata.run(JSON.stringify(u.metadata), u.assetId);
          // Issue 35: the item's active listings are found under its new attribute values.
          s.deleteItemListingTraits.run(u.assetId);
          for (const [type, value] of listingTraitsOf(u.metadata))
            s.insertItemListingTrait.run(type, value, u.assetId);
        }
        if (u.frozen !== undefined) s.setFrozen.run(u.frozen ? 1 : 0, u.frozenBy ?? null, u.assetId);
        if (u.soulbound !== undefined) s.setSoulbound.run(u.soulbound ? 1 : 0, u.assetId);
        if (u.metadataVersion !== undefined) s.setMetadataVersion.run(u.metadataVersion, u.assetId);
        // Issue 36: a loan sets both, a return clears both.
        if (u.expiresAt !== undefined)
          s.setExpiry.run(u.expiresAt?.getTime() ?? null, u.lender ?? null, u.assetId);
      }
      for (const v of plan.metadataVersions ?? []) {
        s.insertMetadataVersion.run(
          v.assetId,
          v.version,
          v.name,
          JSON.stringify(v.metadata),
          v.changedBy,
          v.changedAt.getTime(),
        );
      }
      for (const t of plan.trades ?? []) {
        s.insertTrade.run(
          t.id,
          t.status,
          t.proposerUserId,
          t.proposerWallet,
          t.counterpartyWallet,
          JSON.stringify(t.offer),
          JSON.stringify(t.request),
          t.expiresAt.getTime(),
          t.createdAt.getTime(),
          t.updatedAt.getTime(),
          t.operationId,
          t.closedBy,
        );
      }
      for (const c of plan.tradeStatuses ?? []) {
        s.closeTrade.run(c.status, c.by, c.operationId, c.at.getTime(), c.tradeId);
      }
      for (const l of plan.listings ?? []) {
        const at = l.createdAt.getTime();
        s.insertListing.run(
          l.id,
          l.sellerUserId,
          l.sellerWallet,
          l.assetId,
          l.collectionId,
          amount(l.amount),
          l.currencyId,
          amount(l.price),
          l.expiresAt?.getTime() ?? null,
          at,
          at,
        );
        for (const [type, value] of listingTraitsOf(l.metadata))
          s.insertListingTrait.run(
            l.id,
            type,
            value,
            l.collectionId,
            l.currencyId,
            amount(l.price),
            l.expiresAt?.getTime() ?? null,
          );
      }
      const unchanged = new Set<string>();
      for (const c of plan.listingStatuses ?? []) {
        const { changes } = s.closeListing.run(
          c.status,
          c.reason,
          c.by,
          c.operationId,
          c.at.getTime(),
          c.listingId,
        );
        if (changes === 0) unchanged.add(c.listingId);
        s.deleteListingTraits.run(c.listingId);
      }
      // Issue 35: offers.
      for (const o of plan.offers ?? []) {
        const at = o.createdAt.getTime();
        s.insertOffer.run(
          o.id,
          o.bidderUserId,
          o.bidderWallet,
          o.assetId,
          o.collectionId,
          o.trait?.type ?? null,
          o.trait?.value ?? null,
          o.currencyId,
          amount(o.price),
          o.expiresAt?.getTime() ?? null,
          at,
          at,
        );
      }
      for (const c of plan.offerStatuses ?? []) {
        s.closeOffer.run(c.status, c.by, c.operationId, c.soldAssetId, c.at.getTime(), c.offerId);
      }
      // Issue 35: auctions.
      for (const a of plan.auctions ?? []) {
        const at = a.createdAt.getTime();
        s.insertAuction.run(
          a.id,
          a.sellerUserId,
          a.sellerWallet,
          a.assetId,
          a.collectionId,
          a.currencyId,
          amount(a.reservePrice),
          amount(a.minIncrement),
          a.endsAt.getTime(),
          a.extensionSeconds,
          at,
          at,
        );
      }
      for (const b of plan.auctionBids ?? []) {
        s.bidAuction.run(
          amount(b.amount),
          b.bidder,
          b.bidderUserId,
          b.endsAt.getTime(),
          b.at.getTime(),
          b.auctionId,
        );
      }
      for (const c of plan.auctionStatuses ?? []) {
        s.settleAuction.run(c.status, c.operationId, c.at.getTime(), c.auctionId);
      }
      for (const x of plan.sales ?? []) {
        s.insertSale.run(
          x.id,
          x.listingId,
          x.assetId,
          x.collectionId,
          amount(x.amount),
          x.currencyId,
          amount(x.price),
          amount(x.royalty),
          amount(x.fee),
          amount(x.sellerProceeds),
          x.sellerWallet,
          x.buyerWallet,
          x.createdAt.getTime(),
        );
      }
      // ---- Stores (issue 36) ----
      for (const sale of plan.offerSales ?? []) {
        s.offerSold.run(sale.quantity, sale.offerId);
        s.offerWalletSold.run(sale.offerId, sale.wallet, sale.quantity);
      }
      for (const x of plan.storePurchases ?? []) {
        s.insertStorePurchase.run(
          x.id,
          x.offerId,
          x.version,
          x.collectionId,
          x.wallet,
          x.userId,
          x.quantity,
          JSON.stringify(x.paid),
          x.payTo,
          JSON.stringify(x.granted),
          x.createdAt.getTime(),
        );
      }
      // ---- Loot boxes and draws (issue 36) ----
      for (const x of plan.seedNonces ?? []) s.setSeedNonce.run(x.next, x.seedId);
      for (const x of plan.pityCounts ?? []) s.setPity.run(x.boxId, x.wallet, x.count);
      for (const d of plan.draws ?? []) {
        s.insertDraw.run(
          d.id,
          d.boxId,
          d.assetId,
          d.wallet,
          d.seedId,
          d.nonce,
          JSON.stringify(d.data),
          d.createdAt.getTime(),
        );
      }
      for (const t of plan.transfers ?? []) {
        const at = t.createdAt.getTime();
        s.insertTransfer.run(
          t.id,
          sequence('transfer'),
          t.assetId,
          t.from,
          t.to,
          amount(t.amount),
          t.requestedBy,
          at,
          at,
        );
      }
      applyLots(plan, holdings);
      for (const p of plan.prices ?? []) {
        s.insertPrice.run(
          p.assetId,
          p.price,
          amount(p.priceScaled),
          p.currency,
          p.source,
          p.observedAt.getTime(),
          p.postedBy,
          p.createdAt.getTime(),
        );
      }
      return unchanged;
    }

    function record(plan: Plan): void {
      const idempotency = plan.idempotency;
      if (!idempotency) return;
      const { key, response } = idempotency;
      const at = plan.at;
      const answer = storedAnswer(response.body);
      s.insertRecord.run(
        key.id,
        key.requestHash,
        response.status,
        answer.json,
        answer.deflated,
        JSON.stringify(response.headers),
        at.getTime(),
        key.expiresAt(at).getTime(),
      );
    }

    function publish(plan: Plan, unchangedListings: ReadonlySet<string>): void {
      // One writer at a time: ids become visible in commit order without the PostgreSQL lock.
      for (const e of plan.events ?? []) {
        if (e.onlyIfListingClosed !== undefined && unchangedListings.has(e.onlyIfListingClosed)) continue;
        s.insertEvent.run(
          e.type,
          e.occurredAt.getTime(),
          JSON.stringify(e.data),
          e.assetId,
          e.collectionId ?? null,
          JSON.stringify(e.wallets),
          e.fromWallet ?? null,
          e.toWallet ?? null,
          e.operationId ?? plan.operationId ?? null,
        );
        writer.changed(e);
      }
      for (const c of plan.ledgerChanges ?? []) {
        s.insertLedgerChange.run(c.kind, c.occurredAt.getTime(), c.userId, c.wallet);
        writer.changed(c);
      }
    }

    /** The plan's audit entries, chained after the tip (updating it first takes the write lock). */
    function appendAudit(plan: Plan): void {
      const drafts = plan.audit ?? [];
      if (drafts.length === 0) return;
      const tip = s.reserveAudit.get(drafts.length) as { seq: number | string; hash: string };
      const rows = chainDrafts(drafts, { seq: Number(tip.seq), hash: tip.hash });
      for (const { seq, prevHash, hash, draft: d } of rows)
        s.insertAudit.run(
          seq,
          d.at.getTime(),
          d.action,
          d.actorId,
          d.objectType,
          d.objectId,
          d.ownerId,
          d.collectionId,
          d.body,
          prevHash,
          hash,
        );
      s.setAuditTip.run(rows[rows.length - 1].hash);
    }

    const run = (plan: Plan): PlanOutcome => {
      if (plan.idempotency) {
        const { key } = plan.idempotency;
        const at = plan.at;
        const existing = s.readRecord.get(key.id);
        if (existing) {
          if (epochMs(existing.expires_at) > at.getTime()) throw new Replay(existing);
          // An expired record protects nothing: make room for this request's.
          s.deleteExpired.run(key.id, at.getTime());
        }
      }
      check(plan);
      publish(plan, applyChanges(plan));
      appendAudit(plan);
      record(plan);
      return { outcome: 'applied' };
    };
    return { writer, run };
  });

  return {
    async apply(plan) {
      // Until the first call has the connection, calls wait for it; the rest is synchronous.
      const { writer, run } = await prepared;
      try {
        return await writer.transaction(() => run(plan));
      } catch (error) {
        if (error instanceof Rejected) return { outcome: 'rejected', ...error.failure };
        if (error instanceof Replay) return { outcome: 'replay', record: error.record };
        throw error;
      }
    },
  };
}
