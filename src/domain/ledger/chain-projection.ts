// The ledger plan of confirmed on-chain transfers (issue 20): a change applied as seen (no guards),
// built here from what the chain indexer confirmed, applied by the ledger store like every other
// write (src/chain/projection.ts calls it), so holdings, supply, owners, transfer history, outbox
// events, /ws, /assets/subscribe and cache invalidation work for on-chain tokens unchanged.
// Also the plans of the advisory `chainTransferPending` and `chainTransferRemoved` events (events
// only: no ledger row changes before confirmation), applied by src/chain/announce.ts.
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import type { StoredAddress } from './addresses.ts';
import { formatAddress, ZERO_ADDRESS } from './addresses.ts';
import { formatAmount } from './amounts.ts';
import { chainAssetId, hashId26 } from './chain-assets.ts';
import { newNftEvent, newTransferEvent } from './outbox.ts';
import type { EventData, IdempotencyKey, NewAsset, NewEvent, NewTransfer, Plan } from './store/plan.ts';
import { assetView, transferView } from './views.ts';

export type ChainStandardName = 'erc20' | 'erc721' | 'erc1155';

/** A registered contract, as the projection needs it. */
export interface ChainTokenContract {
  chainId: number;
  /** EIP-55. */
  address: string;
  standard: ChainStandardName;
  collectionId: string;
  creatorId: string;
  name: string | null;
  symbol: string | null;
  decimals: number | null;
}

/** One confirmed movement (a row of chain_transfer), in block, log, batch order. */
export interface ChainMovement {
  blockNumber: number;
  txHash: string;
  logIndex: number;
  batchIndex: number;
  /** Decimal token id; empty for ERC-20. */
  tokenId: string;
  from: StoredAddress;
  to: StoredAddress;
  amount: bigint;
}

/** The CAIP-19 id of a contract's token (`tokenId` empty for an ERC-20). */
export function caip19Of(
  contract: Pick<ChainTokenContract, 'chainId' | 'address' | 'standard'>,
  tokenId: string,
) {
  const namespace = `eip155:${contract.chainId}/${contract.standard}:${contract.address}`;
  return tokenId === '' ? namespace : `${namespace}/${tokenId}`;
}

const SYMBOL = /^[A-Z0-9]{1,12}$/;

/** Decimals of a contract's ledger amounts: an ERC-20's own (at most 18), 0 for token ids. */
export function chainDecimals(contract: Pick<ChainTokenContract, 'standard' | 'decimals'>): number {
  return contract.standard === 'erc20' ? Math.min(contract.decimals ?? 0, 18) : 0;
}

/** The ledger asset of a contract's token, as first created (metadata filled later by the fetcher). */
export function chainAsset(
  contract: ChainTokenContract,
  tokenId: string,
  options: { image: string; owner: StoredAddress | null; at: Date; fetched?: Record<string, unknown> | null },
): NewAsset & { caip19: string } {
  const caip19 = caip19Of(contract, tokenId);
  const label = contract.name?.trim() || contract.symbol?.trim() || contract.address;
  const nft = contract.standard === 'erc721';
  // What the metadata fetcher read (src/chain/metadata.ts), when it was done before this creation.
  const fetched = options.fetched ?? {};
  const text = (value: unknown) => (typeof value === 'string' && value ? value : null);
  return {
    id: chainAssetId(caip19),
    caip19,
    kind: nft ? 'nft' : 'fungible',
    name: text(fetched.name) ?? (tokenId === '' ? label : `${label.slice(0, 120)} #${tokenId}`).slice(0, 200),
    description: text(fetched.description),
    metadata: {
      image: text(fetched.image) ?? options.image,
      attributes: Array.isArray(fetched.attributes) ? fetched.attributes : [],
      creator: label.slice(0, 200),
    },
    collectionId: contract.collectionId,
    creatorId: contract.creatorId,
    symbol: !nft && contract.symbol && SYMBOL.test(contract.symbol) ? contract.symbol : null,
    decimals: nft ? null : chainDecimals(contract),
    totalSupply: nft ? null : 0n,
    maxSupply: null,
    owner: nft ? (options.owner ?? ZERO_ADDRESS) : null,
    createdAt: options.at,
  };
}

