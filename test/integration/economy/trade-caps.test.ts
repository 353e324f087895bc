// Issue 30.10: open trade proposals were unlimited (200 seven-day proposals filled a victim's trade
// list in 0.9 s). A proposer (with its service accounts) has at most MAX_OPEN_TRADES_PER_PROPOSER
// open proposals, a wallet receives at most MAX_OPEN_TRADES_PER_COUNTERPARTY; a closed proposal frees
// its place. Through the real app over HTTP, every response checked against the contract, on SQLite
// and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };
const PER_PROPOSER = 3;
const PER_COUNTERPARTY = 4;

describe.each(DB_KINDS)('caps on open trade proposals on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  const { call } = economyHttp(
    () => t,
    () => studio,
  );

  /** A player holding 100 gold. */
  async function trader(): Promise<HttpUser> {
    const user = await httpUser(t);
    const minted = await call(studio, 'POST', '/api/v1/currencies/capgold/mint', {
      to: user.wallet,
      amount: '100',
    });
    expect(minted.status, minted.text).toBe(201);
    return user;
  }

  const propose = (from: HttpUser, to: HttpUser) =>
    call(from, 'POST', '/api/v1/trades', {
      fromWallet: from.wallet,
      toWallet: to.wallet,
      offer: [{ assetId: 'capgold', amount: '1' }],
      request: [{ assetId: 'capgold', amount: '2' }],
      expiresIn: 604_800,
    });

  beforeAll(async () => {
    t = await startTestApp(kind, {
      RATE_LIMIT_REQUESTS: '100000',
      RATE_LIMIT_USER_REQUESTS: '100000',
      MAX_OPEN_TRADES_PER_PROPOSER: String(PER_PROPOSER),
      MAX_OPEN_TRADES_PER_COUNTERPARTY: String(PER_COUNTERPARTY),
    });
    studio = await httpUser(t, 'studio');
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'caps', name: 'Caps' })).status).toBe(
      201,
    );
    const created = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'capgold',
      name: 'Cap gold',
      symbol: 'CAPG',
      decimals: 0,
      collection: 'caps',
      metadata,
    });
    expect(created.status, created.text).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('30.10: a proposer has at most MAX_OPEN_TRADES_PER_PROPOSER open proposals; a cancelled one frees its place', async () => {
    const [spammer, victim] = [await trader(), await trader()];
    const made: string[] = [];
    for (let i = 0; i < PER_PROPOSER; i++) {
      const proposed = await propose(spammer, victim);
      expect(proposed.status, proposed.text).toBe(201);
      made.push(proposed.body.id);
    }
    const over = await propose(spammer, victim);
    expect([over.status, over.body.type]).toEqual([409, '/problems/quota-exceeded']);
    const listed = await call(victim, 'GET', '/api/v1/trades?status=open');
    expect(listed.body.data).toHaveLength(PER_PROPOSER);
    expect((await call(spammer, 'POST', `/api/v1/trades/${made[0]}/cancel`)).status).toBe(200);
    expect((await propose(spammer, victim)).status).toBe(201);
  });

  it('30.10: a wallet receives at most MAX_OPEN_TRADES_PER_COUNTERPARTY open proposals, whoever proposes', async () => {
    const victim = await trader();
    const proposers = [await trader(), await trader(), await trader()];
    const statuses: number[] = [];
    for (const proposer of proposers)
      for (let i = 0; i < 2; i++) statuses.push((await propose(proposer, victim)).status);
    expect(statuses).toEqual([201, 201, 201, 201, 409, 409]);
    // Another wallet is not affected.
    expect((await propose(proposers[2], proposers[0])).status).toBe(201);
  });
});
