// Issue 37: webhooks subscribed to `auditRecorded` receive new audit trail entries, each only if the
// webhook's owner may read it in GET /api/v1/audit-log (src/webhooks/audit-feed.ts). A studio's
// webhook gets its own collection's entries and not another studio's nor an admin-only one (a role
// change); an admin's gets them all; a player may not subscribe. The entries never reach an outbox
// reader: the WebSocket (live and replayed), GET /api/v1/events, nor an outbox webhook. Deliveries
// are signed, their body is the entry as the audit log answers it, and an entry appended in a
// transaction that rolled back is never sent. One app per database; every wait polls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orm } from '../../../src/db/orm.ts';
import { inTransaction } from '../../../src/db/transactions.ts';
import { auditDraft, recordAudit } from '../../../src/domain/audit.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import { isEvent, openSocket, restEvents, subscribe, TEST_ENV } from '../events/world.ts';
import { type Received, type Receiver, startReceiver, verified } from './receiver.ts';

const METADATA = { image: 'https://cdn.example-game.com/x.png', attributes: [], creator: 'tests' };

interface Hook {
  id: string;
  secret: string;
  receiver: Receiver;
}

describe.each(DB_KINDS)('auditRecorded webhooks on %s', (kind) => {
  let t: TestApp;
  let orm: Orm;
  let admin: HttpUser;
  let studio: HttpUser;
  let rival: HttpUser;
  let player: HttpUser;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    t = await startTestApp(kind, {
      ...TEST_ENV,
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      RATE_LIMIT_ACCOUNT_REQUESTS: '100000',
    });
    orm = t.app.orm as unknown as Orm;
    [admin, studio, rival, player] = await Promise.all([
      httpUser(t, 'admin'),
      httpUser(t, 'studio'),
      httpUser(t, 'studio'),
      httpUser(t, 'player'),
    ]);
  });
  afterAll(async () => {
    for (const receiver of receivers) await receiver.close();
    await t?.close();
  });

  async function ok(user: HttpUser, method: string, path: string, body?: unknown) {
    const response = await t.http(method, path, { body, headers: user.headers });
    expect(response.status, `${method} ${path}: ${response.text}`).toBeLessThan(300);
    return response.body;
  }

  async function hook(user: HttpUser, eventTypes: string[]): Promise<Hook> {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const created = await ok(user, 'POST', '/api/v1/webhooks', { url: receiver.url, eventTypes });
    expect(created.eventTypes).toEqual(eventTypes);
    return { id: created.id, secret: created.secret, receiver };
  }

  /**
   * The verified payloads a hook received, once one about `objectId` arrived (entries come in seq
   * order) and, with `alsoEvent`, the outbox event with that id too (it comes by another path, the
   * outbox's dispatcher, in no order with the entries).
   */
  async function receivedUpTo(h: Hook, objectId: string, alsoEvent?: string): Promise<any[]> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const events = h.receiver.received.map((request: Received) => verified(h.secret, request));
      if (
        events.some((event) => event.data?.object?.id === objectId) &&
        (alsoEvent === undefined ||
          events.some((event) => event.type !== 'auditRecorded' && event.data?.id === alsoEvent))
      )
        return events;
      if (Date.now() > deadline)
        throw new Error(
          `no auditRecorded about ${objectId}${alsoEvent ? ` or event ${alsoEvent}` : ''} within 15 s`,
        );
      await h.receiver.waitFor(h.receiver.received.length + 1, deadline - Date.now()).catch(() => undefined);
    }
  }

  it('sends a studio its own entries only and an admin every entry, signed, as the audit log answers them; never to a player', async () => {
    // A player may not subscribe: the audit log's decision (403), and nothing is created.
    const refused = await t.http('POST', '/api/v1/webhooks', {
      body: { url: 'https://hooks.example.com/x', eventTypes: ['newNFT', 'auditRecorded'] },
      headers: player.headers,
    });
    expect(refused.status, refused.text).toBe(403);
    expect((await ok(player, 'GET', '/api/v1/webhooks')).data).toEqual([]);
    // A studio's webhook without `eventTypes` gets every outbox type, not `auditRecorded`.
    const everything = await ok(studio, 'POST', '/api/v1/webhooks', { url: 'https://hooks.example.com/y' });
    expect(everything.eventTypes).not.toContain('auditRecorded');
    await ok(studio, 'DELETE', `/api/v1/webhooks/${everything.id}`);

    const studioHook = await hook(studio, ['auditRecorded']);
    const adminHook = await hook(admin, ['auditRecorded']);
    // The outbox's events and audit entries on one webhook: the outbox path never carries an entry.
    const mixedHook = await hook(studio, ['newNFT', 'auditRecorded']);

    const own = `aud-own-${kind}`;
    const other = `aud-other-${kind}`;
    const last = `aud-last-${kind}`;
    await ok(studio, 'POST', '/api/v1/collections', { id: own, name: 'Own' });
    await ok(rival, 'POST', '/api/v1/collections', { id: other, name: 'Other' });
    // Admin-only: a user's role change (about the user, no studio's object).
    await ok(admin, 'PUT', `/api/v1/users/${player.userId}/role`, { role: 'oracle' });
    await ok(admin, 'PUT', `/api/v1/users/${player.userId}/role`, { role: 'player' });
    // A rolled-back append: its entry never existed, so it is never sent (its seq is drawn again).
    const ghost = `aud-ghost-${kind}`;
    await expect(
      inTransaction(orm, async (em) => {
        await recordAudit(
          em,
          auditDraft('collection.created', { type: 'collection', id: ghost, ownerId: studio.userId }),
        );
        throw new Error('rolled back by the test');
      }),
    ).rejects.toThrow('rolled back by the test');
    const minted = await ok(studio, 'POST', `/api/v1/collections/${own}/mint/batch`, {
      items: [{ to: player.wallet, nft: { name: 'Audited', metadata: METADATA } }],
    });
    const nft = minted.nfts[0].id as string;
    await ok(studio, 'POST', '/api/v1/collections', { id: last, name: 'Last' });

    const toStudio = await receivedUpTo(studioHook, last);
    const toAdmin = await receivedUpTo(adminHook, last);
    const toMixed = await receivedUpTo(mixedHook, last, nft);

    const objects = (events: any[]) => events.map((event) => event.data.object.id);
    expect(toStudio.every((event) => event.type === 'auditRecorded')).toBe(true);
    expect(objects(toStudio)).toEqual([mixedHook.id, own, nft, last]);
    for (const hidden of [other, player.userId, ghost]) expect(objects(toStudio)).not.toContain(hidden);
    expect(objects(toAdmin)).toEqual([mixedHook.id, own, other, player.userId, player.userId, nft, last]);
    expect(objects(toAdmin)).not.toContain(ghost);
    // Outbox events and entries on one subscription: the newNFT once, entries as the studio's.
    expect(toMixed.filter((event) => event.type === 'newNFT').map((event) => event.data.id)).toEqual([nft]);
    expect(objects(toMixed.filter((event) => event.type === 'auditRecorded'))).toEqual([own, nft, last]);

    // Each body is the entry exactly as the audit log answers it, in seq order; webhook-ids distinct.
    const log = (await ok(admin, 'GET', '/api/v1/audit-log?limit=100')).data as any[];
    const bySeq = new Map(log.map((entry) => [entry.seq, entry]));
    for (const event of toAdmin) {
      expect(Object.keys(event).sort()).toEqual(['data', 'occurredAt', 'type']);
      expect(event.data).toEqual(bySeq.get(event.data.seq));
      expect(event.occurredAt).toBe(event.data.at);
    }
    const seqs = toAdmin.map((event) => event.data.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const ids = adminHook.receiver.received.map((request) => request.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => /^whd_[0-9A-HJKMNP-TV-Z]{26}$/.test(id))).toBe(true);
    // Signed with the subscription's secret only: another's does not verify.
    expect(() => verified(studioHook.secret, adminHook.receiver.received[0])).toThrow();

    // No outbox reader ever sees an entry: the outbox deliveries list holds the newNFT only.
    const listed = await ok(studio, 'GET', `/api/v1/webhooks/${mixedHook.id}/deliveries?limit=100`);
    expect(listed.data.map((row: { eventType: string }) => row.eventType)).toEqual(['newNFT']);
  });

  it('decides at delivery: a studio demoted to player is sent no entry, not even about its own collection', async () => {
    const demoted = await httpUser(t, 'studio');
    const collection = `aud-demoted-${kind}`;
    await ok(demoted, 'POST', '/api/v1/collections', { id: collection, name: 'Demoted' });
    const demotedHook = await hook(demoted, ['auditRecorded']);
    const adminHook = await hook(admin, ['auditRecorded']);
    await ok(admin, 'PUT', `/api/v1/users/${demoted.userId}/role`, { role: 'player' });
    // An admin's action on the demoted user's collection: an entry it could read as a studio.
    const minted = await ok(admin, 'POST', `/api/v1/collections/${collection}/mint/batch`, {
      items: [{ to: player.wallet, nft: { name: 'After', metadata: METADATA } }],
    });
    const nft = minted.nfts[0].id as string;
    const toAdmin = await receivedUpTo(adminHook, nft);
    const last = toAdmin[toAdmin.length - 1].data.seq as number;
    // The feed is done with the demoted user's webhook (its cursor at the entry) having sent nothing.
    const cursor = async () =>
      Number(
        (
          await orm.em
            .getConnection()
            .execute<{ audit_cursor: number | string }[]>(
              `select audit_cursor from webhook_subscription where id = '${demotedHook.id}'`,
            )
        )[0].audit_cursor,
      );
    const deadline = Date.now() + 15_000;
    while ((await cursor()) < last) {
      if (Date.now() > deadline) throw new Error('the demoted webhook was not served within 15 s');
      await adminHook.receiver.waitFor(adminHook.receiver.received.length + 1, 100).catch(() => undefined);
    }
    expect(demotedHook.receiver.received).toEqual([]);
  });

  it('never shows an entry to WebSocket subscribers (live or replayed) nor on GET /api/v1/events', async () => {
    const adminHook = await hook(admin, ['auditRecorded']);
    const socket = await openSocket(t, admin);
    try {
      // Asking for them is refused (not an event type of the outbox).
      socket.send({ type: 'subscribe', requestId: 'audit-types', events: ['auditRecorded'] });
      expect((await socket.next((m) => m.requestId === 'audit-types')).type).toBe('error');
      const live = await subscribe(socket);
      const replayed = await subscribe(socket, { lastEventId: '0' });
      const collection = `aud-ws-${kind}`;
      await ok(studio, 'POST', '/api/v1/collections', { id: collection, name: 'Ws' });
      const minted = await ok(studio, 'POST', `/api/v1/collections/${collection}/mint/batch`, {
        items: [{ to: player.wallet, nft: { name: 'Seen', metadata: METADATA } }],
      });
      const nft = minted.nfts[0].id as string;
      // The mint's entry commits with its newNFT: once the webhook has the entry and the socket the
      // event, an entry that went to the socket would be there.
      await receivedUpTo(adminHook, nft);
      await socket.next(
        (m) =>
          isEvent(m) &&
          m.data?.id === nft &&
          [live.subscriptionId, replayed.subscriptionId].every((id) => m.subscriptionIds.includes(id)),
      );
      // Nothing but the outbox's events and the protocol's own messages (each checked against AsyncAPI).
      expect(socket.messages.map((m) => m.type as string)).not.toContain('auditRecorded');
      expect(socket.messages.some((m) => JSON.stringify(m).includes('"prevHash"'))).toBe(false);
    } finally {
      socket.close();
    }
    const events = await restEvents(t, admin, '0');
    expect(events.length).toBeGreaterThan(0);
    expect(events.map((event) => event.type as string)).not.toContain('auditRecorded');
    const asked = await t.http('GET', '/api/v1/events?types=auditRecorded', { headers: admin.headers });
    expect(asked.status, asked.text).toBe(400);
  });
});