/** The deterministic ledger transfer id of a chain movement (`tr_` + 26 characters of a hash). */
export function chainTransferId(contract: ChainTokenContract, movement: ChainMovement): string {
  return `tr_${hashId26(`${contract.chainId}:${contract.address}:${movement.txHash}:${movement.logIndex}:${movement.batchIndex}`)}`;
}

export interface ProjectionInput {
  contract: ChainTokenContract;
  movements: ChainMovement[];
  /** Asset ids of the contract's tokens already in the ledger. */
  existingAssets: ReadonlySet<string>;
  /** Metadata the fetcher read, by asset id (used when the asset is created). */
  fetched?: ReadonlyMap<string, Record<string, unknown>>;
  /**
   * Ledger balances of the (assetId, address) keys this batch changes (balanceKey; absent: 0): a
   * debit is clamped at zero (history before fromBlock), a credit bounded by 2^256 - 1.
   */
  balances: ReadonlyMap<string, bigint>;
  /** Ledger total supplies of the batch's fungible assets that exist (absent: 0), bounded likewise. */
  supplies?: ReadonlyMap<string, bigint>;
  /** The idempotency record of this batch: its id names the contract and the cursor it starts at. */
  key: IdempotencyKey;
  /** The last block of the batch (the cursor after it), stored as the record's answer. */
  upTo: number;
  image: string;
  at: Date;
}

export const balanceKey = (assetId: string, wallet: string) => `${assetId}\u0000${wallet}`;

/**
 * A sum of a contract's on-chain amounts (a holding or a token's supply) past 2^256 - 1, the most the
 * ledger holds: the contract's logs are not those of a token the ledger can follow (fake `Transfer`
 * logs, or a token whose supply is not bounded on chain, such as an ERC-1155 minting 2^256 - 1 of an
 * id twice). A data error of that contract: it is suspended, the others go on (security issue 30.1).
 */
export class ChainAmountOverflow extends RangeError {
  override name = 'ChainAmountOverflow';
}

/** `current + delta`, or ChainAmountOverflow when past 2^256 - 1 or below 0 (`what` says which sum). */
export function boundedSum(current: bigint, delta: bigint, what: string): bigint {
  const sum = current + delta;
  if (sum > UINT256_MAX || sum < 0n) {
    const bound = sum < 0n ? 'go below 0' : 'pass 2^256 - 1';
    throw new ChainAmountOverflow(`${what} would ${bound} (${current} + ${delta})`);
  }
  return sum;
}

/**
 * Net balance deltas per (asset, address) of the movements (the zero address holds nothing: mints
 * come from and burns go to it). Used to find the holdings to read before building the plan.
 */
export function netDeltas(contract: ChainTokenContract, movements: ChainMovement[]): Map<string, bigint> {
  const deltas = new Map<string, bigint>();
  const add = (assetId: string, wallet: string, delta: bigint) => {
    if (wallet === ZERO_ADDRESS) return;
    const key = balanceKey(assetId, wallet);
    deltas.set(key, (deltas.get(key) ?? 0n) + delta);
  };
  for (const m of movements) {
    const assetId = chainAssetId(caip19Of(contract, m.tokenId));
    add(assetId, m.from, -m.amount);
    add(assetId, m.to, m.amount);
  }
  return deltas;
}

