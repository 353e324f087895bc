// Issue 30.7: one user's slow receivers held up every other user's webhooks. Listing (or repairing) a
// subscription's deliveries waited for every request in flight on the instance, and one user's
// subscriptions could take every delivery slot. Here one user has 20 receivers on loopback that hold
// every request unanswered; another user's deliveries and its delivery listing stay fast. On SQLite
// and PostgreSQL, every response checked against the contract.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { type Receiver, startReceiver } from './receiver.ts';

const METADATA = { image: 'https://cdn.example-game.com/x.png', attributes: [], creator: 'tests' };
const SLOW_RECEIVERS = 20;
/** How long a held request lasts (the stall the victim saw before, at most). */
const TIMEOUT_MS = 8000;
/** Generous for a loaded 2-core machine, well below the stall (normally a few ms to tens of ms). */
const LISTING_BOUND_MS = 1500;
const DELIVERY_BOUND_MS = 3000;

describe.each(DB_KINDS)('webhook isolation between users on %s', (kind) => {
  let t: TestApp;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    t = await startTestApp(kind, {
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      MAX_WEBHOOKS_PER_USER: String(SLOW_RECEIVERS),
      RATE_LIMIT_ACCOUNT_REQUESTS: '1000',
    });
  });
  afterAll(async () => {
    for (const receiver of receivers) await receiver.close();
    await t?.close();
  });

  async function subscribe(user: HttpUser, receiver: Receiver, filter?: Record<string, string>) {
    const created = await t.http('POST', '/api/v1/webhooks', {
      body: { url: receiver.url, eventTypes: ['newNFT'], ...(filter && { filter }) },
      headers: user.headers,
    });
    expect(created.status, created.text).toBe(201);
    return created.body.id as string;
  }

  async function mint(user: HttpUser, name: string): Promise<void> {
    const nft = await t.http('POST', '/api/v1/nft/create', {
      body: { name, metadata: METADATA },
      headers: user.headers,
    });
    expect(nft.status, nft.text).toBe(201);
  }

  it("30.7: another user's 20 slow receivers hold up neither a user's deliveries nor its delivery listing", async () => {
    const attacker = await httpUser(t);
    const slow: Receiver[] = [];
    for (let i = 0; i < SLOW_RECEIVERS; i++) {
      const receiver = await startReceiver();
      receiver.script('hang', 'hang', 'hang');
      receivers.push(receiver);
      slow.push(receiver);
      await subscribe(attacker, receiver);
    }
    await mint(attacker, 'Bait');
    // Requests held by the attacker's receivers (as many as it was given slots).
    await Promise.any(slow.map((receiver) => receiver.waitFor(1)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(slow.filter((receiver) => receiver.received.length > 0).length).toBeGreaterThan(0);

    const victim = await httpUser(t);
    const own = await startReceiver();
    receivers.push(own);
    const id = await subscribe(victim, own, { walletId: victim.wallet });
    const minted = Date.now();
    await mint(victim, 'Mine');
    await own.waitFor(1, TIMEOUT_MS * 2);
    const deliveredMs = Date.now() - minted;

    const listed = Date.now();
    const page = await t.http('GET', `/api/v1/webhooks/${id}/deliveries?limit=10`, {
      headers: victim.headers,
    });
    const listingMs = Date.now() - listed;
    expect(page.status, page.text).toBe(200);
    expect(page.body.data.map((row: { status: string }) => row.status)).toEqual(['succeeded']);
    expect(listingMs, `listing took ${listingMs} ms`).toBeLessThan(LISTING_BOUND_MS);
    expect(deliveredMs, `delivery took ${deliveredMs} ms`).toBeLessThan(DELIVERY_BOUND_MS);
  });
});
