// Economy (issue 21): batch transfers of 10 legs (POST /api/v1/transfer/batch) beside single
// transfers (POST /api/v1/transfer) on the same service, funded wallets and load (50 clients, each one
// user sending from its custodial wallet to random others, a fresh Idempotency-Key per request). The
// runs alternate single, batch, craft, single, batch, craft so all see the same machine; it reports
// requests/s, legs/s and the service's CPU per request and per leg, then checks the ledger's invariants (every
// transfer conserves the supply, so supply == sum of balances == minted). Crafts
// (POST /api/v1/recipes/{id}/craft) run in the same rounds: a recipe that burns 0.01 of the currency
// and mints 0.01 back plus a new NFT (one burn leg, one currency mint, one NFT: the supply is kept, so
// the same invariants hold), reported as crafts/s.

import { call } from './lib/api.ts';
import { type LoadOptions, type LoadResult, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { heading, loadTable } from './lib/report.ts';
import { startService } from './lib/service.ts';
import type { AutocannonClient } from './lib/untyped.ts';
import {
  COLLECTION,
  CURRENCY,
  checkInvariants,
  fundedUsers,
  randomTransfersFrom,
  requestsFrom,
} from './transfers.ts';

const CLIENTS = 50;
const LEGS = 10;

export async function economy(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const service = await startService(kind);
    try {
      let recipe = '';
      const users = await fundedUsers(service, async (studio) => {
        recipe = (
          await call<{ id: string }>(service.baseUrl, 'POST', `/api/v1/collections/${COLLECTION}/recipes`, {
            session: studio,
            body: {
              name: 'Transmute',
              inputs: [{ assetId: CURRENCY, amount: '0.01' }],
              outputs: [
                { assetId: CURRENCY, amount: '0.01' },
                {
                  nft: {
                    name: 'Potion',
                    metadata: {
                      image: 'https://cdn.example.com/potion.png',
                      attributes: [],
                      creator: 'Bench',
                    },
                  },
                },
              ],
            },
          })
        ).id;
      });
      const load = (
        label: string,
        path: string,
        setupClient: (client: AutocannonClient) => void,
      ): LoadOptions => ({
        label,
        url: `${service.baseUrl}${path}`,
        connections: CLIENTS,
        durationSeconds: options.durationSeconds,
        setupClient,
        serverPid: service.pid,
      });
      const single = load('POST /api/v1/transfer', '/api/v1/transfer', randomTransfersFrom(users));
      const batch = load(
        `POST /api/v1/transfer/batch (${LEGS} legs)`,
        '/api/v1/transfer/batch',
        randomTransfersFrom(users, LEGS),
      );
      const craft = load(
        'POST /api/v1/recipes/{id}/craft',
        `/api/v1/recipes/${recipe}/craft`,
        requestsFrom(users, `/api/v1/recipes/${recipe}/craft`, (sender) => ({ wallet: sender.wallet })),
      );
      heading(`economy on ${kind}`, {
        wallets: users.length,
        clients: CLIENTS,
        'legs per batch': LEGS,
        'seconds per run': options.durationSeconds,
      });
      await warmUp(single);
      await warmUp(batch);
      await warmUp(craft);
      const results: LoadResult[] = [];
      for (let round = 0; round < 2; round++)
        results.push(await runLoad(single), await runLoad(batch), await runLoad(craft));
      loadTable(results);
      const mean = (rs: LoadResult[], f: (r: LoadResult) => number) =>
        rs.reduce((t, r) => t + f(r), 0) / rs.length;
      const singles = results.filter((_, i) => i % 3 === 0);
      const batches = results.filter((_, i) => i % 3 === 1);
      const crafts = results.filter((_, i) => i % 3 === 2);
      const singleRate = mean(singles, (r) => r.okPerSecond);
      const legRate = mean(batches, (r) => r.okPerSecond) * LEGS;
      const singleCpu = mean(singles, (r) => r.serverCpuMicros ?? 0);
      const batchCpu = mean(batches, (r) => r.serverCpuMicros ?? 0);
      console.log(
        `single transfers: ${singleRate.toFixed(0)}/s, CPU ${singleCpu.toFixed(0)} us/transfer; ` +
          `batches of ${LEGS}: ${(legRate / LEGS).toFixed(0)}/s = ${legRate.toFixed(0)} legs/s, ` +
          `CPU ${batchCpu.toFixed(0)} us/batch = ${(batchCpu / LEGS).toFixed(0)} us/leg ` +
          `(${(legRate / singleRate).toFixed(2)}x the single transfers' moves/s); ` +
          `crafts: ${mean(crafts, (r) => r.okPerSecond).toFixed(0)}/s, ` +
          `CPU ${mean(crafts, (r) => r.serverCpuMicros ?? 0).toFixed(0)} us/craft`,
      );
      await checkInvariants(service, users);
    } finally {
      await service.stop();
    }
  }
}