/**
 * The plan of one batch of a contract's confirmed movements: new assets (ERC-721 and ERC-1155 tokens
 * on their first movement; an ERC-20's at registration or here if missing), net balance deltas of
 * every address (linked or not: a holding needs no wallet row), supply deltas of fungible tokens
 * (mints from, burns to the zero address), ERC-721 owners, one completed ledger transfer and one
 * `newTransfer` event per movement, and a `newNFT` event per new ERC-721 token. No guards: the chain
 * decided. A balance the chain's history before `fromBlock` would take below zero is clamped at zero;
 * a balance or a supply past 2^256 - 1 throws ChainAmountOverflow (the contract's data error).
 */
export function projectionPlan(input: ProjectionInput): { plan: Plan; clamped: number } {
  const { contract, movements, at } = input;
  const nft = contract.standard === 'erc721';
  const decimals = chainDecimals(contract);
  const assets = new Map<string, NewAsset & { caip19: string }>();
  const owners = new Map<string, StoredAddress>();
  const supplies = new Map<string, bigint>();
  const transfers: NewTransfer[] = [];
  const events: NewEvent[] = [];
  /** New ERC-721 tokens and their first owner (the `to` of their first movement: the mint's). */
  const newNfts = new Map<string, StoredAddress>();
  for (const m of movements) {
    const caip19 = caip19Of(contract, m.tokenId);
    const assetId = chainAssetId(caip19);
    if (!input.existingAssets.has(assetId) && !assets.has(assetId)) {
      const fetched = input.fetched?.get(assetId) ?? null;
      assets.set(assetId, chainAsset(contract, m.tokenId, { image: input.image, owner: null, at, fetched }));
      if (nft) newNfts.set(assetId, m.to);
    }
    if (nft) owners.set(assetId, m.to);
    else if (m.from === ZERO_ADDRESS || m.to === ZERO_ADDRESS) {
      const delta = m.from === ZERO_ADDRESS ? m.amount : -m.amount;
      if (m.from !== m.to) supplies.set(assetId, (supplies.get(assetId) ?? 0n) + delta);
    }
    const id = chainTransferId(contract, m);
    transfers.push({
      id,
      assetId,
      from: m.from,
      to: m.to,
      amount: m.amount,
      requestedBy: null,
      createdAt: at,
    });
    const view = transferView(
      {
        id,
        asset: { id: assetId },
        fromAddress: m.from,
        toAddress: m.to,
        amount: m.amount,
        status: 'completed',
        failureReason: null,
        createdAt: at,
        completedAt: at,
      },
      decimals,
    );
    events.push(newTransferEvent(view, contract.collectionId, at));
  }
  // New NFTs' rows carry their owner after the batch (the zero address if burned in it); their
  // `newNFT`, announced before their transfers, the asset as minted (owned by its first owner), as
  // when the batch ends after the mint: the events do not depend on how many blocks a batch covers.
  for (const [assetId, owner] of owners) {
    const created = assets.get(assetId);
    if (created) created.owner = owner;
  }
  const nftEvents = [...newNfts].map(([assetId, firstOwner]) => {
    const asset = assets.get(assetId) as NewAsset & { caip19: string };
    return newNftEvent(
      assetView({ ...asset, owner: firstOwner, collection: { id: asset.collectionId } }),
      at,
    );
  });
  let clamped = 0;
  const balances = [];
  for (const [key, delta] of netDeltas(contract, movements)) {
    if (delta === 0n) continue;
    const [assetId, wallet] = key.split('\u0000') as [string, StoredAddress];
    const held = input.balances.get(key) ?? 0n;
    let applied = delta;
    if (delta < 0n && held + delta < 0n) {
      clamped += 1;
      applied = -held;
    }
    boundedSum(held, applied, `the balance of ${assetId} held by ${formatAddress(wallet)}`);
    if (applied !== 0n) balances.push({ assetId, wallet, delta: applied });
  }
  for (const [assetId, delta] of supplies) {
    boundedSum(input.supplies?.get(assetId) ?? 0n, delta, `the supply of ${assetId}`);
  }
  const plan: Plan = {
    at,
    idempotency: {
      key: input.key,
      response: { status: 200, body: { upTo: input.upTo }, headers: {} },
    },
    guards: [],
    assets: [...assets.values()].map(({ caip19: _, ...asset }) => asset),
    balances,
    supplies: [...supplies].filter(([, d]) => d !== 0n).map(([assetId, delta]) => ({ assetId, delta })),
    owners: [...owners].map(([assetId, owner]) => ({ assetId, owner })),
    transfers,
    events: [...nftEvents, ...events],
  };
  return { plan, clamped };
}

