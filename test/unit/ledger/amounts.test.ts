import { describe, expect, it } from 'vitest';
import { UINT256_MAX } from '../../../src/db/types/uint256-range.ts';
import { formatAmount, formatUnits, parseAmount } from '../../../src/domain/ledger/amounts.ts';

const at = { pointer: '/body/amount' };

function problemOf(run: () => unknown): { type: string; errors?: unknown } | null {
  try {
    run();
    return null;
  } catch (error) {
    return error as { type: string };
  }
}

describe('amounts', () => {
  it.each([
    ['0', 0, 0n],
    ['1', 0, 1n],
    ['12.5', 2, 1250n],
    ['12.50', 1, 125n],
    ['0.000000000000000001', 18, 1n],
    ['1.0', 0, 1n],
    ['100', 18, 100n * 10n ** 18n],
  ])('parses %s with %i decimals to %s base units', (text, decimals, units) => {
    expect(parseAmount(text, decimals, at)).toBe(units);
  });

  it.each([
    [0n, 0, '0'],
    [1250n, 2, '12.5'],
    [1n, 18, '0.000000000000000001'],
    [10n ** 18n, 18, '1'],
    [123456789n, 4, '12345.6789'],
    [UINT256_MAX, 0, UINT256_MAX.toString()],
  ])('formats %s base units with %i decimals as %s', (units, decimals, text) => {
    expect(formatAmount(units, decimals)).toBe(text);
    expect(parseAmount(text, decimals, at)).toBe(units);
    // The same from the digits an amount column holds (zero-padded to 78 on SQLite).
    expect(formatUnits(units.toString(), decimals)).toBe(text);
    expect(formatUnits(units.toString().padStart(78, '0'), decimals)).toBe(text);
  });

  it('refuses to format what are not base units', () => {
    for (const text of ['', '-1', '1.5', ' 1']) expect(() => formatUnits(text, 2), text).toThrow(RangeError);
  });

  it('refuses more fractional digits than the decimals, naming the field', () => {
    expect(problemOf(() => parseAmount('1.25', 1, at))).toMatchObject({
      type: '/problems/invalid-amount',
      status: 400,
      errors: [{ pointer: '/body/amount', detail: 'at most 1 fractional digit' }],
    });
    expect(problemOf(() => parseAmount('0.5', 0, at))?.type).toBe('/problems/invalid-amount');
  });

  it('refuses zero when a positive amount is required', () => {
    expect(problemOf(() => parseAmount('0.00', 2, { ...at, positive: true }))?.type).toBe(
      '/problems/invalid-amount',
    );
    expect(parseAmount('0.00', 2, at)).toBe(0n);
  });

  it('refuses values past uint256 and malformed text', () => {
    expect(problemOf(() => parseAmount((UINT256_MAX + 1n).toString(), 0, at))?.type).toBe(
      '/problems/invalid-amount',
    );
    for (const text of ['', '-1', '01', '1.', '.5', '1e3', ' 1', '0x10']) {
      expect(problemOf(() => parseAmount(text, 2, at))?.type, text).toBe('/problems/invalid-amount');
    }
  });

  it('never uses floating point: 0.1 + 0.2 of an 18-decimal currency is exact', () => {
    const sum = parseAmount('0.1', 18, at) + parseAmount('0.2', 18, at);
    expect(formatAmount(sum, 18)).toBe('0.3');
  });
});
