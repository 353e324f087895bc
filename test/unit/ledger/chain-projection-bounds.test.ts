// Security issue 30.1: the ledger plan of a contract's confirmed on-chain movements bounds every sum
// (a holding, a token's supply) by 2^256 - 1, so a contract whose logs pass it fails with
// ChainAmountOverflow (a data error of that contract: the indexer suspends it) instead of a column
// type's RangeError deep in the write.
import { describe, expect, it } from 'vitest';
import { UINT256_MAX } from '../../../src/db/types/uint256-range.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { chainAssetId } from '../../../src/domain/ledger/chain-assets.ts';
import {
  balanceKey,
  boundedSum,
  ChainAmountOverflow,
  type ChainMovement,
  type ChainTokenContract,
  caip19Of,
  projectionPlan,
} from '../../../src/domain/ledger/chain-projection.ts';

const ZERO = `0x${'0'.repeat(40)}` as StoredAddress;
const A = `0x${'a'.repeat(40)}` as StoredAddress;
const B = `0x${'b'.repeat(40)}` as StoredAddress;
const contract: ChainTokenContract = {
  chainId: 31337,
  address: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  standard: 'erc1155',
  collectionId: 'game',
  creatorId: 'usr_1',
  name: null,
  symbol: null,
  decimals: null,
};
const asset = chainAssetId(caip19Of(contract, '1'));
const mint = (to: StoredAddress, amount: bigint, logIndex: number): ChainMovement => ({
  blockNumber: 5,
  txHash: `0x${String(logIndex).repeat(64)}`,
  logIndex,
  batchIndex: 0,
  tokenId: '1',
  from: ZERO,
  to,
  amount,
});
const plan = (movements: ChainMovement[], balances = new Map<string, bigint>(), supplies = new Map()) =>
  projectionPlan({
    contract,
    movements,
    existingAssets: new Set(supplies.size > 0 ? [asset] : []),
    balances,
    supplies,
    key: { id: 'k', requestHash: 'h', expiresAt: (now) => now },
    upTo: 5,
    image: 'https://localhost/x.svg',
    at: new Date(),
  });

describe('30.1: sums of on-chain amounts are bounded by 2^256 - 1', () => {
  it('throws ChainAmountOverflow past 2^256 - 1 or below 0, and answers the sum otherwise', () => {
    expect(boundedSum(UINT256_MAX - 1n, 1n, 'x')).toBe(UINT256_MAX);
    expect(() => boundedSum(UINT256_MAX, 1n, 'the supply')).toThrow(ChainAmountOverflow);
    expect(() => boundedSum(0n, -1n, 'the supply')).toThrow(/go below 0/);
  });

  it("refuses a batch whose token supply passes 2^256 - 1 (an ERC-1155 preset's two mints)", () => {
    expect(() => plan([mint(A, UINT256_MAX, 0), mint(B, UINT256_MAX, 1)])).toThrow(
      /the supply of chn_\w+ would pass 2\^256 - 1/,
    );
    // Against the supply already in the ledger too.
    expect(() => plan([mint(B, 1n, 1)], new Map(), new Map([[asset, UINT256_MAX]]))).toThrow(
      ChainAmountOverflow,
    );
    expect(plan([mint(A, UINT256_MAX, 0)]).plan.supplies).toEqual([{ assetId: asset, delta: UINT256_MAX }]);
  });

  it('refuses a batch whose holding passes 2^256 - 1, counting the balance already held', () => {
    const held = new Map([[balanceKey(asset, A), UINT256_MAX]]);
    expect(() => plan([mint(A, 1n, 0)], held, new Map([[asset, 0n]]))).toThrow(
      /the balance of chn_\w+ held by 0xaaaa/i,
    );
  });
});
