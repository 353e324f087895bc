/**
 * Verifies a loot box draw from the API's answers alone (issue 36): recomputes its outcome with the
 * published algorithm gats-draw-v1 (src/domain/ledger/draw-algorithm.ts, stated in
 * docs/architecture/stores-and-rewards.md) from the revealed server seed, the player's client seed,
 * the nonce and the tables, and checks every step the service published.
 *
 *   GATS_TOKEN=… GATS_API_KEY=… npm run verify-draw -- --url http://localhost:3000 op_…
 *
 * Reads GET /api/v1/draws/{id}, GET /api/v1/draw-seeds/{seed} (the seed must be revealed: POST
 * /api/v1/draw-seeds/{seed}/reveal by its wallet), GET /api/v1/loot-boxes/{box} and GET
 * /api/v1/drop-tables/{table} for every table the draw rolled in. Prints `verified` and exits 0, or
 * prints each mismatch and exits 1.
 */
import { parseArgs } from 'node:util';
import { verifyDraw } from './lib/verify-draw.ts';

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: { url: { type: 'string', default: 'http://localhost:3000' } },
    allowPositionals: true,
  });
  const [drawId] = positionals;
  if (!drawId) {
    console.error('usage: npm run verify-draw -- [--url URL] <draw id>   (env GATS_TOKEN, GATS_API_KEY)');
    process.exit(2);
  }
  const headers = {
    authorization: `Bearer ${process.env.GATS_TOKEN ?? ''}`,
    'x-api-key': process.env.GATS_API_KEY ?? '',
  };
  const get = async (path: string) => {
    const response = await fetch(`${values.url}${path}`, { headers });
    if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const problems = await verifyDraw(get, drawId);
  for (const problem of problems) console.log(`mismatch: ${problem}`);
  console.log(problems.length ? 'NOT verified' : 'verified');
  process.exit(problems.length ? 1 : 0);
}

if (import.meta.main) await main();