/** A movement as seen in a block not confirmed yet (or dropped from it): the block's hash too. */
export interface ChainSighting extends ChainMovement {
  blockHash: string;
}

type ChainTransferRef = Omit<EventData<'chainTransferPending'>, 'confirmations' | 'confirmationsRequired'>;

function chainTransferRef(contract: ChainTokenContract, m: ChainSighting): ChainTransferRef {
  const caip19 = caip19Of(contract, m.tokenId);
  return {
    transferId: chainTransferId(contract, m),
    assetId: chainAssetId(caip19),
    collection: contract.collectionId,
    chainId: contract.chainId,
    standard: contract.standard,
    contract: contract.address,
    tokenId: m.tokenId === '' ? null : m.tokenId,
    caip19,
    from: formatAddress(m.from),
    to: formatAddress(m.to),
    amount: formatAmount(m.amount, chainDecimals(contract)),
    blockNumber: m.blockNumber,
    blockHash: m.blockHash,
    txHash: m.txHash,
    logIndex: m.logIndex,
    batchIndex: m.batchIndex,
  };
}

/** The outbox row of an advisory chain event: concerns its `from` and `to`, its asset and collection. */
function chainEvent<Type extends 'chainTransferPending' | 'chainTransferRemoved'>(
  type: Type,
  data: EventData<Type>,
  m: ChainSighting,
  at: Date,
): NewEvent {
  const row = {
    type,
    occurredAt: at,
    data,
    assetId: data.assetId,
    collectionId: data.collection,
    wallets: [m.from, m.to],
    fromWallet: m.from,
    toWallet: m.to,
  };
  return row as Extract<NewEvent, { type: Type }>;
}

/** An events-only plan (no guards, no row changes) under an idempotency record that answers `body`. */
function eventsPlan(key: IdempotencyKey, events: NewEvent[], at: Date, body: unknown): Plan {
  return { at, idempotency: { key, response: { status: 200, body, headers: {} } }, guards: [], events };
}

/**
 * The plan of `chainTransferPending` events for movements of one contract seen in one block, `head`
 * being the chain's head when they were read and `confirmations` the chain's. Events only: the
 * ledger moves with the `newTransfer` of the same transfer id, at confirmation.
 */
export function pendingEventsPlan(input: {
  contract: ChainTokenContract;
  movements: ChainSighting[];
  head: number;
  confirmations: number;
  key: IdempotencyKey;
  at: Date;
}): Plan {
  const events = input.movements.map((m) =>
    chainEvent(
      'chainTransferPending',
      {
        ...chainTransferRef(input.contract, m),
        confirmations: Math.max(0, input.head - m.blockNumber),
        confirmationsRequired: input.confirmations,
      },
      m,
      input.at,
    ),
  );
  return eventsPlan(input.key, events, input.at, { pending: events.length });
}

/** The plan of `chainTransferRemoved` events for announced movements a reorg above `forkBlock` dropped. */
export function removedEventsPlan(input: {
  contract: ChainTokenContract;
  movements: (ChainSighting & { forkBlock: number })[];
  key: IdempotencyKey;
  at: Date;
}): Plan {
  const events = input.movements.map((m) =>
    chainEvent(
      'chainTransferRemoved',
      { ...chainTransferRef(input.contract, m), reason: 'reorg', forkBlock: m.forkBlock },
      m,
      input.at,
    ),
  );
  return eventsPlan(input.key, events, input.at, { removed: events.length });
}
