import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  addressesKept,
  formatAddress,
  isValidAddress,
  keepAddresses,
  parseAddress,
} from '../../../src/domain/ledger/addresses.ts';

const vectorsDir = new URL('../../vectors/eip55', import.meta.url).pathname;
const vectors = JSON.parse(readFileSync(`${vectorsDir}/eip55-vectors.json`, 'utf8'));
const derived = JSON.parse(readFileSync(`${vectorsDir}/eip55-derived-invalid.json`, 'utf8')) as {
  invalid: string[];
};

function problemOf(input: string): { type: string; errors?: unknown } | null {
  try {
    parseAddress(input, '/body/to');
    return null;
  } catch (error) {
    return error as { type: string; errors?: unknown };
  }
}

describe('EIP-55 addresses (conformance vectors)', () => {
  const checksummed = Object.values(vectors.valid_checksummed as Record<string, string[]>).flat();

  it.each(checksummed)('accepts %s and formats it to its checksum form', (address) => {
    const stored = parseAddress(address, '/body/to');
    expect(stored).toBe(address.toLowerCase());
    // All-caps and all-lower vectors are valid input; the output is always the EIP-55 mixed case.
    expect(formatAddress(stored).toLowerCase()).toBe(address.toLowerCase());
    expect(parseAddress(formatAddress(stored), '/body/to')).toBe(stored);
  });

  it.each(vectors.valid_checksummed.erc55_normal as string[])('re-formats %s exactly', (address) => {
    expect(formatAddress(parseAddress(address, '/x'))).toBe(address);
  });

  it.each(vectors.lowercase_to_checksum_viem as [string, string][])(
    'checksums %s as viem getAddress does',
    (input, expected) => {
      expect(formatAddress(input.toLowerCase())).toBe(expected);
      expect(parseAddress(expected, '/x')).toBe(input.toLowerCase());
      // getAddress re-cases anything; as input, only all-lower (or all-upper) text needs no checksum.
      if (input === input.toLowerCase()) expect(parseAddress(input, '/x')).toBe(input);
      else expect(problemOf(input)?.type).toBe('/problems/invalid-address-checksum');
    },
  );

  it.each(vectors.eip1191_chain30_NOT_eip55 as [string, number, string][])(
    'does not take the EIP-1191 (chain %s) form of %s for EIP-55',
    (lower, _chainId, eip1191) => {
      expect(parseAddress(lower, '/x')).toBe(lower);
      expect(formatAddress(lower)).not.toBe(eip1191);
      expect(problemOf(eip1191)?.type).toBe('/problems/invalid-address-checksum');
    },
  );

  it.each(vectors.invalid['bad_mixed_case_checksum (viem isAddress strict=false expected)'] as string[])(
    'rejects the bad mixed-case checksum %s with the checksum problem',
    (address) => {
      expect(problemOf(address)).toMatchObject({
        type: '/problems/invalid-address-checksum',
        status: 400,
        errors: [{ pointer: '/body/to', detail: 'EIP-55 checksum mismatch' }],
      });
    },
  );

  const malformed = Object.entries(vectors.invalid as Record<string, string[]>)
    .filter(([name]) => !name.startsWith('bad_mixed_case'))
    .flatMap(([, list]) => list);
  it.each(malformed)('rejects the malformed %s as invalid input', (address) => {
    expect(problemOf(address)?.type).toBe('/problems/validation-failed');
    expect(isValidAddress(address)).toBe(false);
  });

  it(`rejects each of the ${derived.invalid.length} single case flips with the checksum problem`, () => {
    for (const address of derived.invalid) {
      expect(problemOf(address)?.type, address).toBe('/problems/invalid-address-checksum');
    }
  });

  it('treats a 0X prefix as a case variant', () => {
    expect(parseAddress('0X5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED', '/x')).toBe(
      '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed',
    );
  });
});

describe('the checksum forms kept (ADDRESS_CACHE_ENTRIES)', () => {
  it('keeps as many as set, the least recently formatted out first, and the same forms', () => {
    const most = 100;
    keepAddresses(most);
    try {
      const addresses = Array.from({ length: most + 50 }, (_, n) => `0x${n.toString(16).padStart(40, '0')}`);
      const first = formatAddress(addresses[0]);
      for (const address of addresses.slice(1)) formatAddress(address);
      expect(addressesKept()).toBe(most);
      expect(formatAddress(addresses[0])).toBe(first);
    } finally {
      keepAddresses(10_000);
    }
  });
});
