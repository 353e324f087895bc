// Proof of control at registration (finding 30.3): a studio registers only a contract it controls, so
// nobody can claim another studio's contract first. The contract must answer, through the chain's
// node at registration, one of the caller's wallets (linked with SIWE, or its custodial one):
//   - `owner()` (OpenZeppelin Ownable) returns that wallet, or
//   - `hasRole(DEFAULT_ADMIN_ROLE, wallet)` (OpenZeppelin AccessControl, as the 4.9.6 presets) is true.
// Otherwise 403 `/problems/contract-not-controlled`, nothing written. Admins register without proof
// (on behalf of a studio whose contract has neither function, e.g. a multisig or renounced owner) and
// may move a contract to another collection (src/chain/reassign.ts).
import type { Address, Hex } from 'viem';
import { getAddress, parseAbi } from 'viem/utils';
import { Wallet } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { ForbiddenError } from '../domain/errors.ts';
import type { Actor } from '../domain/ledger/actor.ts';
import { type ChainRpc, callView } from './rpc.ts';

const CONTROL_ABI = parseAbi([
  'function owner() view returns (address)',
  'function hasRole(bytes32 role, address account) view returns (bool)',
]);
/** AccessControl's DEFAULT_ADMIN_ROLE is bytes32(0). */
const DEFAULT_ADMIN_ROLE: Hex = `0x${'0'.repeat(64)}`;
/** The caller's wallets asked about, oldest first (each is one `hasRole` call). */
const MAX_WALLETS = 20;

class ContractNotControlledError extends ForbiddenError {
  constructor(address: Address, chainId: number) {
    super(
      `Neither owner() nor hasRole(DEFAULT_ADMIN_ROLE, …) of ${address} on chain ${chainId} answers a wallet of yours: ` +
        'link the wallet that owns or administers the contract (POST /api/v1/wallets/link), then register again.',
      '/problems/contract-not-controlled',
    );
  }
}

/** Whether `owner()` or `hasRole(DEFAULT_ADMIN_ROLE, w)` answers one of `wallets` (lowercase). */
async function controlledBy(rpc: ChainRpc, address: Address, wallets: string[]): Promise<boolean> {
  const owner = await callView<Address>(rpc, address, CONTROL_ABI, 'owner');
  if (owner && wallets.includes(owner.toLowerCase())) return true;
  for (const wallet of wallets) {
    const admin = await callView<boolean>(rpc, address, CONTROL_ABI, 'hasRole', [
      DEFAULT_ADMIN_ROLE,
      getAddress(wallet),
    ]);
    if (admin === true) return true;
  }
  return false;
}

/** Throws 403 `/problems/contract-not-controlled` unless the actor is an admin or controls `address`. */
export async function assertControlsContract(
  orm: Orm,
  rpc: ChainRpc,
  actor: Actor,
  address: Address,
  chainId: number,
): Promise<void> {
  if (actor.role === 'admin') return;
  const wallets = await orm.em
    .fork()
    .find(Wallet, { user: actor.userId }, { orderBy: { createdAt: 'asc' }, limit: MAX_WALLETS });
  const addresses = wallets.map((wallet) => wallet.address.toLowerCase());
  if (addresses.length === 0 || !(await controlledBy(rpc, address, addresses)))
    throw new ContractNotControlledError(address, chainId);
}
