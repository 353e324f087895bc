// After the run, with the service up and quiet: compares what clients were told with what the service
// stored and what subscribers received. Every check reads through the public API.
import { call, type Session } from '../../lib/api.ts';
import { forEachLimit } from '../../lib/concurrency.ts';
import { type Ledger, parseUnits } from './ledger-setup.ts';
import { allPages, type EventEnvelope, eventsAfter } from './rest.ts';
import type { ResumingSubscriber } from './subscriber.ts';
import type { WriteRequest } from './writes.ts';

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

export interface TransferFindings {
  acknowledged: number;
  /** Acknowledged transfers that GET /api/v1/transfers/{id} returns with the requested fields. */
  found: number;
  /** newTransfer events after the set-up (one per committed transfer or mint). */
  events: number;
  /** Acknowledged transfers with no event. */
  missingEvents: string[];
  /** Committed transfers no client got a 2xx for: a doubled retry, or a refused request that wrote. */
  unacknowledged: EventEnvelope[];
  /** Transfers with more than one event. */
  duplicateEvents: string[];
  /** Wallets whose GET /api/v1/transfers?wallet= history differs from the acknowledged one. */
  walletHistoryMismatches: string[];
  walletsChecked: number;
}

export interface PriceFindings {
  acknowledged: number;
  events: number;
  missing: number;
  extra: number;
}

export interface SupplyFindings {
  currency: string;
  totalSupply: bigint;
  expectedSupply: bigint;
  sumOfBalances: bigint;
  holders: number;
  negativeBalances: number;
  /** Holders whose balance differs from set-up + acknowledged transfers and mints. */
  balanceMismatches: number;
}

export interface SubscriberFindings {
  name: string;
  expected: number;
  received: number;
  duplicates: number;
  outOfOrder: number;
  gaps: number;
  /** The first missing ids, each with the resume point (`lastEventId`) before it. */
  missing: string[];
  unexpected: number;
  resumes: number;
  /** Connection attempts that failed only after 2 s or more (see ResumingSubscriber). */
  slowHandshakes: number;
  problems: string[];
}

export interface Findings {
  transfers: TransferFindings;
  prices: PriceFindings;
  supplies: SupplyFindings[];
  subscribers: SubscriberFindings[];
}

const lower = (address: string) => address.toLowerCase();

export async function verify(options: {
  baseUrl: string;
  reader: Session;
  ledger: Ledger;
  requests: readonly WriteRequest[];
  /** The newest event id before the load started. */
  watermark: bigint;
  subscribers: readonly ResumingSubscriber[];
  catchUpTimeoutMs: number;
}): Promise<Findings> {
  const { baseUrl, reader, ledger, requests, watermark } = options;
  const events = await eventsAfter(baseUrl, reader, watermark);
  return {
    transfers: await checkTransfers(baseUrl, reader, ledger, requests, events),
    prices: checkPrices(requests, events),
    supplies: await checkSupplies(baseUrl, reader, ledger, requests),
    subscribers: await checkSubscribers(options),
  };
}

async function checkTransfers(
  baseUrl: string,
  reader: Session,
  ledger: Ledger,
  requests: readonly WriteRequest[],
  events: EventEnvelope[],
): Promise<TransferFindings> {
  const acknowledged = requests.filter((request) => request.transferId !== undefined);
  let found = 0;
  await forEachLimit(acknowledged, 8, async (request) => {
    const transfer = await call<Record<string, string>>(
      baseUrl,
      'GET',
      `/api/v1/transfers/${request.transferId}`,
      { session: reader },
    ).catch(() => undefined);
    if (transfer && sameTransfer(request, transfer)) found++;
  });

  const eventsPerTransfer = new Map<string, EventEnvelope[]>();
  for (const event of events.filter((each) => each.type === 'newTransfer')) {
    const list = eventsPerTransfer.get(event.data.id) ?? [];
    list.push(event);
    eventsPerTransfer.set(event.data.id, list);
  }
  const acknowledgedIds = new Set(acknowledged.map((request) => request.transferId as string));

  const walletHistoryMismatches: string[] = [];
  await forEachLimit(ledger.players, 4, async (player) => {
    const history = await allPages<{ id: string }>(
      baseUrl,
      reader,
      `/api/v1/transfers?wallet=${player.wallet}`,
    );
    const ids = new Set(history.map((transfer) => transfer.id));
    const expected = acknowledged.filter((request) => involves(request, player.wallet));
    // Besides the acknowledged ones: one set-up mint per currency.
    const complete =
      expected.every((request) => ids.has(request.transferId as string)) &&
      ids.size === history.length &&
      history.length === expected.length + ledger.currencies.length;
    if (!complete) {
      walletHistoryMismatches.push(
        `${player.wallet}: ${history.length} listed, ${expected.length} acknowledged + ${ledger.currencies.length} set-up mints`,
      );
    }
  });

  return {
    acknowledged: acknowledged.length,
    found,
    events: [...eventsPerTransfer.values()].reduce((sum, list) => sum + list.length, 0),
    missingEvents: [...acknowledgedIds].filter((id) => !eventsPerTransfer.has(id)),
    unacknowledged: [...eventsPerTransfer.entries()]
      .filter(([id]) => !acknowledgedIds.has(id))
      .map(([, list]) => list[0]),
    duplicateEvents: [...eventsPerTransfer.entries()].filter(([, list]) => list.length > 1).map(([id]) => id),
    walletHistoryMismatches,
    walletsChecked: ledger.players.length,
  };
}

