import { p } from '@mikro-orm/core';

/**
 * A 64-bit autoincrement primary key: `bigserial` on PostgreSQL, `integer primary key autoincrement`
 * on SQLite (whose integers are 64-bit, but which only autoincrements a column declared `integer`).
 * The schema comparator would report that `bigint` ≠ `integer` on SQLite for ever, hence the type is
 * left out of schema diffs; a primary key never changes type.
 */
export function bigintAutoincrementId() {
  return p.bigint('number').primary().autoincrement().ignoreSchemaChanges('type');
}
