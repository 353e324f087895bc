// Amounts travel as decimal strings and live as integer base units (bigint): "12.5" of a currency
// with 2 decimals is 1250n. No floating point anywhere.
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import { ValidationError } from '../errors.ts';

const DECIMAL = /^(0|[1-9][0-9]*)(?:\.([0-9]+))?$/;

export class InvalidAmountError extends ValidationError {
  constructor(detail: string, pointer: string, fieldDetail: string) {
    super(detail, [{ pointer, detail: fieldDetail }], '/problems/invalid-amount');
  }
}

export interface ParseAmountOptions {
  /** Field for the problem, such as `/body/amount`. */
  pointer: string;
  /** Refuse zero (transfers and mints move something). */
  positive?: boolean;
  /** Name used in messages (`amount`, `maxSupply`). */
  label?: string;
}

/**
 * Decimal string -> base units. Fractional digits past `decimals` are allowed only when they are
 * zeros ("1.50" of a 1-decimal currency is 15), so the value is never rounded.
 */
export function parseAmount(text: string, decimals: number, options: ParseAmountOptions): bigint {
  const label = options.label ?? 'amount';
  const match = DECIMAL.exec(text);
  if (!match) {
    throw new InvalidAmountError(
      `${label} ${text} is not a decimal number.`,
      options.pointer,
      'must be a decimal string',
    );
  }
  const [, whole, fraction = ''] = match;
  const significant = fraction.replace(/0+$/, '');
  if (significant.length > decimals) {
    throw new InvalidAmountError(
      `${label} ${text} has more than ${decimals} fractional digit${decimals === 1 ? '' : 's'}.`,
      options.pointer,
      `at most ${decimals} fractional digit${decimals === 1 ? '' : 's'}`,
    );
  }
  const units = BigInt(whole + significant.padEnd(decimals, '0'));
  if (units > UINT256_MAX) {
    throw new InvalidAmountError(
      `${label} ${text} is larger than the ledger can hold.`,
      options.pointer,
      'too large',
    );
  }
  if (options.positive && units === 0n) {
    throw new InvalidAmountError(
      `${label} must be greater than zero.`,
      options.pointer,
      'must be greater than zero',
    );
  }
  return units;
}

/** Base units -> the shortest decimal string ("1250" with 2 decimals is "12.5"). */
export function formatAmount(units: bigint, decimals: number): string {
  if (units < 0n) throw new RangeError(`negative amount ${units}`);
  return formatDigits(units.toString(), decimals);
}

const LEADING_ZEROS = /^0+(?=[0-9])/;

/**
 * Base units written as decimal digits (as an amount column stores them: zero-padded on SQLite) ->
 * what formatAmount makes of them, without going through a bigint.
 */
export function formatUnits(text: string, decimals: number): string {
  if (!/^[0-9]+$/.test(text)) throw new RangeError(`not base units: ${text}`);
  return formatDigits(text.replace(LEADING_ZEROS, ''), decimals);
}

function formatDigits(units: string, decimals: number): string {
  const digits = units.padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

/** A positive amount of one item of a request's list, its problem prefixed by the item's label ("Output 2: ..."). */
export function labelledAmount(text: string, decimals: number, label: string, pointer: string): bigint {
  try {
    return parseAmount(text, decimals, { pointer, positive: true });
  } catch (error) {
    if (!(error instanceof InvalidAmountError)) throw error;
    throw new InvalidAmountError(`${label}: ${error.detail}`, pointer, error.errors?.[0]?.detail ?? '');
  }
}
