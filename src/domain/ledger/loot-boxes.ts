// Loot boxes and verifiable draws (issue 36). A studio defines drop tables (weighted outcomes,
// nested tables allowed, immutable, odds published as exact fractions) and loot boxes (every NFT of
// a collection and name opens by a draw from a table, optionally with pity). Opening a box is ONE
// ledger plan through the one ledger store:
//   guards: the wallet's draw seed still active at the nonce the draw used (`seedAt`, which locks the
//           seed: a wallet's openings take its nonces one at a time), the wallet's pity counter as
//           read (`pityAt`), the box held by the wallet and burnable (the leg writer's guards), each
//           minted currency within its max supply;
//   rows:   the box burned, the outcome minted, the seed's next nonce, the pity counter, the draw
//           row, the events (`newTransfer`, `newNFT`s, `lootBoxOpened`), one `op_` id, one
//           idempotency record.
// The draw follows from published inputs only (./draw-algorithm.ts, gats-draw-v1): the server seed
// (committed to before, revealed by its wallet after), the player's client seed, the nonce, the
// tables' ids and hashes. A refused plan draws nothing and uses no nonce; a retry with the same
// Idempotency-Key answers the same draw.
//
// This file is the service as one, joining its parts, each one job: ./loot-box-context.ts what they
// share, ./loot-box-definitions.ts drop tables and loot boxes, ./draw-seeds.ts the draw seeds,
// ./loot-box-openings.ts an opening, ./loot-box-opening-parts.ts its draw and rows.

import type { SecretBox } from '../../crypto/secret-box.ts';
import type { Database } from '../../db/database.ts';
import { createDrawSeedMethods, type DrawSeedMethods } from './draw-seeds.ts';
import type { Idempotency } from './idempotency.ts';
import type { LegWriter } from './leg-writer.ts';
import { createLootBoxContext } from './loot-box-context.ts';
import { createLootBoxDefinitionMethods, type LootBoxDefinitionMethods } from './loot-box-definitions.ts';
import { createLootBoxOpeningMethods, type LootBoxOpeningMethods } from './loot-box-openings.ts';

export interface LootBoxService extends LootBoxDefinitionMethods, DrawSeedMethods, LootBoxOpeningMethods {}

export function createLootBoxService(
  database: Database,
  idempotency: Idempotency,
  writer: LegWriter,
  secretBox: SecretBox,
): LootBoxService {
  const context = createLootBoxContext(database, idempotency, writer, secretBox);
  return {
    ...createLootBoxDefinitionMethods(context),
    ...createDrawSeedMethods(context),
    ...createLootBoxOpeningMethods(context),
  };
}
