// The crash test's economy run (issues 21, 35, 36): multi-part operations in flight when the service
// is killed with SIGKILL. Each client owns two players, a and b, and repeats rounds of requests, one
// after another, each with its own Idempotency-Key, resent with the SAME key and body until it gets
// an answer below 500 (the careful client of ./writes.ts):
//   - first, a auctions its Trophy for 10 s (the shortest auction, about the run's length), and b
//     bids on it at the start of every round (each bid reserved, the previous one released); the
//     market keeper settles it at its end, around the last kill;
//   - items that end: the studio grants a a timed Pass (a batch mint with an end time a second
//     ahead) that a passes to b, and a lends its Lantern to b for a second; they end while kills
//     happen and the market keeper's sweep (every 250 ms here) burns or returns them, after the
//     restart if the service was down;
//   - timed currency grants (lots): the studio mints a 5.00 of season currency ending 1.5 to 2.5 s
//     ahead, and a sends b 3.00 of it (the store takes a's live lots first, soonest end first, and
//     the units keep their end in b); the sweep burns what is left of each lot at its end, some while
//     the service is down; the database is sampled all along for `sum(lots) + reserved <= balance`;
//   - a crafts a Potion from 2.00 herb, and the two trade a Sword (the owner proposes it for 1.00
//     gold, the other accepts);
//   - a buys a Chest bundle in the store (1.00 gold to the studio for 0.50 gem and a Chest NFT; the
//     offer has a per-wallet and a total limit) and opens the Chest (a loot box: the box burned, one
//     outcome minted: 1.00 gem, a Relic NFT or nothing) with its wallet's committed draw seed;
//   - a lists the Potion on the marketplace for 2.00 gold and b buys it (a 5 % royalty to the
//     studio, a 2.5 % fee to the fee wallet);
//   - every other round b tries the Founders pack, an offer with a small total and per-wallet limit,
//     until it is refused (409 offer-limit-reached);
//   - at the end of the round, one request answered 2xx in this round or the last is resent with its
//     key, as if its answer had been lost: after the state moved on (the Chest burned, the listing
//     sold, the pack sold out, the Pass or the loan past its end) it must replay the same answer.
// A request may end refused only where time or a limit explains it (a Pass's or a loan's end passed
// while the service was down: 400 for the end time, 409 item-expired, or insufficient-balance once
// the sweep burned the Pass; the Lantern still on its previous loan: 409; the Founders pack at a
// limit: 409; a bid after the auction's end: 409); every other answer must be a 2xx. After the kills and restarts the ledger must hold
// exactly what the answers said (./economy-verify.ts, from the database and the API).
import { randomUUID } from 'node:crypto';
import { call, createCollection, createCurrency, createUser, type Session } from '../../lib/api.ts';
import { forEachLimit } from '../../lib/concurrency.ts';
import type { DbKind } from '../../lib/database.ts';
import { startCrashableService } from './crashable-service.ts';
import {
  type Acknowledged,
  COLLECTION,
  DRAW_ENTRIES,
  FEE_BPS,
  FEE_WALLET,
  FOUNDERS_PER_WALLET,
  GEM,
  GOLD,
  HERB,
  INITIAL,
  type Pair,
  PRICES,
  ROYALTY_BPS,
  SEASON,
} from './economy-model.ts';
import {
  type EconomyFigures,
  LOTS_WITHIN_BALANCES,
  lotsBeyondBalances,
  verifyEconomy,
} from './economy-verify.ts';
import { formatUnits } from './ledger-setup.ts';
import { newestEventId } from './rest.ts';
import { type Answer, type KeyedPost, sendOnce } from './writes.ts';

export interface EconomyCrashOptions {
  db: DbKind;
  kills: number;
  durationSeconds: number;
  /** Concurrent clients, each with two players of its own. */
  clients: number;
  log: (line: string) => void;
}

