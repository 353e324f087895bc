// The draw algorithm (issue 36), `gats-draw-v1`: how a loot box's outcome follows from published
// inputs, so that anyone can recompute it (docs/architecture/stores-and-rewards.md states it in
// words; test/vectors/draws/ holds vectors made with openssl; scripts/verify-draw.ts verifies a
// draw from the API's answers). Pure functions of node:crypto only: the service, the verification
// script and the tests share them.
//
//   commitment  = hex(SHA-256(serverSeed))                        published before any draw uses it
//   message(j)  = "gats-draw-v1" LF clientSeed LF nonce LF roll LF tableId LF tableHash LF j
//   block(j)    = HMAC-SHA256(key = serverSeed, message(j))       (RFC 2104, FIPS 180-4)
//   value       = the first j = 0, 1, ... whose first 8 bytes (big-endian) masked to
//                 m = bitlength(total - 1) bits are below `total`  (the simple discard method of
//                 NIST SP 800-90A Rev. 1, Appendix A.5.1: every value in [0, total) equally likely)
//   entry       = the first entry whose running sum of weights passes `value`
//   tableHash   = hex(SHA-256(JCS(entries)))                      (RFC 8785 canonical JSON)
// A nested table's roll is the next `roll` (0 for the box's table, 1 for the table it names, ...).
import { createHash, createHmac } from 'node:crypto';

export const DRAW_ALGORITHM = 'gats-draw-v1';

/** The most nested tables one draw walks (the box's table counts as the first). */
export const MAX_DRAW_DEPTH = 5;

/** What a roll is computed from, besides the server seed and the table's total weight. */
export interface RollInput {
  /** The player's value: 1 to 64 printable characters, no line feed. */
  clientSeed: string;
  /** The draw's index under its server seed: 0, 1, 2, ... without gaps. */
  nonce: number;
  /** The roll's index within the draw: 0 for the box's table, +1 per nested table. */
  roll: number;
  tableId: string;
  tableHash: string;
}

/** hex(SHA-256(seed)): what is published before a seed's first draw. */
export function seedCommitment(serverSeedHex: string): string {
  return createHash('sha256').update(Buffer.from(serverSeedHex, 'hex')).digest('hex');
}

/** The UTF-8 message of attempt `attempt` of a roll. */
export function rollMessage(input: RollInput, attempt: number): string {
  return [
    DRAW_ALGORITHM,
    input.clientSeed,
    input.nonce,
    input.roll,
    input.tableId,
    input.tableHash,
    attempt,
  ].join('\n');
}

function bitLength(n: bigint): number {
  return n === 0n ? 0 : n.toString(2).length;
}

/** A value uniform in [0, total) from the seed and the inputs, and the attempts it took (>= 1). */
export function uniformRoll(
  serverSeedHex: string,
  input: RollInput,
  total: bigint,
): { value: bigint; attempts: number } {
  if (total < 1n || total > 2n ** 64n) throw new RangeError('A roll needs a total weight in 1..2^64.');
  const key = Buffer.from(serverSeedHex, 'hex');
  const mask = (1n << BigInt(bitLength(total - 1n))) - 1n;
  for (let attempt = 0; ; attempt++) {
    const block = createHmac('sha256', key).update(rollMessage(input, attempt), 'utf8').digest();
    const candidate = block.readBigUInt64BE(0) & mask;
    if (candidate < total) return { value: candidate, attempts: attempt + 1 };
  }
}

/** The index of the entry `value` falls in: the first whose running sum of weights passes it. */
export function pickEntry(weights: readonly bigint[], value: bigint): number {
  let sum = 0n;
  for (const [i, weight] of weights.entries()) {
    sum += weight;
    if (value < sum) return i;
  }
  throw new RangeError(`The value ${value} is not below the total weight ${sum}.`);
}

/**
 * RFC 8785 (JCS) for the values a table holds (objects, arrays, strings, safe integers, booleans,
 * null): keys sorted by UTF-16 code units, no whitespace, strings as JSON.stringify writes them.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  if (typeof value === 'number' && !Number.isSafeInteger(value))
    throw new RangeError('A table holds integers only.');
  return JSON.stringify(value);
}

/** hex(SHA-256(JCS(entries))): binds a draw to a table's exact entries. */
export function tableHashOf(entries: unknown): string {
  return createHash('sha256').update(canonicalJson(entries), 'utf8').digest('hex');
}

/** `a/b` in lowest terms. */
export function fraction(numerator: bigint, denominator: bigint): string {
  const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));
  const g = gcd(numerator, denominator) || 1n;
  return `${numerator / g}/${denominator / g}`;
}
