// The PostgreSQL Reads adapter (./port.ts): every read on the event loop (the driver's I/O is
// asynchronous already) over named prepared statements on the ORM's pool
// (../../../db/read-statements.ts). A listing reads its assets whole in the same statement (the asset
// by its primary key under the holdings' index scan: test/integration/ledger/holding-read-plans.test.ts).
import type { Orm } from '../../../db/orm.ts';
import { type ReadStatements, readStatements } from '../../../db/read-statements.ts';
import type { StoredAddress } from '../addresses.ts';
import { formatUnits } from '../amounts.ts';
import { ASSET_COLUMNS, assetFieldsOf } from '../asset-rows.ts';
import { type AssetFields, assetView, decimalsOf } from '../views.ts';
import type { Reads } from './port.ts';
import {
  assetById,
  assetOwners,
  type HoldingRow,
  holdingListing,
  holdingReads,
  holdingsSql,
  userWallets,
} from './queries.ts';
import { zeroBalanceOf } from './zero.ts';

/** The statement of a PostgreSQL listing with `conditions` in `order` (./queries.ts, holdingsSql). */
export function postgresHoldingsSql(conditions: readonly string[], order: string): string {
  return holdingsSql(ASSET_COLUMNS, conditions, order);
}

interface ListedRow extends HoldingRow {
  asset: AssetFields;
}

export function createPostgresReads(orm: Orm): Reads {
  const statements: ReadStatements = readStatements(orm);
  const zero = zeroBalanceOf(orm);
  const sqlTexts = new Map<string, string>();
  const listings = holdingReads<ListedRow>({
    async rows(conditions, order, parameters) {
      const shape = `${conditions.join(' and ')} order by ${order}`;
      let sql = sqlTexts.get(shape);
      if (sql === undefined) {
        sql = postgresHoldingsSql(conditions, order);
        sqlTexts.set(shape, sql);
      }
      const rows = await statements.all(sql, [zero, ...parameters]);
      return rows.map((row) => ({
        wallet: String(row.wallet) as StoredAddress,
        assetId: String(row.asset_id),
        balance: String(row.balance),
        asset: assetFieldsOf(row, statements),
      }));
    },
    async views(rows) {
      return rows.map((row) => ({
        asset: assetView(row.asset),
        balance: formatUnits(row.balance, decimalsOf(row.asset)),
      }));
    },
    userWallets: (userId) => userWallets(statements, userId),
  });
  return {
    ...listings,
    asset: (id) => assetById(statements, id),
    assetOwners: (assetId, options) => assetOwners(statements, zero, assetId, options),
    listing: (request) => holdingListing(listings, request),
  };
}
