// Registration of a studio's token contracts: the caller must own the collection (or be an admin),
// the address is EIP-55 checked, the chain must be configured, the caller must control the contract
// (its `owner()` or DEFAULT_ADMIN_ROLE is one of their wallets, src/chain/control.ts; admins are
// exempt), the standard is verified with ERC-165 where the contract supports it, ERC-20
// decimals/symbol/name are read, and `fromBlock` must not be after the deployment (the holdings are
// sums of every transfer since); one before it is raised to the deployment block
// (src/chain/from-block.ts).

import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Address } from 'viem';
import { getAddress, parseAbi } from 'viem/utils';
import type { ChainStandard } from '../db/entities/ChainContract.ts';
import { ChainContract, Collection } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { auditDraft, flushAudited } from '../domain/audit.ts';
import { assertCollectionPowers } from '../domain/authorization.ts';
import {
  AppError,
  ChainUnavailableError,
  ConflictError,
  NotFoundError,
  UnprocessableError,
  ValidationError,
} from '../domain/errors.ts';
import type { Actor } from '../domain/ledger/actor.ts';
import { parseAddress } from '../domain/ledger/addresses.ts';
import type { LedgerDatabase } from '../domain/ledger/store/index.ts';
import { assertControlsContract } from './control.ts';
import { startBlock } from './from-block.ts';
import { createErc20Asset } from './projection.ts';
import { type ChainRpc, callView, isRangeTooLarge, isTimeout } from './rpc.ts';

const ERC165 = parseAbi(['function supportsInterface(bytes4 interfaceId) view returns (bool)']);
const ERC20_META = parseAbi([
  'function decimals() view returns (uint8)',
  'function symbol() view returns (string)',
  'function name() view returns (string)',
]);
const INTERFACE_IDS = {
  erc165: '0x01ffc9a7',
  erc721: '0x80ac58cd',
  erc1155: '0xd9b67a26',
  invalid: '0xffffffff',
} as const;

export interface RegisterContractInput {
  collectionId: string;
  chainId: number;
  address: string;
  standard: ChainStandard;
  fromBlock: number;
}

export interface RegisteredContract {
  chainId: number;
  /** EIP-55. */
  address: Address;
  standard: ChainStandard;
  collection: string;
  fromBlock: number;
  name: string | null;
  symbol: string | null;
  decimals: number | null;
  /** CAIP-19 asset namespace of the contract, e.g. `eip155:1/erc721:0x…`. */
  caip19: string;
  createdAt: string;
  /** `active`, or `suspended` (not indexed) with why and since when (security issue 30.1). */
  status: 'active' | 'suspended';
  suspendedReason: string | null;
  suspendedAt: string | null;
}

export function contractView(contract: ChainContract): RegisteredContract {
  const address = getAddress(contract.address);
  return {
    chainId: contract.chainId,
    address,
    standard: contract.standard,
    collection: contract.collection.id,
    fromBlock: contract.fromBlock,
    name: contract.name ?? null,
    symbol: contract.symbol ?? null,
    decimals: contract.decimals ?? null,
    caip19: `eip155:${contract.chainId}/${contract.standard}:${address}`,
    createdAt: contract.createdAt.toISOString(),
    status: contract.status === 'suspended' ? 'suspended' : 'active',
    suspendedReason: contract.suspendedReason ?? null,
    suspendedAt: contract.suspendedAt?.toISOString() ?? null,
  };
}

class ChainProblem extends UnprocessableError {}

/** ERC-165 as the standard says: supportsInterface(0x01ffc9a7) true and supportsInterface(0xffffffff) false. */
async function supportsErc165(rpc: ChainRpc, address: Address): Promise<boolean> {
  const yes = await callView<boolean>(rpc, address, ERC165, 'supportsInterface', [INTERFACE_IDS.erc165]);
  const no = await callView<boolean>(rpc, address, ERC165, 'supportsInterface', [INTERFACE_IDS.invalid]);
  return yes === true && no === false;
}

export async function registerContract(
  database: LedgerDatabase,
  rpcs: ReadonlyMap<number, ChainRpc>,
  actor: Actor,
  input: RegisterContractInput,
  tokenImage = 'https://localhost/explorer/chain-token.svg',
): Promise<RegisteredContract> {
  const em = database.orm.em.fork();
  const collection = await em.findOne(Collection, { id: input.collectionId });
  if (!collection) throw new NotFoundError(`No collection with id ${input.collectionId}.`);
  assertCollectionPowers(
    actor,
    { id: collection.id, ownerId: collection.owner.id },
    'register its contracts',
  );
  const stored = parseAddress(input.address, '/body/address');
  const rpc = rpcs.get(input.chainId);
  if (!rpc) {
    throw new ValidationError(
      `Chain ${input.chainId} is not configured on this service.`,
      [{ pointer: '/body/chainId', detail: `configured chains: ${[...rpcs.keys()].join(', ') || 'none'}` }],
      '/problems/chain-not-configured',
    );
  }
  try {
    return await registerOnChain(database, rpc, actor, input, collection, stored, tokenImage);
  } catch (error) {
    if (error instanceof AppError) throw error;
    if (isTimeout(error) || isRangeTooLarge(error) || isRpcFailure(error))
      throw new ChainUnavailableError(input.chainId);
    throw error;
  }
}

