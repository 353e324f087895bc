// The `newNFT` of an ERC-721 token new to the ledger is the asset as minted (owned by the mint's
// `to`), whatever else the same batch holds: a step of the indexer reads several ranges (d8da382),
// so a mint and its burn, or its next transfer, may be projected together. The burn left the token
// with no owner and building its `newNFT` threw a TypeError, failing the whole batch.
import { describe, expect, it } from 'vitest';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { formatAddress } from '../../../src/domain/ledger/addresses.ts';
import { chainAssetId } from '../../../src/domain/ledger/chain-assets.ts';
import {
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
  standard: 'erc721',
  collectionId: 'game',
  creatorId: 'usr_1',
  name: 'Swords',
  symbol: null,
  decimals: null,
};
const asset = chainAssetId(caip19Of(contract, '7'));
const move = (from: StoredAddress, to: StoredAddress, blockNumber: number): ChainMovement => ({
  blockNumber,
  txHash: `0x${String(blockNumber).repeat(64)}`,
  logIndex: 0,
  batchIndex: 0,
  tokenId: '7',
  from,
  to,
  amount: 1n,
});
const plan = (movements: ChainMovement[]) =>
  projectionPlan({
    contract,
    movements,
    existingAssets: new Set(),
    balances: new Map(),
    key: { id: 'k', requestHash: 'h', expiresAt: (now) => now },
    upTo: 9,
    image: 'https://localhost/x.svg',
    at: new Date(),
  }).plan;
const newNft = (events: ReturnType<typeof plan>['events']) => {
  const found = (events ?? []).filter((event) => event.type === 'newNFT');
  expect(found).toHaveLength(1);
  return found[0] as (typeof found)[0] & { data: { owner: string | null; burned: boolean } };
};

describe('newNFT of a chain token minted and moved in one projection batch', () => {
  it('announces a token minted and burned in one batch as minted to its first owner; its row is burned', () => {
    const { events, assets, owners } = plan([move(ZERO, A, 5), move(A, ZERO, 6)]);
    const event = newNft(events);
    expect(event.data.owner).toBe(formatAddress(A));
    expect(event.data.burned).toBe(false);
    expect(event).toMatchObject({ assetId: asset, wallets: [A], fromWallet: null, toWallet: A });
    expect(events?.map((e) => e.type)).toEqual(['newNFT', 'newTransfer', 'newTransfer']);
    expect(assets?.map((a) => [a.id, a.owner])).toEqual([[asset, ZERO]]);
    expect(owners).toEqual([{ assetId: asset, owner: ZERO }]);
  });

  it('announces a token minted and transferred in one batch as minted (to A), owned by B after it', () => {
    const { events, assets } = plan([move(ZERO, A, 5), move(A, B, 6)]);
    expect(newNft(events)).toMatchObject({ data: { owner: formatAddress(A) }, wallets: [A], toWallet: A });
    expect(assets?.map((a) => a.owner)).toEqual([B]);
  });

  it('announces a token first seen burned (minted before the indexed history) with no owner', () => {
    const { events, assets } = plan([move(A, ZERO, 6)]);
    expect(newNft(events)).toMatchObject({
      data: { owner: null, burned: true },
      wallets: [],
      toWallet: null,
    });
    expect(assets?.map((a) => a.owner)).toEqual([ZERO]);
  });
});
