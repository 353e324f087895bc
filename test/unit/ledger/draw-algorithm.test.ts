// The draw algorithm gats-draw-v1 (src/domain/ledger/draw-algorithm.ts) against vectors made with
// openssl alone (test/vectors/draws/), and its fairness: over many draws with a fixed seed the
// observed frequencies of a table's entries match its weights (a chi-square test).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  fraction,
  pickEntry,
  rollMessage,
  seedCommitment,
  tableHashOf,
  uniformRoll,
} from '../../../src/domain/ledger/draw-algorithm.ts';

interface Vector {
  serverSeed: string;
  commitment: string;
  clientSeed: string;
  nonce: number;
  roll: number;
  tableId: string;
  tableHash: string;
  total: string;
  blocks: string[];
  value: string;
  attempts: number;
}
const vectors = JSON.parse(
  readFileSync(new URL('../../vectors/draws/vectors.json', import.meta.url), 'utf8'),
) as {
  algorithm: string;
  table: { jcs: string; hash: string };
  rolls: Vector[];
};

describe('gats-draw-v1', () => {
  it('computes every vector: commitment, the rolls (discards included) and the table hash', () => {
    expect(vectors.algorithm).toBe('gats-draw-v1');
    expect(vectors.rolls.some((v) => v.attempts > 1)).toBe(true);
    for (const v of vectors.rolls) {
      expect(seedCommitment(v.serverSeed)).toBe(v.commitment);
      expect(rollMessage(v, 0).split('\n')).toEqual([
        'gats-draw-v1',
        v.clientSeed,
        String(v.nonce),
        String(v.roll),
        v.tableId,
        v.tableHash,
        '0',
      ]);
      expect(uniformRoll(v.serverSeed, v, BigInt(v.total))).toEqual({
        value: BigInt(v.value),
        attempts: v.attempts,
      });
    }
    const entries = JSON.parse(vectors.table.jcs);
    // The same entries written in another key order hash the same.
    const shuffled = entries.map((e: Record<string, unknown>) => ({ weight: e.weight, outcome: e.outcome }));
    expect(canonicalJson(shuffled)).toBe(vectors.table.jcs);
    expect(tableHashOf(shuffled)).toBe(vectors.table.hash);
  });

  it('picks the entry whose running weight passes the value; odds are exact fractions', () => {
    const weights = [70n, 5n, 25n];
    expect([0n, 69n, 70n, 74n, 75n, 99n].map((value) => pickEntry(weights, value))).toEqual([
      0, 0, 1, 1, 2, 2,
    ]);
    expect(() => pickEntry(weights, 100n)).toThrow(RangeError);
    expect(fraction(5n, 100n)).toBe('1/20');
    expect(fraction(0n, 7n)).toBe('0/1');
  });

  it('over 30,000 draws with a fixed seed, each entry comes up as often as its weight says (chi-square, p = 0.001)', () => {
    const weights = [1n, 3n, 6n, 10n, 30n, 50n];
    const total = weights.reduce((a, b) => a + b, 0n);
    const draws = 30_000;
    const seen = weights.map(() => 0);
    const seed = seedCommitment('00'.repeat(32)); // any fixed 32 bytes
    for (let nonce = 0; nonce < draws; nonce++) {
      const { value } = uniformRoll(
        seed,
        { clientSeed: 'chi-square', nonce, roll: 0, tableId: 'dtb_test', tableHash: 'f'.repeat(64) },
        total,
      );
      seen[pickEntry(weights, value)]++;
    }
    const chiSquare = weights.reduce((sum, weight, i) => {
      const expected = (draws * Number(weight)) / Number(total);
      return sum + (seen[i] - expected) ** 2 / expected;
    }, 0);
    // The 0.999 quantile of the chi-square distribution with 5 degrees of freedom.
    expect(chiSquare).toBeLessThan(20.515);
    // And a table whose weights disagree with the draws is caught: the test can fail.
    const wrong = [2n, 3n, 5n, 10n, 30n, 50n];
    const wrongChi = wrong.reduce((sum, weight, i) => {
      const expected = (draws * Number(weight)) / Number(total);
      return sum + (seen[i] - expected) ** 2 / expected;
    }, 0);
    expect(wrongChi).toBeGreaterThan(20.515);
  });
});
