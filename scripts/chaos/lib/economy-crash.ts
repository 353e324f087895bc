// The crash test's economy run (issue 21): crafts and trade acceptances in flight when the service is
// killed with SIGKILL. Each client owns two players: it crafts a Potion from 2.00 herb as the first,
// and trades a Sword between the two (the owner proposes it for 1.00 gold, the other accepts), one
// request after another, each with its own Idempotency-Key, resent with the SAME key and body until
// it gets an answer below 500 (the careful client of ./writes.ts). After the kills and restarts the
// ledger must hold exactly what the answers said: every acknowledged craft fully applied (its burn
// and its Potion) and no other, every acknowledged acceptance fully applied (the Sword and the gold
// moved, the trade accepted under the answer's op id) and no other, supply == sum of balances ==
// minted - burned for herb and gold, and no trade left open.
import { randomUUID } from 'node:crypto';
import { call, createCollection, createCurrency, createUser, type Session } from '../../lib/api.ts';
import { forEachLimit } from '../../lib/concurrency.ts';
import type { DbKind } from '../../lib/database.ts';
import { startCrashableService } from './crashable-service.ts';
import { formatUnits, parseUnits } from './ledger-setup.ts';
import { allPages } from './rest.ts';
import { type Answer, sendOnce } from './writes.ts';

export interface EconomyCrashOptions {
  db: DbKind;
  kills: number;
  durationSeconds: number;
  /** Concurrent clients, each with two players of its own. */
  clients: number;
  log: (line: string) => void;
}

export interface EconomyCrashReport {
  restartMs: number[];
  crafts: number;
  trades: number;
  /** Requests that needed more than one send. */
  retried: number;
  failures: string[];
}

const COLLECTION = 'chaos-economy';
const HERB = 'chaos-herb';
const GOLD = 'chaos-gold';
/** 1,000,000.00 of each currency per player: far more than a run spends (a craft burns 2.00). */
const INITIAL = 100_000_000n;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const metadata = { image: 'https://cdn.example-game.com/items/chaos.png', attributes: [], creator: 'Chaos' };

interface Pair {
  a: Session;
  b: Session;
  sword: string;
  /** Who owns the Sword after every acknowledged acceptance (the model the ledger must match). */
  owner: Session;
  crafts: number;
  potions: string[];
  /** Gold each player received (+) or paid (-) in acknowledged trades, in hundredths. */
  gold: Map<string, bigint>;
  trades: { id: string; operationId: string }[];
}

