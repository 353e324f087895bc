// EVM addresses: accepted in any valid case, stored lowercase, returned in EIP-55 checksum form.
// All-lower or all-upper hex needs no checksum; mixed case must carry the right EIP-55 checksum
// (the address's checksum form, cached), else the caller most likely mistyped a character.
import { LRUCache } from 'lru-cache';
import { getAddress } from 'viem/utils';
import { ValidationError } from '../errors.ts';

/** A lowercase `0x` + 40 hex address: the form the ledger stores and compares. */
export type StoredAddress = string & { readonly __stored: unique symbol };

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000' as StoredAddress;

const HEX_ADDRESS = /^0[xX][0-9a-fA-F]{40}$/;

export class InvalidAddressChecksumError extends ValidationError {
  constructor(input: string, pointer: string) {
    super(
      `${input} is mixed case but its EIP-55 checksum is wrong.`,
      [{ pointer, detail: 'EIP-55 checksum mismatch' }],
      '/problems/invalid-address-checksum',
    );
  }
}

/**
 * Parses an address given by a client. `pointer` names the field for the problem (`/body/to`).
 * The contract's pattern already guarantees `0x` + 40 hex digits; a `0X` prefix is a case variant.
 */
export function parseAddress(input: string, pointer: string): StoredAddress {
  if (!HEX_ADDRESS.test(input)) {
    throw new ValidationError(`${input} is not an address (0x followed by 40 hexadecimal digits).`, [
      { pointer, detail: 'must be 0x followed by 40 hexadecimal digits' },
    ]);
  }
  const candidate = `0x${input.slice(2)}`;
  if (!hasValidCase(candidate)) throw new InvalidAddressChecksumError(input, pointer);
  return candidate.toLowerCase() as StoredAddress;
}

/**
 * EIP-55: all-lowercase and all-uppercase hex carry no checksum (viem's isAddress accepts only the
 * former; the contract accepts both); mixed case must be exactly the checksum form.
 */
function hasValidCase(candidate: string): boolean {
  const hex = candidate.slice(2);
  const lower = hex.toLowerCase();
  if (hex === lower || hex === hex.toUpperCase()) return true;
  // Exactly the checksum form, computed once per address (see formatAddress's cache).
  return formatAddress(`0x${lower}`) === candidate;
}

/** Whether a string is an address in any valid case (used where a failure is not the caller's). */
export function isValidAddress(input: string): boolean {
  return HEX_ADDRESS.test(input) && hasValidCase(`0x${input.slice(2)}`);
}

// Checksumming hashes the address (keccak-256: viem's getAddress, ~23 µs); answers format the same
// addresses over and over. The least recently formatted go first, so the busy wallets stay when a
// sweep of many others passes. One cache for the process (formatting is a pure function).
let checksumCache = new LRUCache<string, string>({ max: 10_000 });

/**
 * Keeps the checksum form of up to `most` addresses (ADDRESS_CACHE_ENTRIES, set at start-up; about 200
 * bytes each): a listing of a wallet not among them hashes its address again.
 */
export function keepAddresses(most: number): void {
  if (checksumCache.max !== most) checksumCache = new LRUCache<string, string>({ max: most });
}

/** How many checksum forms are kept now. */
export function addressesKept(): number {
  return checksumCache.size;
}

/** EIP-55 form of a stored (lowercase) address. */
export function formatAddress(address: string): string {
  let formatted = checksumCache.get(address);
  if (formatted === undefined) {
    formatted = getAddress(address);
    checksumCache.set(address, formatted);
  }
  return formatted;
}
