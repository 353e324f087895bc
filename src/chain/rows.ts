// The chain tables' rows as the domain's plans take them (src/domain/ledger/chain-projection.ts).
import { getAddress } from 'viem/utils';
import type { ChainContract } from '../db/entities/index.ts';
import type { StoredAddress } from '../domain/ledger/addresses.ts';
import type { ChainSighting, ChainTokenContract } from '../domain/ledger/chain-projection.ts';

/** A registered contract as the domain's plans need it. */
export function tokenContract(contract: ChainContract): ChainTokenContract {
  return {
    chainId: contract.chainId,
    address: getAddress(contract.address),
    standard: contract.standard,
    collectionId: contract.collection.id,
    creatorId: contract.createdBy,
    name: contract.name ?? null,
    symbol: contract.symbol ?? null,
    decimals: contract.decimals ?? null,
  };
}

/** The columns of a movement, in chain_transfer and chain_transfer_removal alike. */
export interface MovementRow {
  blockNumber: number;
  blockHash: string;
  txHash: string;
  logIndex: number;
  batchIndex: number;
  tokenId: string;
  from: string;
  to: string;
  amount: bigint | unknown;
}

/** A row's movement, with the hash of the block it was read in. */
export function movementOf(row: MovementRow): ChainSighting {
  return {
    blockNumber: row.blockNumber,
    blockHash: row.blockHash,
    txHash: row.txHash,
    logIndex: row.logIndex,
    batchIndex: row.batchIndex,
    tokenId: row.tokenId,
    from: row.from as StoredAddress,
    to: row.to as StoredAddress,
    amount: row.amount as bigint,
  };
}
