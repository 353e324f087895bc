import { type Platform, Type, ValidationError } from '@mikro-orm/core';
import { databaseKindOf } from '../platform.ts';
import { UINT256_DIGITS as DIGITS, UINT256_MAX } from './uint256-range.ts';

/**
 * Ledger amounts (balances, supplies, transfer amounts, scaled prices): integer base units from 0 to
 * 2^256 - 1, held in JS as `bigint`.
 *
 * - PostgreSQL: `numeric(78,0)`, exact, ordered and summable in SQL.
 * - SQLite: `text`, because a NUMERIC column turns anything past 2^63 into a lossy REAL. The text is
 *   zero-padded to 78 digits so that byte order equals numeric order: `ORDER BY`, `MIN`/`MAX` and
 *   range conditions (`{ balance: { $gte: 10n } }`, converted through this type) stay correct.
 *   `SUM` does not (SQLite would add the strings as floats): add amounts in JS with BigInt.
 */
export class Uint256Type extends Type<bigint | null | undefined, string | null | undefined> {
  override convertToDatabaseValue(
    value: bigint | null | undefined,
    platform: Platform,
  ): string | null | undefined {
    if (value == null) {
      return value;
    }
    const amount = toUint256(value);
    const digits = amount.toString();
    return databaseKindOf(platform) === 'sqlite' ? digits.padStart(DIGITS, '0') : digits;
  }

  override convertToJSValue(value: string | null | undefined): bigint | null | undefined {
    if (value == null) {
      return value;
    }
    return BigInt(String(value));
  }

  override getColumnType(_prop: unknown, platform: Platform): string {
    return databaseKindOf(platform) === 'sqlite' ? 'text' : `numeric(${DIGITS},0)`;
  }

  override compareAsType(): string {
    return 'string';
  }

  override compareValues(a: string | null | undefined, b: string | null | undefined): boolean {
    return a == null || b == null ? a === b : BigInt(a) === BigInt(b);
  }

  /** JSON has no bigint: serialize as the plain decimal string (the contract's `Amount` in base units). */
  override toJSON(value: bigint | null | undefined): string | null | undefined {
    return value == null ? value : value.toString();
  }

  override fromJSON(value: unknown): bigint {
    if (typeof value !== 'string' || !/^\d{1,78}$/.test(value)) {
      throw ValidationError.invalidType(Uint256Type, value, 'JSON');
    }
    return toUint256(value);
  }
}

/**
 * Accepts a bigint or a string of decimal digits (MikroORM may hand back raw column values, e.g.
 * when re-converting hydrated data). Numbers are refused: past 2^53 they have already lost digits.
 */
function toUint256(value: unknown): bigint {
  const amount = typeof value === 'string' && /^\d{1,78}$/.test(value) ? BigInt(value) : value;
  if (typeof amount !== 'bigint' || amount < 0n || amount > UINT256_MAX) {
    throw new RangeError(`Not a uint256 amount: ${String(value)}`);
  }
  return amount;
}
