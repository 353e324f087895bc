// The explorer's draw check (explorer/src/views/draw-check.ts: gats-draw-v1 again, over WebCrypto, so
// a player's browser recomputes a loot box draw from the API's answers) against the vectors made with
// openssl alone (test/vectors/draws/) and the service's own entry choice (pickEntry), and refusing a
// draw whose published values were changed. Node's global WebCrypto is the browser's API.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkDraw } from '../../../explorer/src/views/draw-check.ts';
import type { components } from '../../../generated/openapi/types.ts';
import { pickEntry } from '../../../src/domain/ledger/draw-algorithm.ts';

type Schemas = components['schemas'];

interface Vector {
  serverSeed: string;
  commitment: string;
  clientSeed: string;
  nonce: number;
  roll: number;
  tableId: string;
  tableHash: string;
  total: string;
  value: string;
  attempts: number;
}
const vectors = JSON.parse(
  readFileSync(new URL('../../vectors/draws/vectors.json', import.meta.url), 'utf8'),
) as { table: { jcs: string; hash: string }; rolls: Vector[] };

const entries = JSON.parse(vectors.table.jcs) as { weight: number; outcome: Schemas['DropOutcome'] }[];
/**
 * The vectors' first rolls over the table they publish (the others roll over totals of other tables,
 * given by their hash only: a vector's total is an input of the roll).
 */
const firstRolls = vectors.rolls.filter(
  (v) =>
    v.roll === 0 &&
    v.tableHash === vectors.table.hash &&
    v.total === String(entries.reduce((sum, e) => sum + e.weight, 0)),
);

function published(v: Vector) {
  const entry = pickEntry(
    entries.map((e) => BigInt(e.weight)),
    BigInt(v.value),
  );
  const at = '2026-11-29T00:00:00.000Z';
  const draw = {
    id: 'op_01JD4B00000000000000000000',
    algorithm: 'gats-draw-v1',
    box: 'lbx_01JD4B00000000000000000000',
    assetId: 'nft_01JD4B00000000000000000000',
    wallet: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    seed: 'dsd_01JD4B00000000000000000000',
    commitment: v.commitment,
    nonce: v.nonce,
    clientSeed: v.clientSeed,
    rolls: [
      {
        tableId: v.tableId,
        tableHash: v.tableHash,
        total: v.total,
        value: v.value,
        attempts: v.attempts,
        entry,
      },
    ],
    pity: null,
    outcome: entries[entry].outcome,
    granted: [],
    createdAt: at,
  } as Schemas['Draw'];
  const seed = {
    id: draw.seed,
    wallet: draw.wallet,
    commitment: v.commitment,
    status: 'revealed',
    nextNonce: v.nonce + 1,
    serverSeed: v.serverSeed,
    createdAt: at,
    revealedAt: at,
  } as Schemas['DrawSeed'];
  const box = { id: draw.box, table: v.tableId, tableHash: v.tableHash } as Schemas['LootBox'];
  const table = {
    id: v.tableId,
    name: 'Chest',
    entries: entries.map((e) => ({ ...e, odds: { numerator: e.weight, denominator: 100 } })),
    hash: vectors.table.hash,
  } as unknown as Schemas['DropTable'];
  return { draw, seed, box, table: async () => table };
}

describe("the explorer's draw check (gats-draw-v1 over WebCrypto)", () => {
  it('verifies every vector of the published table, entry and outcome as the service chooses them', async () => {
    expect(firstRolls.length).toBeGreaterThanOrEqual(2);
    for (const v of firstRolls) {
      const { draw, seed, box, table } = published(v);
      const result = await checkDraw(draw, seed, box, table);
      expect(result.problems, `${v.clientSeed}/${v.nonce}`).toEqual([]);
      expect(result.steps.join('\n')).toContain(`gives ${v.value} of ${v.total}`);
    }
  });

  it('finds a changed value, a seed that is not the commitment and a changed table', async () => {
    const v = firstRolls[0];
    const value = published(v);
    value.draw.rolls[0].value = String((BigInt(v.value) + 1n) % BigInt(v.total));
    expect((await checkDraw(value.draw, value.seed, value.box, value.table)).problems.join('\n')).toMatch(
      /Roll 0: recomputed/,
    );

    const seed = published(v);
    seed.seed.serverSeed = `${v.serverSeed.slice(0, -2)}00`;
    expect((await checkDraw(seed.draw, seed.seed, seed.box, seed.table)).problems.join('\n')).toMatch(
      /does not hash to the commitment/,
    );

    const table = published(v);
    const changed = await table.table();
    const reweighted = {
      ...changed,
      entries: changed.entries.map((e, i) => (i === 0 ? { ...e, weight: 71 } : e)),
    };
    expect(
      (await checkDraw(table.draw, table.seed, table.box, async () => reweighted)).problems.join('\n'),
    ).toMatch(/do not hash to the published hash/);
  });
});
