// Which cached reads a committed change drops (src/events/change-keys.ts).
import { describe, expect, it } from 'vitest';
import { assetKey, holdersKey, keysOf, walletKey } from '../../../src/events/change-keys.ts';

const ZERO = '0x0000000000000000000000000000000000000000';
const ALICE = '0x00000000000000000000000000000000000a11ce';
const BOB = '0x0000000000000000000000000000000000000b0b';

describe('change keys of a newTransfer', () => {
  it('touch the two wallets and the holders of a plain transfer, not the asset', () => {
    const keys = keysOf([{ type: 'newTransfer', assetId: 'gold', wallets: [ALICE, BOB] }]);
    expect([...keys].sort()).toEqual([holdersKey('gold'), walletKey(ALICE), walletKey(BOB)].sort());
  });

  it('touch the asset of a mint: its totalSupply moved', () => {
    const keys = keysOf([{ type: 'newTransfer', assetId: 'gold', wallets: [ZERO, ALICE] }]);
    expect(keys).toContain(assetKey('gold'));
  });

  it('32.1: touch the asset of a burn too (a cached totalSupply stayed stale after an on-chain ERC-1155 burn)', () => {
    const keys = keysOf([{ type: 'newTransfer', assetId: 'items-7', wallets: [ALICE, ZERO] }]);
    expect([...keys].sort()).toEqual([assetKey('items-7'), holdersKey('items-7'), walletKey(ALICE)].sort());
  });
});
