// Where a registered contract's indexing starts (security issue 30.4): at its deployment block, found
// by a binary search on `eth_getCode` (a `fromBlock` before it, such as 0, is raised to it: the
// blocks before hold none of its transfers), and a backfill deeper than CHAIN_MAX_BACKFILL_BLOCKS
// below the head is registered by an admin only.
import type { Address } from 'viem';
import { ForbiddenError, ValidationError } from '../domain/errors.ts';
import type { Actor } from '../domain/ledger/actor.ts';
import type { ChainRpc } from './rpc.ts';

/**
 * The first block at which `address` holds code, between 0 and `head` (where it does): about
 * log2(head) `eth_getCode` calls. Null when the node keeps no state that old (an archive-less node
 * refuses): then the deployment is unknown.
 */
export async function deploymentBlock(rpc: ChainRpc, address: Address, head: bigint): Promise<bigint | null> {
  let low = 0n; // the answer is at least `low`
  let high = head; // code at `high`
  try {
    while (low < high) {
      const middle = (low + high) / 2n;
      if ((await rpc.code(address, middle)) === '0x') low = middle + 1n;
      else high = middle;
    }
  } catch {
    return null;
  }
  return high;
}

/**
 * The block the contract's indexing starts at: `requested` raised to the deployment block. Throws
 * ValidationError when `requested` is after the deployment (holdings would miss its first
 * transfers), ForbiddenError when a non-admin asks for a backfill deeper than the bound.
 */
export async function startBlock(
  rpc: ChainRpc,
  actor: Actor,
  address: Address,
  requested: number,
  head: bigint,
): Promise<number> {
  const deployed = await deploymentBlock(rpc, address, head);
  if (deployed !== null && BigInt(requested) > deployed) {
    throw new ValidationError(
      `${address} was deployed in block ${deployed}: fromBlock must be at or before its deployment, or holdings would miss earlier transfers.`,
      [{ pointer: '/body/fromBlock', detail: `after the contract deployment (block ${deployed})` }],
    );
  }
  const from = deployed === null ? requested : Number(deployed);
  const depth = Number(head) - from;
  if (actor.role !== 'admin' && depth > rpc.maxBackfillBlocks) {
    throw new ForbiddenError(
      `Indexing ${address} from block ${from} means a backfill of ${depth} blocks, more than the ${rpc.maxBackfillBlocks} a studio may register: ask an admin to register it.`,
    );
  }
  return from;
}