/** A transport or JSON-RPC failure reported by viem (the node is away or refused the call). */
function isRpcFailure(error: unknown): boolean {
  const name = (error as Error)?.name ?? '';
  return /HttpRequestError|RpcRequestError|WebSocketRequestError|SocketClosedError|RpcError|TimeoutError/.test(
    name,
  );
}

async function registerOnChain(
  database: LedgerDatabase,
  rpc: ChainRpc,
  actor: Actor,
  input: RegisterContractInput,
  collection: Collection,
  stored: string,
  tokenImage: string,
): Promise<RegisteredContract> {
  const { orm } = database;
  const em = orm.em.fork();
  const address = getAddress(stored);
  const head = await rpc.blockNumber();
  if (BigInt(input.fromBlock) > head) {
    throw new ValidationError(`fromBlock ${input.fromBlock} is after the chain's head ${head}.`, [
      { pointer: '/body/fromBlock', detail: `must be at most ${head}` },
    ]);
  }
  const code = await rpc.code(address);
  if (code === '0x') {
    throw new ChainProblem(
      `${address} has no contract code on chain ${input.chainId}.`,
      '/problems/contract-not-found',
    );
  }
  await assertControlsContract(orm, rpc, actor, address, input.chainId);
  // At the deployment block (a binary search on eth_getCode), within the backfill bound (30.4).
  const fromBlock = await startBlock(rpc, actor, address, input.fromBlock, head);
  const erc165 = await supportsErc165(rpc, address);
  const is721 =
    erc165 &&
    (await callView<boolean>(rpc, address, ERC165, 'supportsInterface', [INTERFACE_IDS.erc721])) === true;
  const is1155 =
    erc165 &&
    (await callView<boolean>(rpc, address, ERC165, 'supportsInterface', [INTERFACE_IDS.erc1155])) === true;
  const mismatch = (detected: string) =>
    new ChainProblem(
      `${address} does not implement ${input.standard.toUpperCase()} (${detected}).`,
      '/problems/contract-standard-mismatch',
    );
  let name: string | null = null;
  let symbol: string | null = null;
  let decimals: number | null = null;
  if (input.standard === 'erc721' && !is721)
    throw mismatch(erc165 ? 'ERC-165 does not report 0x80ac58cd' : 'no ERC-165');
  if (input.standard === 'erc1155' && !is1155)
    throw mismatch(erc165 ? 'ERC-165 does not report 0xd9b67a26' : 'no ERC-165');
  if (input.standard === 'erc20') {
    if (is721 || is1155) throw mismatch(`ERC-165 reports ${is721 ? 'ERC-721' : 'ERC-1155'}`);
    decimals = (await callView<number>(rpc, address, ERC20_META, 'decimals')) ?? null;
    if (decimals === null) throw mismatch('decimals() does not answer');
    symbol = (await callView<string>(rpc, address, ERC20_META, 'symbol')) ?? null;
    name = (await callView<string>(rpc, address, ERC20_META, 'name')) ?? null;
  } else {
    name = (await callView<string>(rpc, address, ERC20_META, 'name')) ?? null;
    symbol = (await callView<string>(rpc, address, ERC20_META, 'symbol')) ?? null;
  }
  const contract = em.create(ChainContract, {
    chainId: input.chainId,
    address: stored,
    standard: input.standard,
    collection: em.getReference(Collection, collection.id),
    fromBlock,
    nextBlock: fromBlock,
    name: name?.slice(0, 200) ?? null,
    symbol: symbol?.slice(0, 32) ?? null,
    decimals,
    createdBy: actor.userId,
    createdAt: new Date(),
  });
  try {
    await flushAudited(em, () =>
      auditDraft(
        'chainContract.registered',
        {
          type: 'chainContract',
          id: `${contract.chainId}:${contract.address}`,
          ownerId: collection.owner.id,
          collectionId: collection.id,
        },
        { after: contractView(contract) },
      ),
    );
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) {
      throw new ConflictError(
        `${address} on chain ${input.chainId} is already registered.`,
        '/problems/contract-exists',
      );
    }
    throw error;
  }
  // An ERC-20 is one ledger asset, there from registration on (its supply and holdings follow).
  if (contract.standard === 'erc20') await createErc20Asset(database, contract, tokenImage);
  return contractView(contract);
}

export async function listContracts(orm: Orm, collectionId: string): Promise<RegisteredContract[]> {
  const em = orm.em.fork();
  if (!(await em.findOne(Collection, { id: collectionId })))
    throw new NotFoundError(`No collection with id ${collectionId}.`);
  const contracts = await em.find(
    ChainContract,
    { collection: collectionId, status: { $ne: 'unregistered' } },
    { orderBy: { id: 'asc' } },
  );
  return contracts.map(contractView);
}
