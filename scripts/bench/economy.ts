// Economy (issue 21): batch transfers of 10 legs (POST /api/v1/transfer/batch) beside single
// transfers (POST /api/v1/transfer) on the same service, funded wallets and load (50 clients, each one
// user sending from its custodial wallet to random others, a fresh Idempotency-Key per request). The
// runs alternate single, batch, craft, single, batch, craft so all see the same machine; it reports
// requests/s, legs/s and the service's CPU per request and per leg, then checks the ledger's invariants (every
// transfer conserves the supply, so supply == sum of balances == minted). Crafts
// (POST /api/v1/recipes/{id}/craft) run in the same rounds: a recipe that burns 0.01 of the currency
// and mints 0.01 back plus a new NFT (one burn leg, one currency mint, one NFT: the supply is kept, so
// the same invariants hold), reported as crafts/s. Store purchases (POST /api/v1/store-offers/{id}/purchase:
// 0.01 of a second currency, bench-gems, paid to the studio for a new NFT) and claim code redemptions
// (POST /api/v1/claim-codes/redeem: one promotion code, unlimited, granting 0.01 bench-gems) run in the
// same rounds, reported as purchases/s and redemptions/s; neither moves the currency the invariants
// check. Loot box openings (POST /api/v1/loot-boxes/{id}/open, issue 36: the box NFT burned, a draw
// from a two-entry table, 0.01 bench-gems or nothing, minted) run in the same rounds too, reported as
// openings/s: each wallet is minted BENCH_BOXES_PER_WALLET boxes (default 25 per second of a run)
// before the runs, and each client opens its wallet's next box under the wallet's committed seed.