function sameTransfer(request: WriteRequest, transfer: Record<string, string>): boolean {
  const assetId = request.kind === 'mint' ? request.path.split('/')[4] : request.body.assetId;
  const from = request.kind === 'mint' ? ZERO_ADDRESS : request.body.from;
  return (
    transfer.id === request.transferId &&
    transfer.assetId === assetId &&
    lower(transfer.from) === lower(from) &&
    lower(transfer.to) === lower(request.body.to) &&
    parseUnits(transfer.amount) === parseUnits(request.body.amount) &&
    transfer.status === 'completed'
  );
}

function involves(request: WriteRequest, wallet: string): boolean {
  return (
    lower(request.body.to) === lower(wallet) ||
    (request.kind === 'transfer' && lower(request.body.from) === lower(wallet))
  );
}

function checkPrices(requests: readonly WriteRequest[], events: EventEnvelope[]): PriceFindings {
  const acknowledged = requests.filter(
    (request) => request.kind === 'price' && request.status !== undefined && request.status < 300,
  );
  const posted = new Map<string, number>();
  for (const event of events.filter((each) => each.type === 'priceUpdate')) {
    const key = `${event.data.assetId} ${canonicalDecimal(event.data.price)}`;
    posted.set(key, (posted.get(key) ?? 0) + 1);
  }
  let missing = 0;
  for (const request of acknowledged) {
    const key = `${request.path.split('/')[4]} ${canonicalDecimal(request.body.price)}`;
    const count = posted.get(key) ?? 0;
    if (count === 0) missing++;
    else posted.set(key, count - 1);
  }
  const priceEvents = events.filter((each) => each.type === 'priceUpdate').length;
  return {
    acknowledged: acknowledged.length,
    events: priceEvents,
    missing,
    extra: [...posted.values()].reduce((sum, count) => sum + count, 0),
  };
}

/** "12.2500" and "12.25" name the same price. */
function canonicalDecimal(text: string): string {
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}

async function checkSupplies(
  baseUrl: string,
  reader: Session,
  ledger: Ledger,
  requests: readonly WriteRequest[],
): Promise<SupplyFindings[]> {
  const findings: SupplyFindings[] = [];
  for (const currency of ledger.currencies) {
    const expected = new Map(ledger.players.map((player) => [lower(player.wallet), ledger.initialBalance]));
    let expectedSupply = ledger.initialBalance * BigInt(ledger.players.length);
    for (const request of requests) {
      if (request.transferId === undefined) continue;
      const amount = parseUnits(request.body.amount);
      const to = lower(request.body.to);
      if (request.kind === 'mint' && request.path.split('/')[4] === currency) {
        expectedSupply += amount;
        expected.set(to, (expected.get(to) ?? 0n) + amount);
      } else if (request.kind === 'transfer' && request.body.assetId === currency) {
        const from = lower(request.body.from);
        expected.set(from, (expected.get(from) ?? 0n) - amount);
        expected.set(to, (expected.get(to) ?? 0n) + amount);
      }
    }
    const asset = await call<{ totalSupply: string }>(baseUrl, 'GET', `/assets/${currency}`, {
      session: reader,
    });
    const owners = await allPages<{ wallet: string; balance: string }>(
      baseUrl,
      reader,
      `/assets/${currency}/owners`,
    );
    let sumOfBalances = 0n;
    let negativeBalances = 0;
    let balanceMismatches = 0;
    for (const owner of owners) {
      const balance = parseUnits(owner.balance);
      sumOfBalances += balance;
      if (balance < 0n) negativeBalances++;
      if (balance !== (expected.get(lower(owner.wallet)) ?? 0n)) balanceMismatches++;
      expected.delete(lower(owner.wallet));
    }
    // A wallet expected to hold something but not listed is a mismatch too.
    balanceMismatches += [...expected.values()].filter((balance) => balance !== 0n).length;
    findings.push({
      currency,
      totalSupply: parseUnits(asset.totalSupply),
      expectedSupply,
      sumOfBalances,
      holders: owners.length,
      negativeBalances,
      balanceMismatches,
    });
  }
  return findings;
}

async function checkSubscribers(options: {
  baseUrl: string;
  reader: Session;
  watermark: bigint;
  subscribers: readonly ResumingSubscriber[];
  catchUpTimeoutMs: number;
}): Promise<SubscriberFindings[]> {
  const findings: SubscriberFindings[] = [];
  for (const subscriber of options.subscribers) {
    const { name, events: types, ...filters } = subscriber.spec;
    // The REST catch-up with the same filters is the reference.
    const expected = await eventsAfter(options.baseUrl, options.reader, options.watermark, {
      types,
      ...filters,
    });
    const expectedIds = expected.map((event) => BigInt(event.id));
    if (expectedIds.length > 0) {
      await subscriber.caughtUp(expectedIds[expectedIds.length - 1], options.catchUpTimeoutMs);
    }
    const received = [...subscriber.received];
    const receivedSet = new Set(received);
    const expectedSet = new Set(expectedIds);
    let outOfOrder = 0;
    for (let index = 1; index < received.length; index++) {
      if (received[index] <= received[index - 1]) outOfOrder++;
    }
    findings.push({
      name,
      expected: expectedIds.length,
      received: received.length,
      duplicates: received.length - receivedSet.size,
      outOfOrder,
      gaps: expectedIds.filter((id) => !receivedSet.has(id)).length,
      missing: expectedIds
        .filter((id) => !receivedSet.has(id))
        .slice(0, 5)
        .map((id) => {
          const resumedAfter = subscriber.resumePoints.filter((point) => point < id).at(-1);
          return `${id} (resumed after ${resumedAfter ?? 'none'}; resume points ${subscriber.resumePoints.join(', ')})`;
        }),
      unexpected: [...receivedSet].filter((id) => !expectedSet.has(id)).length,
      resumes: subscriber.resumes,
      slowHandshakes: subscriber.slowHandshakes.length,
      problems: subscriber.problems.slice(0, 5),
    });
  }
  return findings;
}
