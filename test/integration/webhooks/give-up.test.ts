// The end of a webhook's retries (issue 18), with the periods shortened: a delivery still failing
// WEBHOOK_RETRY_WINDOW_SECONDS after its first attempt is given up (`failed`), its subscription is
// marked `failing` (with `failingSince`) and goes on with the next event; a subscription still failing
// WEBHOOK_DISABLE_AFTER_SECONDS after `failingSince` is disabled. And the webhook metrics in /metrics
// move with what the dispatcher does (attempts by outcome, attempt duration, commit-to-delivery lag,
// backlog and subscriptions by state, the stages of a delivery's time).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { type Receiver, startReceiver, verified } from './receiver.ts';

const METADATA = { image: 'https://cdn.example-game.com/x.png', attributes: [], creator: 'tests' };

/** A sample's value in the Prometheus text exposition (0 when the series is absent). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe.each(DB_KINDS)('webhook give-up and metrics on %s', (kind) => {
  let t: TestApp;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    t = await startTestApp(kind, {
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      WEBHOOK_RETRY_BASE_MS: '50',
      WEBHOOK_TIMEOUT_MS: '400',
      WEBHOOK_RETRY_WINDOW_SECONDS: '1',
      WEBHOOK_DISABLE_AFTER_SECONDS: '1',
      RATE_LIMIT_ACCOUNT_REQUESTS: '1000',
    });
  });
  afterAll(async () => {
    for (const receiver of receivers) await receiver.close();
    await t?.close();
  });

  async function subscribed(user: HttpUser) {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const created = await t.http('POST', '/api/v1/webhooks', {
      body: { url: receiver.url, eventTypes: ['newNFT'], filter: { walletId: user.wallet } },
      headers: user.headers,
    });
    expect(created.status, created.text).toBe(201);
    return { id: created.body.id as string, secret: created.body.secret as string, receiver };
  }

  async function mint(user: HttpUser, name: string): Promise<string> {
    const nft = await t.http('POST', '/api/v1/nft/create', {
      body: { name, metadata: METADATA },
      headers: user.headers,
    });
    expect(nft.status, nft.text).toBe(201);
    return nft.body.id;
  }

  /**
   * A gauge read from the database when scraped, polled: a scrape whose read takes over a second
   * shows the gauge's last value (src/observability/metrics.ts, `watchWebhookBacklog`), as it did on a
   * loaded CI machine (`active` still 0, from the scrape before the subscription).
   */
  const scraped = (series: string) =>
    expect.poll(async () => sample((await t.http('GET', '/metrics')).text, series), { message: series });

  /** Polls the subscription until `done` holds for it (every answer checked against the contract). */
  async function until(user: HttpUser, id: string, done: (hook: Record<string, unknown>) => boolean) {
    for (let i = 0; i < 150; i++) {
      const hook = await t.http('GET', `/api/v1/webhooks/${id}`, { headers: user.headers });
      expect(hook.status, hook.text).toBe(200);
      if (done(hook.body)) return hook.body;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`webhook ${id} did not reach the expected state`);
  }

  it('gives a delivery up after the retry window, marks the subscription failing, goes on, then disables it', async () => {
    const user = await httpUser(t);
    const { id, secret, receiver } = await subscribed(user);
    receiver.script(...Array<number>(1000).fill(500));
    const before = (await t.http('GET', '/metrics')).text;
    const first = await mint(user, 'Doomed');

    const failing = await until(user, id, (hook) => hook.status === 'failing');
    expect(failing).toMatchObject({ enabled: true, status: 'failing' });
    expect(typeof failing.failingSince).toBe('string');
    expect(receiver.received.every((request) => verified(secret, request).data.id === first)).toBe(true);
    let listed = await t.http('GET', `/api/v1/webhooks/${id}/deliveries`, { headers: user.headers });
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0]).toMatchObject({
      status: 'failed',
      lastStatusCode: 500,
      nextAttemptAt: null,
      deliveredAt: null,
    });
    // The service's count of attempts is the reference: on a loaded machine an attempt can time out
    // (WEBHOOK_TIMEOUT_MS) before its request reaches the receiver, never the other way round.
    const attemptsOfFirst: number = listed.body.data[0].attempts;
    expect(attemptsOfFirst).toBeGreaterThanOrEqual(2);
    expect(receiver.received.length).toBeGreaterThanOrEqual(1);
    expect(receiver.received.length).toBeLessThanOrEqual(attemptsOfFirst);
    const heardOfFirst = receiver.received.length;

    // The next event is sent (the given-up one no longer holds it back), fails the same way, and is
    // given up more than WEBHOOK_DISABLE_AFTER_SECONDS after failingSince: the subscription is disabled.
    const second = await mint(user, 'Also doomed');
    const disabled = await until(user, id, (hook) => hook.status === 'disabled');
    expect(disabled).toMatchObject({
      enabled: false,
      status: 'disabled',
      failingSince: failing.failingSince,
    });
    expect(
      receiver.received.slice(heardOfFirst).map((request) => verified(secret, request).data.id),
    ).toContain(second);
    listed = await t.http('GET', `/api/v1/webhooks/${id}/deliveries`, { headers: user.headers });
    expect(listed.body.data.map((delivery: { status: string }) => delivery.status)).toEqual([
      'failed',
      'failed',
    ]);
    const attempts = listed.body.data.reduce(
      (sum: number, delivery: { attempts: number }) => sum + delivery.attempts,
      0,
    );
    expect(receiver.received.length).toBeLessThanOrEqual(attempts);

    // Disabled: nothing more is sent.
    const sent = receiver.received.length;
    const unheard = await mint(user, 'Unheard');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.received).toHaveLength(sent);

    const after = (await t.http('GET', '/metrics')).text;
    const moved = (series: string) => sample(after, series) - sample(before, series);
    expect(moved('webhook_attempts_total{outcome="given_up"}')).toBe(2);
    expect(moved('webhook_attempts_total{outcome="failed"}')).toBe(attempts - 2);
    expect(moved('webhook_attempt_duration_seconds_count{outcome="failed"}')).toBe(attempts - 2);
    await scraped('webhook_backlog{state="failed"}').toBeGreaterThanOrEqual(2);
    await scraped('webhook_subscriptions{status="disabled"}').toBeGreaterThanOrEqual(1);

    // Enabled again, it starts afresh, with the event it missed.
    const enabled = await t.http('POST', `/api/v1/webhooks/${id}/enable`, { headers: user.headers });
    expect(enabled.body).toMatchObject({ enabled: true, status: 'active', failingSince: null });
    const [resumed] = (await receiver.waitFor(sent + 1)).slice(sent);
    expect(verified(secret, resumed).data.id).toBe(unheard);
    // Deleted, so that its retries (still answered 500) stay out of the next test's metrics.
    const deleted = await t.http('DELETE', `/api/v1/webhooks/${id}`, { headers: user.headers });
    expect(deleted.status).toBe(204);
  });

  it('counts successful deliveries, their attempt time and their lag from the commit', async () => {
    const user = await httpUser(t);
    const { id, receiver } = await subscribed(user);
    const before = (await t.http('GET', '/metrics')).text;
    await mint(user, 'Heard');
    await mint(user, 'Heard too');
    await receiver.waitFor(2);
    // The receiver hears of a request before the service has its answer: wait for both outcomes.
    let statuses: string[] = [];
    for (let i = 0; i < 50 && statuses.length < 2; i++) {
      const listed = await t.http('GET', `/api/v1/webhooks/${id}/deliveries`, { headers: user.headers });
      statuses = listed.body.data.map((delivery: { status: string }) => delivery.status);
      if (statuses.length < 2) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(statuses).toEqual(['succeeded', 'succeeded']);
    const after = (await t.http('GET', '/metrics')).text;
    const moved = (series: string) => sample(after, series) - sample(before, series);
    expect(moved('webhook_attempts_total{outcome="succeeded"}')).toBe(2);
    expect(moved('webhook_attempt_duration_seconds_count{outcome="succeeded"}')).toBe(2);
    expect(moved('webhook_delivery_lag_seconds_count')).toBe(2);
    expect(moved('webhook_delivery_lag_seconds_sum')).toBeGreaterThan(0);
    // Each delivery's time, stage by stage (both came from the relay, on the fast path).
    for (const stage of ['relay', 'queue', 'handoff', 'request', 'return'])
      expect(moved(`webhook_delivery_stage_seconds_count{stage="${stage}"}`), stage).toBe(2);
    expect(moved('webhook_delivery_stage_seconds_count{stage="catch_up"}')).toBe(0);
    expect(sample(after, 'webhook_backlog{state="pending"}')).toBeGreaterThanOrEqual(0);
    expect(after).toMatch(/^webhook_backlog\{state="undelivered"\} \d+$/m);
    await scraped('webhook_subscriptions{status="active"}').toBeGreaterThanOrEqual(1);
  });
});