import { randomUUID } from 'node:crypto';
import { call, createCurrency, mint, type Session } from '../lib/api.ts';
import { forEachLimit } from '../lib/concurrency.ts';
import { startService } from '../lib/service.ts';
import type { AutocannonClient } from '../lib/untyped.ts';
import { type LoadOptions, type LoadResult, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { record } from './lib/record.ts';
import { heading, loadTable } from './lib/report.ts';
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
/** The store's currency: each wallet gets 1,000,000.00, far more than a run can spend. */
const GEMS = 'bench-gems';
const CLAIM_CODE = 'BENCH-PROMO-CODE';
const BOX_NAME = 'Bench Box';
const NFT_TEMPLATE = {
  image: 'https://cdn.example.com/potion.png',
  attributes: [],
  creator: 'Bench',
};

export async function economy(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const service = await startService(kind);
    try {
      let recipe = '';
      let storeOffer = '';
      let lootBox = '';
      let studioSession: Session | undefined;
      const users = await fundedUsers(service, async (studio) => {
        studioSession = studio;
        await createCurrency(service, studio, GEMS, COLLECTION);
        storeOffer = (
          await call<{ id: string }>(
            service.baseUrl,
            'POST',
            `/api/v1/collections/${COLLECTION}/store-offers`,
            {
              session: studio,
              body: {
                name: 'Potion',
                price: [{ assetId: GEMS, amount: '0.01' }],
                grants: [{ nft: { name: 'Store Potion', metadata: NFT_TEMPLATE } }],
                payTo: studio.wallet,
              },
            },
          )
        ).id;
        await call(service.baseUrl, 'POST', `/api/v1/collections/${COLLECTION}/claim-codes`, {
          session: studio,
          body: {
            grants: [{ assetId: GEMS, amount: '0.01' }],
            code: CLAIM_CODE,
            maxRedemptions: 1_000_000_000,
            perWalletLimit: 1_000_000_000,
          },
        });
        const table = await call<{ id: string }>(
          service.baseUrl,
          'POST',
          `/api/v1/collections/${COLLECTION}/drop-tables`,
          {
            session: studio,
            body: {
              name: 'Bench chest',
              entries: [
                { weight: 1, outcome: { assetId: GEMS, amount: '0.01' } },
                { weight: 1, outcome: null },
              ],
            },
          },
        );
        lootBox = (
          await call<{ id: string }>(
            service.baseUrl,
            'POST',
            `/api/v1/collections/${COLLECTION}/loot-boxes`,
            {
              session: studio,
              body: { name: BOX_NAME, table: table.id, paid: false },
            },
          )
        ).id;
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
                    metadata: NFT_TEMPLATE,
                  },
                },
              ],
            },
          })
        ).id;
      });
      const studio = studioSession as Session;
      await forEachLimit(users, 8, (user) => mint(service, studio, GEMS, user.wallet, '1000000'));
      const boxes = await boxesFor(service.baseUrl, studio, users, boxesPerWallet(options.durationSeconds));
      const commitments = await commitmentsOf(service.baseUrl, users);
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
      const purchase = load(
        'POST /api/v1/store-offers/{id}/purchase',
        `/api/v1/store-offers/${storeOffer}/purchase`,
        requestsFrom(users, `/api/v1/store-offers/${storeOffer}/purchase`, (buyer) => ({
          wallet: buyer.wallet,
          version: 1,
        })),
      );
      const redeem = load(
        'POST /api/v1/claim-codes/redeem',
        '/api/v1/claim-codes/redeem',
        requestsFrom(users, '/api/v1/claim-codes/redeem', (player) => ({
          wallet: player.wallet,
          code: CLAIM_CODE,
        })),
      );
      const open = load(
        'POST /api/v1/loot-boxes/{id}/open',
        `/api/v1/loot-boxes/${lootBox}/open`,
        openingsFrom(users, `/api/v1/loot-boxes/${lootBox}/open`, boxes, commitments),
      );
      heading(`economy on ${kind}`, {
        wallets: users.length,
        clients: CLIENTS,
        'legs per batch': LEGS,
        'boxes per wallet': boxesPerWallet(options.durationSeconds),
        'seconds per run': options.durationSeconds,
      });
      await warmUp(single);
      await warmUp(batch);
      await warmUp(craft);
      await warmUp(purchase);
      await warmUp(redeem);
      await warmUp(open);
      const runs = [single, batch, craft, purchase, open, redeem];
      const results: LoadResult[] = [];
      for (let round = 0; round < 2; round++) for (const run of runs) results.push(await runLoad(run));
      loadTable(results);
      const mean = (rs: LoadResult[], f: (r: LoadResult) => number) =>
        rs.reduce((t, r) => t + f(r), 0) / rs.length;
      const of = (run: LoadOptions) => results.filter((_, i) => runs[i % runs.length] === run);
      const singles = of(single);
      const batches = of(batch);
      const crafts = of(craft);
      const purchases = of(purchase);
      const redemptions = of(redeem);
      const openings = of(open);
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
          `CPU ${mean(crafts, (r) => r.serverCpuMicros ?? 0).toFixed(0)} us/craft; ` +
          `store purchases: ${mean(purchases, (r) => r.okPerSecond).toFixed(0)}/s, ` +
          `CPU ${mean(purchases, (r) => r.serverCpuMicros ?? 0).toFixed(0)} us/purchase; ` +
          `loot box openings: ${mean(openings, (r) => r.okPerSecond).toFixed(0)}/s, ` +
          `CPU ${mean(openings, (r) => r.serverCpuMicros ?? 0).toFixed(0)} us/opening; ` +
          `claim redemptions: ${mean(redemptions, (r) => r.okPerSecond).toFixed(0)}/s, ` +
          `CPU ${mean(redemptions, (r) => r.serverCpuMicros ?? 0).toFixed(0)} us/redemption`,
      );
      await checkInvariants(service, users);
      const craftRate = mean(crafts, (r) => r.okPerSecond);
      record({
        benchmark: 'economy',
        scenario: `single transfers, ${LEGS}-leg batches, crafts, store purchases, loot box openings and claim redemptions, ${CLIENTS} clients, ${kind}, invariants held`,
        figures: [
          { name: 'transfers', value: Math.round(singleRate), unit: '/s' },
          { name: 'batches', value: Math.round(legRate / LEGS), unit: '/s' },
          { name: 'legs', value: Math.round(legRate), unit: '/s' },
          { name: 'crafts', value: Math.round(craftRate), unit: '/s' },
          { name: 'store purchases', value: Math.round(mean(purchases, (r) => r.okPerSecond)), unit: '/s' },
          { name: 'loot box openings', value: Math.round(mean(openings, (r) => r.okPerSecond)), unit: '/s' },
          {
            name: 'claim redemptions',
            value: Math.round(mean(redemptions, (r) => r.okPerSecond)),
            unit: '/s',
          },
          { name: 'CPU per transfer', value: Math.round(singleCpu), unit: 'µs' },
          { name: 'CPU per leg', value: Math.round(batchCpu / LEGS), unit: 'µs' },
          {
            name: 'CPU per craft',
            value: Math.round(mean(crafts, (r) => r.serverCpuMicros ?? 0)),
            unit: 'µs',
          },
          {
            name: 'CPU per purchase',
            value: Math.round(mean(purchases, (r) => r.serverCpuMicros ?? 0)),
            unit: 'µs',
          },
          {
            name: 'CPU per opening',
            value: Math.round(mean(openings, (r) => r.serverCpuMicros ?? 0)),
            unit: 'µs',
          },
        ],
      });
    } finally {
      await service.stop();
    }
  }
}

