// A zero balance as the balance column stores it (zero-padded text on SQLite, a number on
// PostgreSQL): the listings' `balance > ?`.
import type { Orm } from '../../../db/orm.ts';
import { Uint256Type } from '../../../db/types/uint256.ts';

export function zeroBalanceOf(orm: Orm): unknown {
  return new Uint256Type().convertToDatabaseValue(0n, orm.em.getPlatform());
}
