// An opening's draw and the rows it writes (./loot-box-openings.ts): the rolls through the box's
// tables (gats-draw-v1, ./draw-algorithm.ts; pity replaces the first roll's entry), the outcome's
// mints and each minted currency's supply cap, and the plan's guards, events, seed nonce, pity
// counter and draw row.

import type { components } from '../../../generated/openapi/types.ts';
import { Asset } from '../../db/entities/Asset.ts';
import type { DrawSeed, LootBox } from '../../db/entities/LootBox.ts';
import { UINT256_MAX } from '../../db/types/uint256-range.ts';
import type { Actor } from './actor.ts';
import type { StoredAddress } from './addresses.ts';
import { formatAmount, parseAmount } from './amounts.ts';
import { pickEntry, uniformRoll } from './draw-algorithm.ts';
import type { Leg } from './legs.ts';
import { type LootBoxContext, totalOf } from './loot-box-context.ts';
import type { DropOutcome } from './loot-box-definitions.ts';
import { currencyMintParts, nftMintParts } from './mints.ts';
import type { BalanceChange, Guard, NewAsset, NewEvent, NewTransfer } from './store/plan.ts';
import type { AssetView, TransferView } from './views.ts';

type DrawView = components['schemas']['Draw'];

export interface OpenInput {
  wallet: StoredAddress;
  assetId: string;
  clientSeed: string;
  seedCommitment: string;
}

/** An opening checked and drawn: the box, the seed, the box's burn, the draw, the pity counts, the mints. */
export interface Opening {
  box: LootBox;
  seed: DrawSeed;
  leg: Leg;
  draw: DrawView;
  countAfter: number;
  countBefore: number;
  mints: Awaited<ReturnType<typeof mintsOf>>;
}

/** The outcome's mints to `wallet`, its granted lines and the supply guards (max per currency). */
export async function mintsOf(
  { orm, writer }: Pick<LootBoxContext, 'orm' | 'writer'>,
  actor: Actor,
  box: LootBox,
  outcome: DropOutcome,
  wallet: StoredAddress,
  at: Date,
) {
  const parts = {
    assets: [] as NewAsset[],
    balances: [] as BalanceChange[],
    transfers: [] as NewTransfer[],
    events: [] as NewEvent[],
    minted: [] as TransferView[],
    nfts: [] as AssetView[],
    granted: [] as { assetId: string; amount: string }[],
    caps: new Map<string, { delta: bigint; max: bigint; decimals: number }>(),
  };
  const items =
    outcome === null
      ? []
      : 'bundle' in outcome
        ? outcome.bundle
        : 'nft' in outcome || 'assetId' in outcome
          ? [outcome]
          : [];
  for (const item of items) {
    if ('nft' in item) {
      const nft = nftMintParts(item.nft, box.collectionId, box.createdBy, wallet, at);
      parts.assets.push(nft.asset);
      parts.balances.push(nft.balance);
      parts.events.push(nft.event);
      parts.nfts.push(nft.view);
      parts.granted.push({ assetId: nft.asset.id, amount: '1' });
      continue;
    }
    const currency = await writer.factsOf(item.assetId);
    const amount = parseAmount(item.amount, currency.decimals, { pointer: '/body', positive: true });
    const mint = currencyMintParts(
      { id: currency.id, collectionId: box.collectionId, decimals: currency.decimals },
      wallet,
      amount,
      actor.userId,
      at,
    );
    parts.balances.push(mint.balance);
    parts.transfers.push(mint.transfer);
    parts.events.push(mint.event);
    parts.minted.push(mint.view);
    parts.granted.push({ assetId: currency.id, amount: formatAmount(amount, currency.decimals) });
    const cap = parts.caps.get(currency.id);
    if (cap) cap.delta += amount;
    else {
      const row = await orm.em.fork().findOneOrFail(Asset, { id: currency.id }, { fields: ['maxSupply'] });
      parts.caps.set(currency.id, {
        delta: amount,
        max: (row.maxSupply as bigint | null | undefined) ?? UINT256_MAX,
        decimals: currency.decimals,
      });
    }
  }
  return parts;
}

/**
 * The draw: roll 0 in the box's table, then one roll per nested table; pity replaces the first
 * roll's entry (the roll is still published).
 */
export async function drawFrom(
  tableOf: LootBoxContext['tableOf'],
  box: LootBox,
  seed: DrawSeed,
  serverSeed: string,
  clientSeed: string,
  pityApplies: boolean,
) {
  const rolls: DrawView['rolls'] = [];
  let table = await tableOf(box.tableId);
  let topEntry = -1;
  let outcome: DropOutcome;
  for (;;) {
    const weights = table.entries.map((entry) => BigInt(entry.weight));
    const total = totalOf(table.entries);
    const { value, attempts } = uniformRoll(
      serverSeed,
      {
        clientSeed,
        nonce: seed.nextNonce,
        roll: rolls.length,
        tableId: table.id,
        tableHash: table.hash,
      },
      total,
    );
    const entry = pickEntry(weights, value);
    rolls.push({
      tableId: table.id,
      tableHash: table.hash,
      total: String(total),
      value: String(value),
      attempts,
      entry,
    });
    // Pity replaces the first roll's entry (the roll is still published).
    const given = rolls.length === 1 && pityApplies ? (box.pityEntry ?? 0) : entry;
    if (rolls.length === 1) topEntry = given;
    outcome = table.entries[given].outcome;
    if (outcome === null || !('table' in outcome)) break;
    table = await tableOf(outcome.table);
  }
  return { rolls, topEntry, outcome };
}

/**
 * The opening's rows besides the burn: the guards (the seed at its nonce, the pity counter as
 * read, each minted currency's supply), the mints, the events, the seed's next nonce, the pity
 * counter and the draw row.
 */
export function openingRows(prepared: Opening, input: OpenInput, at: Date, operationId: string) {
  const { box, seed, draw, countAfter, countBefore, mints } = prepared;
  const guards: Guard[] = [];
  const supplies: { assetId: string; delta: bigint }[] = [];
  for (const [assetId, { delta, max }] of mints.caps) {
    guards.push({ kind: 'supplyWithin', assetId, adding: delta, max });
    supplies.push({ assetId, delta });
  }
  const leading: Guard[] = [
    { kind: 'seedAt', seedId: seed.id, wallet: input.wallet, nonce: seed.nextNonce },
    ...(box.pityAfter != null
      ? [{ kind: 'pityAt' as const, boxId: box.id, wallet: input.wallet, count: countBefore }]
      : []),
  ];
  const events: NewEvent[] = [
    ...mints.events,
    {
      type: 'lootBoxOpened',
      occurredAt: at,
      data: draw,
      assetId: input.assetId,
      collectionId: box.collectionId,
      wallets: [input.wallet],
      fromWallet: input.wallet,
      toWallet: null,
    },
  ];
  return {
    leading,
    guards,
    assets: mints.assets,
    balances: mints.balances,
    supplies,
    transfers: mints.transfers,
    events,
    stores: {
      seedNonces: [{ seedId: seed.id, next: seed.nextNonce + 1 }],
      ...(box.pityAfter != null && {
        pityCounts: [{ boxId: box.id, wallet: input.wallet, count: countAfter }],
      }),
      draws: [
        {
          id: operationId,
          boxId: box.id,
          assetId: input.assetId,
          wallet: input.wallet,
          seedId: seed.id,
          nonce: seed.nextNonce,
          data: draw,
          createdAt: at,
        },
      ],
    },
  };
}