export async function runEconomyCrashTest(options: EconomyCrashOptions): Promise<EconomyCrashReport> {
  const { log } = options;
  const service = await startCrashableService(options.db);
  const failures: string[] = [];
  let retried = 0;
  try {
    const studio = await createUser(service, 'studio');
    await createCollection(service, studio, COLLECTION);
    for (const currency of [HERB, GOLD]) await createCurrency(service, studio, currency, COLLECTION);
    const recipe = await call<{ id: string }>(
      service.baseUrl,
      'POST',
      `/api/v1/collections/${COLLECTION}/recipes`,
      {
        session: studio,
        body: {
          name: 'Potion',
          inputs: [{ assetId: HERB, amount: '2.00' }],
          outputs: [{ nft: { name: 'Potion', metadata } }],
        },
      },
    );
    const pairs: Pair[] = [];
    await forEachLimit(Array.from({ length: options.clients }), 2, async () => {
      const [a, b] = [await createUser(service), await createUser(service)];
      const minted = await call<{ nfts: { id: string }[] }>(
        service.baseUrl,
        'POST',
        `/api/v1/collections/${COLLECTION}/mint/batch`,
        {
          session: studio,
          body: {
            items: [
              { to: a.wallet, nft: { name: 'Sword', metadata } },
              ...[a, b].flatMap((player) =>
                [HERB, GOLD].map((currency) => ({
                  to: player.wallet,
                  currency,
                  amount: formatUnits(INITIAL),
                })),
              ),
            ],
          },
        },
      );
      pairs.push({
        a,
        b,
        sword: minted.nfts[0].id,
        owner: a,
        crafts: 0,
        potions: [],
        gold: new Map(),
        trades: [],
      });
    });
    log(`economy: ${pairs.length} clients, ${options.kills} kills in ${options.durationSeconds} s`);

    /** Sends until an answer below 500 comes; every one must be a 2xx (every request is valid). */
    const deliver = async (session: Session, path: string, body?: unknown): Promise<Answer> => {
      const request = { session, path, body, idempotencyKey: randomUUID() };
      const giveUpAt = Date.now() + 120_000;
      for (let attempt = 0; ; attempt++) {
        if (attempt === 1) retried++;
        if (attempt > 0) await sleep(Math.min(100 * 2 ** attempt, 1000));
        await service.whenUp();
        const answer = await sendOnce(service.baseUrl, request, 10_000);
        if (answer && answer.status < 500) {
          if (answer.status >= 300)
            throw new Error(`${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
          return answer;
        }
        if (Date.now() > giveUpAt) throw new Error(`${path} never answered`);
      }
    };

    let stopping = false;
    const client = async (pair: Pair) => {
      while (!stopping) {
        const crafted = await deliver(pair.a, `/api/v1/recipes/${recipe.id}/craft`, {
          wallet: pair.a.wallet,
        });
        pair.crafts++;
        pair.potions.push(crafted.body?.nfts[0].id);
        const from = pair.owner;
        const to = from === pair.a ? pair.b : pair.a;
        const proposed = await deliver(from, '/api/v1/trades', {
          fromWallet: from.wallet,
          toWallet: to.wallet,
          offer: [{ assetId: pair.sword, amount: '1' }],
          request: [{ assetId: GOLD, amount: '1.00' }],
        });
        const accepted = await deliver(to, `/api/v1/trades/${proposed.body?.id}/accept`);
        pair.trades.push({ id: proposed.body?.id as string, operationId: accepted.body?.id as string });
        pair.owner = to;
        pair.gold.set(from.wallet, (pair.gold.get(from.wallet) ?? 0n) + 100n);
        pair.gold.set(to.wallet, (pair.gold.get(to.wallet) ?? 0n) - 100n);
      }
    };
    const load = Promise.all(
      pairs.map((pair) => client(pair).catch((error) => failures.push(String(error)))),
    );
    const restartMs: number[] = [];
    const end = Date.now() + options.durationSeconds * 1000;
    for (let kill = 1; kill <= options.kills; kill++) {
      const share = Math.max(0, end - Date.now()) / (options.kills - kill + 2);
      await sleep(share * (0.3 + 0.7 * Math.random()));
      await service.kill9();
      await sleep(Math.floor(Math.random() * 1000));
      restartMs.push(await service.restart());
      log(`economy kill ${kill}/${options.kills}; restarted in ${restartMs[restartMs.length - 1]} ms`);
    }
    await sleep(Math.max(0, end - Date.now()));
    stopping = true;
    await load;

    // The ledger matches the answers exactly.
    const fail = (condition: boolean, message: string) => {
      if (condition) failures.push(message);
    };
    const read = <T>(path: string, session: Session = studio) =>
      call<T>(service.baseUrl, 'GET', path, { session });
    const crafts = pairs.reduce((sum, pair) => sum + pair.crafts, 0);
    const trades = pairs.reduce((sum, pair) => sum + pair.trades.length, 0);
    for (const pair of pairs) {
      const potions = (
        await allPages<{ asset: { id: string; name: string } }>(
          service.baseUrl,
          pair.a,
          `/wallets/${pair.a.wallet}/assets?kind=nft`,
        )
      )
        .filter((holding) => holding.asset.name === 'Potion')
        .map((holding) => holding.asset.id)
        .sort();
      fail(
        JSON.stringify(potions) !== JSON.stringify([...pair.potions].sort()),
        `${pair.a.wallet}: Potions held ${potions.length}, acknowledged crafts ${pair.crafts}`,
      );
      const sword = await read<{ owner: string }>(`/assets/${pair.sword}`);
      fail(
        sword.owner !== pair.owner.wallet,
        `${pair.sword}: owned by ${sword.owner}, expected ${pair.owner.wallet}`,
      );
      for (const trade of pair.trades) {
        const stored = await read<{ status: string; operationId: string }>(
          `/api/v1/trades/${trade.id}`,
          pair.a,
        );
        fail(
          stored.status !== 'accepted' || stored.operationId !== trade.operationId,
          `${trade.id}: ${stored.status} under ${stored.operationId}, acknowledged under ${trade.operationId}`,
        );
      }
      const open = await allPages(service.baseUrl, pair.a, '/api/v1/trades?status=open');
      fail(open.length > 0, `${pair.a.wallet}: ${open.length} trades left open`);
    }
    for (const currency of [HERB, GOLD]) {
      const asset = await read<{ totalSupply: string }>(`/assets/${currency}`);
      const owners = await allPages<{ wallet: string; balance: string }>(
        service.baseUrl,
        studio,
        `/assets/${currency}/owners`,
      );
      const sum = owners.reduce((total, owner) => total + parseUnits(owner.balance), 0n);
      const minted = INITIAL * 2n * BigInt(pairs.length);
      const expected = currency === HERB ? minted - 200n * BigInt(crafts) : minted;
      fail(
        parseUnits(asset.totalSupply) !== expected || sum !== expected,
        `${currency}: totalSupply ${asset.totalSupply}, sum of balances ${formatUnits(sum)}, expected ${formatUnits(expected)}`,
      );
      for (const pair of pairs)
        for (const player of [pair.a, pair.b]) {
          const held = parseUnits(owners.find((owner) => owner.wallet === player.wallet)?.balance ?? '0');
          const want =
            currency === GOLD
              ? INITIAL + (pair.gold.get(player.wallet) ?? 0n)
              : INITIAL - (player === pair.a ? 200n * BigInt(pair.crafts) : 0n);
          fail(
            held !== want,
            `${currency} of ${player.wallet}: ${formatUnits(held)}, expected ${formatUnits(want)}`,
          );
        }
    }
    return { restartMs, crafts, trades, retried, failures };
  } finally {
    await service.stop();
  }
}
