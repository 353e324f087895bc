// The ledger the crash test and the soak run on, set up through the public API: a studio with a
// collection and currencies, supply minted to every player's custodial wallet, an oracle.
import { call, createCollection, createCurrency, createUser, type Session } from '../../lib/api.ts';
import { forEachLimit } from '../../lib/concurrency.ts';
import type { Service } from '../../lib/service.ts';

export interface Ledger {
  studio: Session;
  oracle: Session;
  players: Session[];
  /** Currency ids, 2 decimals each. */
  currencies: string[];
  collection: string;
  /** Base units (hundredths) minted to every player of every currency during set-up. */
  initialBalance: bigint;
}

/** 1,000,000.00: far more than a run moves, so a transfer is refused only if something is wrong. */
const INITIAL_BALANCE = 100_000_000n;

export async function setUpLedger(
  service: Service,
  options: { players: number; currencies: number },
): Promise<Ledger> {
  const [studio, oracle] = [await createUser(service, 'studio'), await createUser(service, 'oracle')];
  const players: Session[] = [];
  // Registration runs the password KDF: a few at a time.
  await forEachLimit(Array.from({ length: options.players }), 4, async () => {
    players.push(await createUser(service));
  });
  const collection = 'chaos';
  await createCollection(service, studio, collection);
  const currencies = Array.from({ length: options.currencies }, (_, index) => `chaos-coin-${index + 1}`);
  for (const currency of currencies) await createCurrency(service, studio, currency, collection);
  await forEachLimit(players, 4, async (player) => {
    for (const currency of currencies) {
      await call(service.baseUrl, 'POST', `/api/v1/currencies/${currency}/mint`, {
        session: studio,
        body: { to: player.wallet, amount: formatUnits(INITIAL_BALANCE) },
      });
    }
  });
  return { studio, oracle, players, currencies, collection, initialBalance: INITIAL_BALANCE };
}

/** Hundredths as a decimal string with 2 fractional digits ("12.05"). */
export function formatUnits(units: bigint): string {
  const sign = units < 0n ? '-' : '';
  const magnitude = units < 0n ? -units : units;
  return `${sign}${magnitude / 100n}.${String(magnitude % 100n).padStart(2, '0')}`;
}

/** A decimal string of a 2-decimals currency ("12.5", "3") as hundredths. */
export function parseUnits(text: string): bigint {
  const match = /^(-?)(\d+)(?:\.(\d{1,2}))?$/.exec(text);
  if (!match) throw new Error(`not an amount with at most 2 decimals: ${text}`);
  const units = BigInt(match[2]) * 100n + BigInt((match[3] ?? '').padEnd(2, '0'));
  return match[1] === '-' ? -units : units;
}