export interface EconomyCrashReport extends EconomyFigures {
  restartMs: number[];
  /** Requests that needed more than one send. */
  retried: number;
  /** Requests answered 2xx, resent later with their key as if the answer was lost (each replayed). */
  resent: number;
  /** Final refusals a client accepted (an end time passed, a limit reached), by problem type. */
  refused: Record<string, number>;
  failures: string[];
}

/** How long a Pass and a loan last: they end during the run, some while the service is down. */
const TIMED_MS = 1000;
/** How long a timed currency grant lasts: between these, so lots of several ends overlap in a wallet. */
const LOT_MS = [1500, 2500] as const;
const SWEEP_MS = '250';
/** The auction's length: the shortest the API takes, about the run's. */
const AUCTION_SECONDS = 10;

/** JSON with object keys sorted: a stored answer replayed from PostgreSQL's jsonb has its own key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

interface Sent {
  request: KeyedPost;
  answer: Answer;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const metadata = { image: 'https://cdn.example-game.com/items/chaos.png', attributes: [], creator: 'Chaos' };

export async function runEconomyCrashTest(options: EconomyCrashOptions): Promise<EconomyCrashReport> {
  const { log } = options;
  const started = Date.now();
  const since = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  const service = await startCrashableService(options.db, {
    MARKET_SWEEP_MS: SWEEP_MS,
    MARKET_FEE_WALLET: FEE_WALLET,
    MARKET_FEE_BPS: String(FEE_BPS),
  });
  const failures: string[] = [];
  const refused: Record<string, number> = {};
  const acknowledged: Acknowledged = { operations: [] };
  let retried = 0;
  let resent = 0;
  try {
    const studio = await createUser(service, 'studio');
    const post = <T>(path: string, body: unknown, session: Session = studio) =>
      call<T>(service.baseUrl, 'POST', path, { session, body });
    await createCollection(service, studio, COLLECTION);
    await Promise.all(
      [HERB, GOLD, GEM, SEASON].map((currency) => createCurrency(service, studio, currency, COLLECTION)),
    );
    // The economy's configuration, made while the players register (their password KDF is the
    // set-up's cost).
    const foundersLimit = 2 * options.clients + 1;
    const configuration = Promise.all([
      post<{ id: string }>(`/api/v1/collections/${COLLECTION}/recipes`, {
        name: 'Potion',
        inputs: [{ assetId: HERB, amount: formatUnits(PRICES.craftHerb) }],
        outputs: [{ nft: { name: 'Potion', metadata } }],
      }),
      call(service.baseUrl, 'PUT', `/api/v1/collections/${COLLECTION}/market/settings`, {
        session: studio,
        body: { royaltyBps: Number(ROYALTY_BPS), currencies: [GOLD], royaltyWallet: studio.wallet },
      }),
      post<{ id: string; version: number }>(`/api/v1/collections/${COLLECTION}/store-offers`, {
        name: 'Chest bundle',
        price: [{ assetId: GOLD, amount: formatUnits(PRICES.chest) }],
        grants: [
          { assetId: GEM, amount: formatUnits(PRICES.chestGem) },
          { nft: { name: 'Chest', metadata } },
        ],
        payTo: studio.wallet,
        perWalletLimit: 10_000,
        totalLimit: 100_000,
      }),
      post<{ id: string; version: number }>(`/api/v1/collections/${COLLECTION}/store-offers`, {
        name: 'Founders pack',
        price: [{ assetId: GOLD, amount: formatUnits(PRICES.founders) }],
        grants: [{ assetId: GEM, amount: formatUnits(PRICES.foundersGem) }],
        payTo: studio.wallet,
        perWalletLimit: FOUNDERS_PER_WALLET,
        totalLimit: foundersLimit,
      }),
      post<{ id: string }>(`/api/v1/collections/${COLLECTION}/drop-tables`, {
        name: 'Chest',
        entries: [
          { weight: 2, outcome: { assetId: GEM, amount: formatUnits(PRICES.drawGem) } },
          { weight: 1, outcome: { nft: { name: 'Relic', metadata } } },
          { weight: 1, outcome: null },
        ],
      }).then((table) =>
        post<{ id: string }>(`/api/v1/collections/${COLLECTION}/loot-boxes`, {
          name: 'Chest',
          table: table.id,
          paid: true,
        }),
      ),
    ]);

    const pairs: Pair[] = [];
    await forEachLimit(Array.from({ length: options.clients }), 2, async () => {
      const [a, b] = [await createUser(service), await createUser(service)];
      const minted = await post<{ nfts: { id: string }[] }>(`/api/v1/collections/${COLLECTION}/mint/batch`, {
        items: [
          { to: a.wallet, nft: { name: 'Sword', metadata } },
          { to: a.wallet, nft: { name: 'Lantern', metadata } },
          { to: a.wallet, nft: { name: 'Trophy', metadata } },
          ...[a, b].flatMap((player) =>
            [HERB, GOLD].map((currency) => ({ to: player.wallet, currency, amount: formatUnits(INITIAL) })),
          ),
          // Permanent season units: a's transfers to b never lack units once its lots are spent or ended.
          { to: a.wallet, currency: SEASON, amount: formatUnits(INITIAL) },
        ],
      });
      const seed = await post<{ id: string; commitment: string }>(
        '/api/v1/draw-seeds',
        { wallet: a.wallet },
        a,
      );
      pairs.push({
        a,
        b,
        sword: minted.nfts[0].id,
        lantern: minted.nfts[1].id,
        trophy: minted.nfts[2].id,
        owner: a,
        seedCommitment: seed.commitment,
        seedId: seed.id,
        crafts: 0,
        potions: [],
        trades: [],
        purchases: [],
        openings: [],
        sales: [],
        listings: [],
        founders: [],
        foundersRefused: false,
        passes: [],
        loans: [],
        grants: [],
        seasonSent: [],
        lanternFreeAt: 0,
        bids: [],
        biddingOver: false,
        resent: false,
      });
    });
    const [recipe, , chestOffer, foundersOffer, box] = await configuration;
    const watermark = await newestEventId(service.baseUrl, studio);
    log(
      `economy: set up in ${since()}; ${pairs.length} clients, ${options.kills} kills in ${options.durationSeconds} s`,
    );

    /**
     * Sends until an answer below 500 comes. A 2xx is returned; a refusal whose problem type is in
     * `acceptable` is returned too (counted); any other answer fails the run.
     */
    /** Sends `request` until an answer below 500 comes (null after two minutes without one). */
    const sendUntilAnswered = async (request: KeyedPost): Promise<Answer | null> => {
      const giveUpAt = Date.now() + 120_000;
      for (let attempt = 0; ; attempt++) {
        if (attempt === 1) retried++;
        if (attempt > 0) await sleep(Math.min(100 * 2 ** attempt, 1000));
        await service.whenUp();
        const answer = await sendOnce(service.baseUrl, request, 10_000);
        if (answer && answer.status < 500) return answer;
        if (Date.now() > giveUpAt) return null;
      }
    };
    /** The 2xx requests of each client's previous round and of this one: resent as lost answers. */
    const answered = new Map<Pair, { previous: Sent[]; current: Sent[] }>();
    /**
     * Sends until an answer below 500 comes. A 2xx is returned; a refusal whose problem type is in
     * `acceptable` is returned too (counted); any other answer fails the run.
     */
    const deliver = async (
      session: Session,
      path: string,
      body?: unknown,
      acceptable: readonly string[] = [],
      pair?: Pair,
    ): Promise<Answer> => {
      const request = { session, path, body, idempotencyKey: randomUUID() };
      const answer = await sendUntilAnswered(request);
      if (!answer) throw new Error(`${path} never answered`);
      if (answer.status < 300) {
        if (pair) answered.get(pair)?.current.push({ request, answer });
        return answer;
      }
      const type = String(answer.body?.type);
      if (!acceptable.includes(type))
        throw new Error(`${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      refused[type] = (refused[type] ?? 0) + 1;
      return answer;
    };
    /**
     * A lost answer at its worst moment, at the end of each round: a request of this round or the
     * previous one resent with its key after its operation committed and the state moved on (the
     * Chest burned, the listing sold, the Founders pack sold out, the Pass or the loan past its end,
     * the service restarted). It must replay the same answer.
     */
    const resendAnswered = async (pair: Pair) => {
      const rounds = answered.get(pair);
      if (!rounds) return;
      const candidates = [...rounds.previous, ...rounds.current];
      rounds.previous = rounds.current;
      rounds.current = [];
      if (candidates.length === 0) return;
      const { request, answer } = candidates[Math.floor(Math.random() * candidates.length)];
      const again = await sendUntilAnswered(request);
      resent++;
      pair.resent = true;
      if (
        again?.status !== answer.status ||
        !again.replayed ||
        canonical(again.body) !== canonical(answer.body)
      )
        failures.push(
          `${request.path} resent after its ${answer.status}: ${again?.status} (replayed ${again?.replayed}) ${JSON.stringify(again?.body).slice(0, 300)}`,
        );
    };
    const idOf = (answer: Answer) => answer.body?.id as string;
    const idsOf = (list: unknown): string[] =>
      Array.isArray(list) ? list.map((item: { id: string }) => item.id) : [];

    let stopping = false;
    const end = Date.now() + options.durationSeconds * 1000;
    const client = async (pair: Pair) => {
      const { a, b } = pair;
      const send = (session: Session, path: string, body?: unknown, acceptable: readonly string[] = []) =>
        deliver(session, path, body, acceptable, pair);
      answered.set(pair, { previous: [], current: [] });
      // An auction of a's Trophy for the run's length: b bids every round, and the keeper settles
      // it at its end (sold to b's best bid, paid from its reservation), around the last kill.
      const auction = await send(a, '/api/v1/auctions', {
        wallet: a.wallet,
        assetId: pair.trophy,
        currency: GOLD,
        reservePrice: formatUnits(PRICES.reserve),
        minIncrement: formatUnits(PRICES.increment),
        duration: AUCTION_SECONDS,
        extension: 0,
      });
      pair.auction = idOf(auction);
      for (let round = 0; round === 0 || !stopping; round++) {
        if (!pair.biddingOver) {
          const amount = PRICES.reserve + PRICES.increment * BigInt(pair.bids.length);
          const bid = await send(
            b,
            `/api/v1/auctions/${pair.auction}/bids`,
            { wallet: b.wallet, amount: formatUnits(amount) },
            // Past its end (a resend after a restart included): the bid is refused.
            ['/problems/auction-not-open'],
          );
          if (bid.status < 300) pair.bids.push(amount);
          else pair.biddingOver = true;
        }
        // Items that end, first (so even a short run makes some): none made in the run's last
        // second but those of the first round (a slow first round, kills and restarts under load,
        // may reach it late; the verification waits for the sweep), so the final sweep waits for
        // at most a few. A resend after the end meets the item expired, or already burned by the
        // sweep (no longer held).
        const timed = round === 0 || Date.now() < end - TIMED_MS - 500;
        const passEnd = new Date(Date.now() + TIMED_MS).toISOString();
        const granted =
          timed &&
          (await send(
            studio,
            `/api/v1/collections/${COLLECTION}/mint/batch`,
            { items: [{ to: a.wallet, nft: { name: 'Pass', metadata, expiresAt: passEnd } }] },
            ['/problems/validation-failed'],
          ));
        if (granted && granted.status < 300) {
          const pass: Pair['passes'][number] = { id: granted.body?.nfts[0].id, expiresAt: passEnd };
          pair.passes.push(pass);
          acknowledged.operations.push({ kind: 'pass', transfers: [], nfts: [pass.id] });
          const passed = await send(
            a,
            '/api/v1/transfer',
            { assetId: pass.id, from: a.wallet, to: b.wallet, amount: '1' },
            ['/problems/item-expired', '/problems/insufficient-balance'],
          );
          if (passed.status < 300) {
            pass.passedIn = idOf(passed);
            acknowledged.operations.push({ kind: 'passOn', transfers: [idOf(passed)], nfts: [] });
          }
        }
        if (timed && Date.now() >= pair.lanternFreeAt) {
          const loanEnd = new Date(Date.now() + TIMED_MS).toISOString();
          const lent = await send(
            a,
            `/api/v1/assets/${pair.lantern}/lend`,
            { from: a.wallet, to: b.wallet, expiresAt: loanEnd },
            // The end time passed before a resend landed; the previous loan not swept yet.
            [
              '/problems/validation-failed',
              '/problems/item-lent',
              '/problems/item-expired',
              '/problems/insufficient-balance',
            ],
          );
          if (lent.status < 300) pair.loans.push({ expiresAt: loanEnd });
          pair.lanternFreeAt = Math.max(Date.now(), Date.parse(loanEnd)) + 500;
        }
        // A timed grant of season currency (none ending after the run's last second but the first
        // round's), then a spends some of it: a resend after its end meets the end time (400) and
        // nothing is minted.
        if (round === 0 || Date.now() < end - LOT_MS[1] - 500) {
          const last = pair.grants.at(-1);
          const lotEnd = new Date(
            Math.max(
              Date.now() + LOT_MS[0] + Math.random() * (LOT_MS[1] - LOT_MS[0]),
              last ? Date.parse(last.expiresAt) + 1 : 0,
            ),
          ).toISOString();
          const grant = await send(
            studio,
            `/api/v1/currencies/${SEASON}/mint`,
            { to: a.wallet, amount: formatUnits(PRICES.seasonGrant), expiresAt: lotEnd },
            ['/problems/validation-failed'],
          );
          if (grant.status < 300) {
            pair.grants.push({ transferId: idOf(grant), amount: PRICES.seasonGrant, expiresAt: lotEnd });
            acknowledged.operations.push({ kind: 'grant', transfers: [idOf(grant)], nfts: [] });
            const spent = await send(a, '/api/v1/transfer', {
              assetId: SEASON,
              from: a.wallet,
              to: b.wallet,
              amount: formatUnits(PRICES.seasonSpend),
            });
            pair.seasonSent.push(PRICES.seasonSpend);
            acknowledged.operations.push({ kind: 'seasonSent', transfers: [idOf(spent)], nfts: [] });
          }
        }
        const crafted = await send(a, `/api/v1/recipes/${recipe.id}/craft`, { wallet: a.wallet });
        const potion = crafted.body?.nfts[0].id as string;
        pair.crafts++;
        pair.potions.push(potion);
        acknowledged.operations.push({
          kind: 'craft',
          operationId: idOf(crafted),
          transfers: [...idsOf(crafted.body?.burned), ...idsOf(crafted.body?.minted)],
          nfts: idsOf(crafted.body?.nfts),
        });

        const from = pair.owner;
        const to = from === a ? b : a;
        const proposed = await send(from, '/api/v1/trades', {
          fromWallet: from.wallet,
          toWallet: to.wallet,
          offer: [{ assetId: pair.sword, amount: '1' }],
          request: [{ assetId: GOLD, amount: formatUnits(PRICES.trade) }],
        });
        const accepted = await send(to, `/api/v1/trades/${idOf(proposed)}/accept`);
        pair.trades.push({ id: idOf(proposed), operationId: idOf(accepted) });
        pair.owner = to;
        acknowledged.operations.push({
          kind: 'trade',
          operationId: idOf(accepted),
          transfers: idsOf(accepted.body?.transfers),
          nfts: [],
        });

        // Once the run is over, a round stops between its parts (each part ends with what it made
        // settled: the Chest opened, the listing bought), after one resend of an answered request;
        // but a client's first round runs whole, so every kind of operation is in flight at least
        // once however slow the machine is (a loaded CI run once ended with no listing bought).
        if (stopping && round > 0) break;
        // The store, then the loot box it sold.
        const bought = await send(a, `/api/v1/store-offers/${chestOffer.id}/purchase`, {
          wallet: a.wallet,
          version: chestOffer.version,
        });
        const chest = bought.body?.nfts[0].id as string;
        pair.purchases.push({ operationId: idOf(bought), chest, version: bought.body?.purchase.version });
        acknowledged.operations.push({
          kind: 'purchase',
          operationId: idOf(bought),
          transfers: idsOf(bought.body?.transfers),
          nfts: idsOf(bought.body?.nfts),
        });
        const opened = await send(a, `/api/v1/loot-boxes/${box.id}/open`, {
          wallet: a.wallet,
          assetId: chest,
          clientSeed: `chaos-${round}`,
          seedCommitment: pair.seedCommitment,
        });
        const draw = opened.body?.draw;
        pair.openings.push({
          operationId: idOf(opened),
          chest,
          nonce: draw?.nonce,
          entry: DRAW_ENTRIES[draw?.rolls[0].entry as number],
          relic: opened.body?.nfts[0]?.id,
        });
        acknowledged.operations.push({
          kind: 'opening',
          operationId: idOf(opened),
          transfers: idsOf(opened.body?.transfers),
          nfts: idsOf(opened.body?.nfts),
        });

        if (stopping && round > 0) break;
        // The marketplace: a lists the Potion, b buys it.
        const listed = await send(a, '/api/v1/listings', {
          wallet: a.wallet,
          assetId: potion,
          currency: GOLD,
          price: formatUnits(PRICES.listing),
        });
        pair.listings.push(idOf(listed));
        const sold = await send(b, `/api/v1/listings/${idOf(listed)}/buy`, { wallet: b.wallet });
        pair.sales.push({ operationId: idOf(sold), listing: idOf(listed), potion });
        acknowledged.operations.push({
          kind: 'sale',
          operationId: idOf(sold),
          transfers: idsOf(sold.body?.transfers),
          nfts: [],
        });

        if (round % 2 === 1 && !pair.foundersRefused) {
          const founders = await send(
            b,
            `/api/v1/store-offers/${foundersOffer.id}/purchase`,
            { wallet: b.wallet, version: foundersOffer.version },
            ['/problems/offer-limit-reached'],
          );
          if (founders.status < 300) {
            pair.founders.push(idOf(founders));
            acknowledged.operations.push({
              kind: 'founders',
              operationId: idOf(founders),
              transfers: idsOf(founders.body?.transfers),
              nfts: [],
            });
          } else pair.foundersRefused = true;
        }

        await resendAnswered(pair);
      }
      if (!pair.resent) await resendAnswered(pair);
    };
    const load = Promise.all(
      pairs.map((pair) => client(pair).catch((error) => failures.push(String(error)))),
    );
    // The lots' invariant, read from the database (one statement: one snapshot) all along the run,
    // the service up or down: `sum(lots) + reserved <= balance` for every holding with lots.
    let lotSamples = 0;
    const sampler = (async () => {
      while (!stopping) {
        const rows = await service.rows(LOTS_WITHIN_BALANCES).catch(() => null);
        if (rows) {
          lotSamples += rows.length > 0 ? 1 : 0;
          for (const finding of lotsBeyondBalances(rows)) failures.push(`during the run: ${finding}`);
        }
        await sleep(500);
      }
    })();
    const restartMs: number[] = [];
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
    await sampler;
    log(`economy: ${lotSamples} samples of the database with lots, each within its holding's balance`);
    log(`economy: load stopped at ${since()}; verifying`);

    const figures = await verifyEconomy({
      service,
      studio,
      pairs,
      acknowledged,
      watermark,
      offers: { chest: chestOffer.id, founders: foundersOffer.id, foundersLimit },
      fail: (message) => failures.push(message),
      log,
    });
    log(`economy: verified at ${since()}`);
    return { restartMs, retried, resent, refused, failures, ...figures };
  } finally {
    await service.stop();
  }
}