/** Boxes each wallet is minted: enough for its client's share of the runs at a few hundred openings/s. */
function boxesPerWallet(durationSeconds: number): number {
  return Number(process.env.BENCH_BOXES_PER_WALLET ?? Math.ceil(durationSeconds * 25));
}

/** `perWallet` loot box NFTs minted to each user's wallet (batch mints of 100); their ids by wallet. */
async function boxesFor(
  baseUrl: string,
  studio: Session,
  users: Session[],
  perWallet: number,
): Promise<Map<string, string[]>> {
  const boxes = new Map<string, string[]>(users.map((user) => [user.wallet, []]));
  const mints = users.flatMap((user) =>
    Array.from({ length: Math.ceil(perWallet / 100) }, (_, i) => ({
      user,
      count: Math.min(100, perWallet - i * 100),
    })),
  );
  await forEachLimit(mints, 4, async ({ user, count }) => {
    const made = await call<{ nfts: { id: string }[] }>(
      baseUrl,
      'POST',
      `/api/v1/collections/${COLLECTION}/mint/batch`,
      {
        session: studio,
        body: {
          items: Array.from({ length: count }, () => ({
            to: user.wallet,
            nft: { name: BOX_NAME, metadata: NFT_TEMPLATE },
          })),
        },
      },
    );
    boxes.get(user.wallet)?.push(...made.nfts.map((nft) => nft.id));
  });
  return boxes;
}

/** Each user's active draw seed's commitment (committed once, never revealed during the runs). */
async function commitmentsOf(baseUrl: string, users: Session[]): Promise<Map<string, string>> {
  const commitments = new Map<string, string>();
  await forEachLimit(users, 8, async (user) => {
    const seed = await call<{ commitment: string }>(baseUrl, 'POST', '/api/v1/draw-seeds', {
      session: user,
      body: { wallet: user.wallet },
    });
    commitments.set(user.wallet, seed.commitment);
  });
  return commitments;
}

/**
 * Each client opens its user's boxes one after the other under the wallet's seed; a client whose
 * wallet has no box left reopens its last one, which fails (a failure in the table: a run too long
 * for the boxes minted shows).
 */
function openingsFrom(
  users: Session[],
  path: string,
  boxes: Map<string, string[]>,
  commitments: Map<string, string>,
): (client: AutocannonClient) => void {
  const last = new Map<string, string>();
  return requestsFrom(users, path, (sender) => {
    const assetId = boxes.get(sender.wallet)?.shift() ?? last.get(sender.wallet) ?? 'nft_none';
    last.set(sender.wallet, assetId);
    return {
      wallet: sender.wallet,
      assetId,
      clientSeed: randomUUID(),
      seedCommitment: commitments.get(sender.wallet),
    };
  });
}
