// Transfers: 100 users (wallets) holding a currency; 50 concurrent clients, each acting as one of the
// users, POST /api/v1/transfer from that user's custodial wallet to a random other wallet, small
// amounts, for the run's duration. Reports committed transfers/s and latency beside the Koa hello
// baseline under the same load, then checks the ledger's invariants through the API: every balance
// non-negative, and the balances of all wallets add up to the currency's totalSupply (= what was
// minted). Target (issue 4): 1,000 committed transfers/s on SQLite and on PostgreSQL.
import { randomInt, randomUUID } from 'node:crypto';
import { call, createCollection, createCurrency, createUser, mint, type Session } from '../lib/api.ts';
import { forEachLimit } from '../lib/concurrency.ts';
import { type Service, startService } from '../lib/service.ts';
import type { AutocannonClient } from '../lib/untyped.ts';
import { startHello } from './lib/hello.ts';
import { type LoadOptions, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { record, round4 } from './lib/record.ts';
import { baselineOf, heading, loadTable, ratio } from './lib/report.ts';

const WALLETS = 100;
const CLIENTS = 50;
export const CURRENCY = 'bench-gold';
export const COLLECTION = 'bench-transfers';
/** In cents (the currency has 2 decimals): 1,000,000.00 per wallet, far more than a run can spend. */
const MINTED_PER_WALLET = 100_000_000n;
const TARGET_PER_SECOND = 1000;

export async function transfers(options: BenchOptions): Promise<void> {
  for (const kind of options.dbs) {
    const hello = await startHello();
    const service = await startService(kind);
    try {
      const users = await fundedUsers(service);
      const transferLoad = (label: string, baseUrl: string): LoadOptions => ({
        label,
        url: `${baseUrl}/api/v1/transfer`,
        connections: CLIENTS,
        durationSeconds: options.durationSeconds,
        setupClient: randomTransfersFrom(users),
      });
      const helloLoad = transferLoad('Koa hello POST', hello.baseUrl);
      const serviceLoad = transferLoad('POST /api/v1/transfer', service.baseUrl);

      heading(`transfers on ${kind}`, {
        wallets: WALLETS,
        clients: CLIENTS,
        'seconds per run': options.durationSeconds,
      });
      await warmUp(helloLoad);
      await warmUp(serviceLoad);
      const results = [await runLoad(helloLoad), await runLoad(serviceLoad), await runLoad(helloLoad)];
      loadTable(results);
      const committed = results[1].okPerSecond;
      console.log(
        `committed transfers: ${results[1].ok} in ${options.durationSeconds} s = ${committed.toFixed(0)}/s ` +
          `(target ${TARGET_PER_SECOND}/s: ${committed >= TARGET_PER_SECOND ? 'met' : 'NOT met'}), p99 ${results[1].p99} ms`,
      );
      const baseline = baselineOf([results[0], results[2]]);
      ratio('POST /api/v1/transfer', committed, baseline);
      await checkInvariants(service, users);
      record({
        benchmark: 'transfers',
        scenario: `POST /api/v1/transfer, ${CLIENTS} clients, ${kind}, invariants held`,
        koaRatio: round4(committed / baseline),
        figures: [
          { name: 'committed', value: Math.round(committed), unit: '/s' },
          { name: 'p99', value: results[1].p99, unit: 'ms' },
        ],
        targets: [{ figure: 'committed', atLeast: TARGET_PER_SECOND, source: 'issue 4' }],
      });
    } finally {
      await service.stop();
      await hello.stop();
    }
  }
}

/**
 * 100 users, each holding 1,000,000.00 of the currency a separate studio created and minted (in the
 * collection COLLECTION); `setup` runs as that studio once the currency exists (the economy
 * benchmark's recipe).
 */
export async function fundedUsers(
  service: Service,
  setup?: (studio: Session) => Promise<void>,
): Promise<Session[]> {
  const studio = await createUser(service, 'studio');
  await createCollection(service, studio, COLLECTION);
  await createCurrency(service, studio, CURRENCY, COLLECTION);
  await setup?.(studio);
  const users: Session[] = [];
  // Registration and login run a memory-hard KDF: a few at a time is as fast as it gets on 2 cores.
  await forEachLimit(Array.from({ length: WALLETS }), 4, async () => {
    users.push(await createUser(service));
  });
  await forEachLimit(users, 8, (user) =>
    mint(service, studio, CURRENCY, user.wallet, centsToAmount(MINTED_PER_WALLET)),
  );
  return users;
}

/**
 * Gives each autocannon connection its own user (client i acts as user i), every request a POST to
 * `path` with the body `bodyOf(sender)` and a fresh Idempotency-Key.
 */
export function requestsFrom(
  users: Session[],
  path: string,
  bodyOf: (sender: Session) => unknown,
): (client: AutocannonClient) => void {
  let nextClient = 0;
  return (client) => {
    const sender = users[nextClient++ % users.length];
    const headers = { ...sender.headers, 'content-type': 'application/json' };
    client.setRequests([
      {
        method: 'POST',
        path,
        setupRequest: (request) => ({
          ...request,
          headers: { ...headers, 'idempotency-key': randomUUID() },
          body: JSON.stringify(bodyOf(sender)),
        }),
      },
    ]);
  };
}

/**
 * Every request moves 0.01 to 1.00 from the client's user's wallet to a random other wallet: one
 * `POST /api/v1/transfer`, or with `legs`, one `POST /api/v1/transfer/batch` of that many such moves
 * (the economy benchmark).
 */
export function randomTransfersFrom(users: Session[], legs?: number): (client: AutocannonClient) => void {
  const move = (sender: Session) => {
    let recipient = sender;
    while (recipient === sender) recipient = users[randomInt(users.length)];
    return {
      assetId: CURRENCY,
      from: sender.wallet,
      to: recipient.wallet,
      amount: centsToAmount(BigInt(randomInt(1, 101))),
    };
  };
  return legs === undefined
    ? requestsFrom(users, '/api/v1/transfer', move)
    : requestsFrom(users, '/api/v1/transfer/batch', (sender) => ({
        legs: Array.from({ length: legs }, () => move(sender)),
      }));
}

export function centsToAmount(cents: bigint): string {
  return `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
}

function amountToCents(amount: string): bigint {
  const [whole, fraction = ''] = amount.split('.');
  return BigInt(whole) * 100n + BigInt(fraction.padEnd(2, '0'));
}

/**
 * Reads the currency's supply and every wallet's balance through the API, two ways (each wallet's
 * holdings, and the asset's owner list), and prints the checks.
 */
export async function checkInvariants(service: Service, users: Session[]): Promise<void> {
  const asset = await call<{ totalSupply: string }>(service.baseUrl, 'GET', `/assets/${CURRENCY}`, {
    session: users[0],
  });
  const balances: string[] = [];
  await forEachLimit(users, 8, async (user) => {
    const page = await call<{ data: { asset: { id: string }; balance: string }[] }>(
      service.baseUrl,
      'GET',
      `/wallets/${user.wallet}/assets?kind=fungible&limit=100`,
      { session: user },
    );
    for (const holding of page.data) if (holding.asset.id === CURRENCY) balances.push(holding.balance);
  });
  const owners = await allOwners(service, users[0]);
  const supply = amountToCents(asset.totalSupply);
  const minted = MINTED_PER_WALLET * BigInt(WALLETS);
  const sum = (amounts: string[]) => amounts.reduce((total, amount) => total + signedCents(amount), 0n);
  const negative = [...balances, ...owners.map((owner) => owner.balance)].filter((amount) =>
    amount.startsWith('-'),
  );
  const checks: [string, boolean][] = [
    [`no negative balance (${negative.length} seen)`, negative.length === 0],
    [
      `sum over the ${WALLETS} wallets ${centsToAmount(sum(balances))} == totalSupply ${asset.totalSupply}`,
      sum(balances) === supply,
    ],
    [
      `sum over the ${owners.length} listed owners ${centsToAmount(sum(owners.map((owner) => owner.balance)))} == totalSupply`,
      sum(owners.map((owner) => owner.balance)) === supply,
    ],
    [`totalSupply == minted ${centsToAmount(minted)}`, supply === minted],
  ];
  for (const [check, ok] of checks) console.log(`invariant ${ok ? 'OK  ' : 'FAIL'} ${check}`);
  if (checks.some(([, ok]) => !ok)) process.exitCode = 1;
}

/** Amounts are never negative by contract; a '-' is parsed anyway so that a broken one is counted, not thrown. */
function signedCents(amount: string): bigint {
  return amount.startsWith('-') ? -amountToCents(amount.slice(1)) : amountToCents(amount);
}

/** Every holder of the currency with its balance (GET /assets/{id}/owners, all pages). */
async function allOwners(service: Service, reader: Session): Promise<{ wallet: string; balance: string }[]> {
  const owners: { wallet: string; balance: string }[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
    const page: { data: { wallet: string; balance: string }[]; next_cursor: string | null } = await call(
      service.baseUrl,
      'GET',
      `/assets/${CURRENCY}/owners?limit=100${query}`,
      { session: reader },
    );
    owners.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return owners;
}
