// Verifies a loot box draw from the API's answers alone (issue 36): the library of
// scripts/verify-draw.ts (`npm run verify-draw`), also run by the loot box tests. It recomputes the
// outcome with the published algorithm gats-draw-v1 (src/domain/ledger/draw-algorithm.ts, stated in
// docs/architecture/stores-and-rewards.md) from the revealed server seed, the player's client seed,
// the nonce and the tables, and checks every step the service published.
import {
  DRAW_ALGORITHM,
  pickEntry,
  seedCommitment,
  tableHashOf,
  uniformRoll,
} from '../../src/domain/ledger/draw-algorithm.ts';

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON answers, checked field by field below
type Json = any;

/** Every mismatch between the draw and its recomputation (empty: verified). */
export async function verifyDraw(get: (path: string) => Promise<Json>, drawId: string): Promise<string[]> {
  const problems: string[] = [];
  const draw = await get(`/api/v1/draws/${drawId}`);
  if (draw.algorithm !== DRAW_ALGORITHM) return [`unknown algorithm ${draw.algorithm}`];
  const seed = await get(`/api/v1/draw-seeds/${draw.seed}`);
  if (!seed.serverSeed) return [`the seed ${draw.seed} is not revealed yet`];
  if (seedCommitment(seed.serverSeed) !== draw.commitment || seed.commitment !== draw.commitment)
    problems.push('the revealed seed does not hash to the commitment the draw was made under');
  if (seed.wallet.toLowerCase() !== draw.wallet.toLowerCase()) problems.push("the seed is not the wallet's");
  const box = await get(`/api/v1/loot-boxes/${draw.box}`);
  let expectedTable: string | null = box.table;
  let outcome: Json;
  for (const [roll, published] of (draw.rolls as Json[]).entries()) {
    if (published.tableId !== expectedTable) {
      problems.push(
        `roll ${roll}: rolled in ${published.tableId}, the outcome before names ${expectedTable}`,
      );
      break;
    }
    const table = await get(`/api/v1/drop-tables/${published.tableId}`);
    const entries = table.entries.map((e: Json) => ({ weight: e.weight, outcome: e.outcome }));
    const hash = tableHashOf(entries);
    if (hash !== published.tableHash || hash !== table.hash)
      problems.push(`roll ${roll}: the table's entries do not hash to the published hash`);
    const weights = entries.map((e: Json) => BigInt(e.weight));
    const total = weights.reduce((a: bigint, b: bigint) => a + b, 0n);
    if (String(total) !== published.total)
      problems.push(`roll ${roll}: total weight ${total}, published ${published.total}`);
    const { value, attempts } = uniformRoll(
      seed.serverSeed,
      { clientSeed: draw.clientSeed, nonce: draw.nonce, roll, tableId: published.tableId, tableHash: hash },
      total,
    );
    if (String(value) !== published.value || attempts !== published.attempts)
      problems.push(
        `roll ${roll}: recomputed value ${value} (${attempts} attempts), published ${published.value}`,
      );
    const entry = pickEntry(weights, value);
    if (entry !== published.entry)
      problems.push(`roll ${roll}: recomputed entry ${entry}, published ${published.entry}`);
    let given = entry;
    if (roll === 0 && draw.pity) {
      const applies = draw.pity.countBefore + 1 >= draw.pity.after;
      if (applies !== draw.pity.applied) problems.push('the pity rule was not applied as published');
      if (applies) given = draw.pity.entry;
    }
    outcome = entries[given].outcome;
    expectedTable =
      outcome !== null && typeof outcome === 'object' && 'table' in outcome ? outcome.table : null;
  }
  if (expectedTable !== null) problems.push(`the draw stops before rolling in ${expectedTable}`);
  if (JSON.stringify(outcome) !== JSON.stringify(draw.outcome))
    problems.push('the recomputed outcome is not the published outcome');
  return problems;
}
