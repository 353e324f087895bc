// Issue 30.10, second half: a user refuses every trade proposal from one proposer. The refusal cancels
// the proposer's open proposals to the refuser (as a cancellation by the refuser), and the proposer's
// next ones answer 403 /problems/trade-refused and create nothing; a refusal counts per account (a
// service account's proposals are its owner's, and so are its wallets and its refusals). Through the
// real app over HTTP, every response checked against the contract, on SQLite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { economyHttp } from '../../helpers/economy-http.ts';
import { type HttpUser, httpServiceAccount, httpUser } from '../../helpers/ledger-fixtures.ts';

const metadata = { image: 'https://cdn.example.com/item.png', attributes: [], creator: 'Example Studio' };
const UNKNOWN_USER = 'usr_01JD3Z5Q8W2E4R6T8Y0V2X4M6P';

describe.each(DB_KINDS)('refusing trade proposals on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  const { call } = economyHttp(
    () => t,
    () => studio,
  );

  async function fund(user: HttpUser): Promise<HttpUser> {
    const minted = await call(studio, 'POST', '/api/v1/currencies/refgold/mint', {
      to: user.wallet,
      amount: '100',
    });
    expect(minted.status, minted.text).toBe(201);
    return user;
  }
  const trader = async () => fund(await httpUser(t));

  const propose = (from: HttpUser, toWallet: string) =>
    call(from, 'POST', '/api/v1/trades', {
      fromWallet: from.wallet,
      toWallet,
      offer: [{ assetId: 'refgold', amount: '1' }],
      request: [{ assetId: 'refgold', amount: '2' }],
    });
  const refuse = (user: HttpUser, userId: string) => call(user, 'PUT', `/api/v1/trades/refusals/${userId}`);
  const refusals = async (user: HttpUser, query = '') => {
    const listed = await call(user, 'GET', `/api/v1/trades/refusals${query}`);
    expect(listed.status, listed.text).toBe(200);
    return listed.body as { data: { userId: string }[]; next_cursor: string | null };
  };
  const tradesOf = async (user: HttpUser) => {
    const listed = await call(user, 'GET', '/api/v1/trades?limit=100');
    expect(listed.status, listed.text).toBe(200);
    return listed.body.data as { id: string; status: string; closedBy: string | null }[];
  };

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    studio = await httpUser(t, 'studio');
    expect((await call(studio, 'POST', '/api/v1/collections', { id: 'refusals', name: 'R' })).status).toBe(
      201,
    );
    const created = await call(studio, 'POST', '/api/v1/currencies', {
      id: 'refgold',
      name: 'Refusal gold',
      symbol: 'REFG',
      decimals: 0,
      collection: 'refusals',
      metadata,
    });
    expect(created.status, created.text).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('30.10: refusing a proposer cancels its open proposals to the caller; its next one is 403 trade-refused and creates nothing; removing the refusal lets it propose again', async () => {
    const [spammer, victim, bystander] = [await trader(), await trader(), await trader()];
    const spam = [
      (await propose(spammer, victim.wallet)).body.id,
      (await propose(spammer, victim.wallet)).body.id,
    ];
    const elsewhere = (await propose(spammer, bystander.wallet)).body.id;
    const fromVictim = (await propose(victim, spammer.wallet)).body.id;

    const refused = await refuse(victim, spammer.userId);
    expect(refused.status, refused.text).toBe(200);
    expect(refused.body.userId).toBe(spammer.userId);
    expect([...refused.body.cancelledTrades].sort()).toEqual([...spam].sort());
    const byId = new Map((await tradesOf(victim)).map((trade) => [trade.id, trade]));
    for (const id of spam)
      expect(byId.get(id)).toMatchObject({ status: 'cancelled', closedBy: victim.userId });
    // Only the refused proposer's proposals to the refuser: the others stay open.
    expect(byId.get(fromVictim)?.status).toBe('open');
    expect((await call(bystander, 'GET', `/api/v1/trades/${elsewhere}`)).body.status).toBe('open');

    const before = (await tradesOf(spammer)).length;
    const again = await propose(spammer, victim.wallet);
    expect([again.status, again.body.type]).toEqual([403, '/problems/trade-refused']);
    expect(await tradesOf(spammer)).toHaveLength(before);
    // Proposals to others are not refused.
    expect((await propose(spammer, bystander.wallet)).status).toBe(201);

    const twice = await refuse(victim, spammer.userId);
    expect(twice.status, twice.text).toBe(200);
    expect(twice.body).toMatchObject({ userId: spammer.userId, cancelledTrades: [] });
    expect(twice.body.createdAt).toBe(refused.body.createdAt);
    expect((await refusals(victim)).data.map((refusal) => refusal.userId)).toEqual([spammer.userId]);

    const removed = await call(victim, 'DELETE', `/api/v1/trades/refusals/${spammer.userId}`);
    expect(removed.status, removed.text).toBe(204);
    expect((await refusals(victim)).data).toEqual([]);
    expect((await propose(spammer, victim.wallet)).status).toBe(201);
    const gone = await call(victim, 'DELETE', `/api/v1/trades/refusals/${spammer.userId}`);
    expect([gone.status, gone.body.type]).toEqual([404, '/problems/not-found']);
    // Cancelled proposals stay cancelled.
    for (const id of spam)
      expect((await call(victim, 'GET', `/api/v1/trades/${id}`)).body.status).toBe('cancelled');
  });

  it("30.10: a refusal counts per account: it refuses the proposer's service accounts, covers the refuser's service-account wallets, and a service account named is refused through its owner", async () => {
    const [spammer, victim] = [await trader(), await trader()];
    const spammerMachine = await fund(await httpServiceAccount(t, spammer));
    const victimMachine = await fund(await httpServiceAccount(t, victim));
    const open = (await propose(spammerMachine, victimMachine.wallet)).body.id;

    // The victim names the spammer's service account: the spammer (its owner) is refused.
    const refused = await refuse(victim, spammerMachine.userId);
    expect(refused.status, refused.text).toBe(200);
    expect(refused.body).toMatchObject({ userId: spammer.userId, cancelledTrades: [open] });
    for (const [from, to] of [
      [spammer, victim.wallet],
      [spammer, victimMachine.wallet],
      [spammerMachine, victim.wallet],
      [spammerMachine, victimMachine.wallet],
    ] as const) {
      const proposed = await propose(from, to);
      expect([proposed.status, proposed.body.type]).toEqual([403, '/problems/trade-refused']);
    }
    // The victim's service account reads (and answers for) its owner's refusals.
    expect((await refusals(victimMachine)).data.map((refusal) => refusal.userId)).toEqual([spammer.userId]);
    const removed = await call(victimMachine, 'DELETE', `/api/v1/trades/refusals/${spammerMachine.userId}`);
    expect(removed.status, removed.text).toBe(204);
    expect((await propose(spammerMachine, victim.wallet)).status).toBe(201);
  });

  it("30.10: refusing oneself or one's own service account is 400, an unknown user 404, a malformed id 400; nothing is stored", async () => {
    const [user, other] = [await trader(), await trader()];
    const machine = await httpServiceAccount(t, user);
    for (const [by, id] of [
      [user, user.userId],
      [user, machine.userId],
      [machine, user.userId],
    ] as const) {
      const refused = await refuse(by, id);
      expect([refused.status, refused.body.type], refused.text).toEqual([400, '/problems/validation-failed']);
    }
    const unknown = await refuse(user, UNKNOWN_USER);
    expect([unknown.status, unknown.body.type]).toEqual([404, '/problems/not-found']);
    const malformed = await refuse(user, 'not-a-user');
    expect([malformed.status, malformed.body.type]).toEqual([400, '/problems/validation-failed']);
    const removeUnknown = await call(user, 'DELETE', `/api/v1/trades/refusals/${UNKNOWN_USER}`);
    expect(removeUnknown.status).toBe(404);
    expect((await refusals(user)).data).toEqual([]);
    // Proposals between them still work both ways.
    expect((await propose(user, other.wallet)).status).toBe(201);
    expect((await propose(other, user.wallet)).status).toBe(201);
  });

  it('30.10: another user neither sees nor removes your refusals', async () => {
    const [victim, spammer, nosy] = [await trader(), await trader(), await trader()];
    expect((await refuse(victim, spammer.userId)).status).toBe(200);
    expect((await refusals(nosy)).data).toEqual([]);
    const removed = await call(nosy, 'DELETE', `/api/v1/trades/refusals/${spammer.userId}`);
    expect([removed.status, removed.body.type]).toEqual([404, '/problems/not-found']);
    expect((await refusals(victim)).data.map((refusal) => refusal.userId)).toEqual([spammer.userId]);
    const proposed = await propose(spammer, victim.wallet);
    expect([proposed.status, proposed.body.type]).toEqual([403, '/problems/trade-refused']);
    // The refused proposer does not see who refuses it either.
    expect((await refusals(spammer)).data).toEqual([]);
  });

  it('30.10: the refusal list pages newest first with limit and cursor', async () => {
    const user = await trader();
    const refused: string[] = [];
    for (let i = 0; i < 3; i++) {
      const other = await httpUser(t);
      expect((await refuse(user, other.userId)).status).toBe(200);
      refused.push(other.userId);
    }
    const first = await refusals(user, '?limit=2');
    expect(first.data.map((refusal) => refusal.userId)).toEqual([refused[2], refused[1]]);
    expect(first.next_cursor).not.toBeNull();
    const second = await refusals(user, `?limit=2&cursor=${first.next_cursor}`);
    expect(second).toEqual({ data: [expect.objectContaining({ userId: refused[0] })], next_cursor: null });
    const foreign = await call(user, 'GET', '/api/v1/trades/refusals?cursor=eyJsIjoidHJhZGVzIiwiayI6IngifQ');
    expect([foreign.status, foreign.body.type]).toEqual([400, '/problems/validation-failed']);
  });
});
