// The sender thread's streams (src/webhooks/send-worker.ts through send-thread.ts), against a real
// HTTP receiver that verifies every request with the `standardwebhooks` library: a stream sends the
// events its filter wants, in id order, one request at a time, each with the deterministic delivery
// id; it reports every delivery and how far the subscription is done (non-matching events included);
// its first failure ends it (reported with the failed event, nothing sent after); a stop ends it after
// the request in flight; a sync answers only once every delivery made before it is reported; and a
// secret change signs the next requests with both secrets.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EventType } from '../../../src/db/entities/OutboxEvent.ts';
import { deliveryId } from '../../../src/webhooks/delivery-id.ts';
import {
  createSendThread,
  DELIVERY_FIELDS,
  type SendThread,
  type StreamEvent,
  type StreamReport,
} from '../../../src/webhooks/send-thread.ts';
import { type Receiver, startReceiver, verified } from '../../integration/webhooks/receiver.ts';

const SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
const OTHER = `whsec_${Buffer.alloc(32, 4).toString('base64')}`;
const OPTIONS = { allowLoopback: true, allowedNetworks: [], timeoutMs: 2000, userAgent: 'test' };
const SUB = 'wh_01JD4C5Q6R7S8T9V0W1X2Y3Z4A';

function event(id: number, type: EventType = 'priceUpdate'): StreamEvent {
  const occurredAt = Date.UTC(2026, 10, 24, 12, 0, 0, id);
  return {
    id,
    type,
    assetId: 'a',
    collectionId: null,
    wallets: [],
    json: JSON.stringify({ id: String(id), type, occurredAt: new Date(occurredAt).toISOString(), data: {} }),
    occurredAt,
    heldAt: performance.timeOrigin + performance.now(),
  };
}

describe('webhook sender thread streams', () => {
  let receiver: Receiver;
  let thread: SendThread;
  let gen = 1;

  beforeAll(async () => {
    thread = createSendThread();
  });
  afterEach(async () => {
    await receiver?.close();
  });
  afterAll(async () => {
    await thread.close();
  });

  /** Starts a stream of SUB from `upTo`; its reports collected, `ended` resolved by the last. */
  function start(events: StreamEvent[], upTo: number, secrets = [SECRET]) {
    const reports: StreamReport[] = [];
    let end = () => {};
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    const id = gen++;
    thread.startStream(
      {
        id: SUB,
        gen: id,
        url: receiver.url,
        secrets,
        filter: { types: ['priceUpdate'] },
        options: OPTIONS,
        events,
        upTo,
      },
      (report) => {
        reports.push(report);
        if (report.stopped) end();
      },
    );
    const delivered = () =>
      reports.flatMap((report) =>
        report.ids.map((deliveryIdOf, i) => ({
          id: deliveryIdOf,
          eventId: report.numbers[i * DELIVERY_FIELDS],
          status: report.numbers[i * DELIVERY_FIELDS + 6],
        })),
      );
    const confirmed = () => Math.max(...reports.map((report) => report.confirmed));
    return { gen: id, reports, ended, delivered, confirmed };
  }

  it('sends the wanted events in order with their delivery ids, and reports how far it is done', async () => {
    receiver = await startReceiver();
    const stream = start([event(11), event(12, 'newTransfer')], 10);
    thread.events([event(13), event(12), event(14, 'newNFT'), event(15)]);
    const requests = await receiver.waitFor(3);
    const events = requests.map((request) => verified(SECRET, request));
    expect(events.map((e) => Number(e.id))).toEqual([11, 13, 15]);
    expect(requests.map((request) => request.id)).toEqual(
      [11, 13, 15].map((id) => deliveryId(SUB, id, event(id).occurredAt)),
    );
    await thread.sync();
    expect(stream.delivered()).toEqual(
      [11, 13, 15].map((id) => ({ id: deliveryId(SUB, id, event(id).occurredAt), eventId: id, status: 200 })),
    );
    expect(stream.confirmed()).toBe(15);
    // Nothing wanted, but seen: the subscription is done with it.
    thread.events([event(16, 'newNFT')]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(stream.confirmed()).toBe(16);
    thread.stopStream(SUB, stream.gen);
    await stream.ended;
    thread.events([event(17)]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.received).toHaveLength(3);
  });

  it('ends at the first failure, reporting it, and sends nothing after it', async () => {
    receiver = await startReceiver();
    receiver.script(200, 503);
    const stream = start([], 20);
    thread.events([event(21), event(22), event(23)]);
    await stream.ended;
    const last = stream.reports.at(-1);
    expect(last?.stopped).toBe(true);
    expect(last?.failed?.eventId).toBe(22);
    expect(last?.failed?.deliveryId).toBe(deliveryId(SUB, 22, event(22).occurredAt));
    expect(last?.failed?.sent.outcome.statusCode).toBe(503);
    expect(stream.delivered().map((delivery) => delivery.eventId)).toEqual([21]);
    expect(last?.confirmed).toBe(21);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.received).toHaveLength(2);
  });

  it('a sync waits for the request in flight; a stop ends the stream after it', async () => {
    receiver = await startReceiver();
    receiver.script('hang');
    const stream = start([event(31)], 31);
    await receiver.waitFor(1);
    let synced = false;
    const sync = thread.sync().then(() => {
      synced = true;
    });
    thread.stopStream(SUB, stream.gen);
    thread.events([event(32)]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(synced).toBe(false);
    expect(stream.reports.some((report) => report.stopped)).toBe(false);
    // The request times out (OPTIONS.timeoutMs): the stream ends with it, and the sync answers.
    await stream.ended;
    await sync;
    expect(stream.reports.at(-1)?.failed?.eventId).toBe(31);
    expect(receiver.received).toHaveLength(1);
  });

  it('signs with both secrets after a change, from the next request', async () => {
    receiver = await startReceiver();
    const stream = start([event(41)], 41);
    await receiver.waitFor(1);
    await thread.sync();
    thread.streamSecrets(SUB, stream.gen, [OTHER, SECRET]);
    thread.events([event(42)]);
    const [first, second] = await receiver.waitFor(2);
    expect(first.signature.split(' ')).toHaveLength(1);
    expect(second.signature.split(' ')).toHaveLength(2);
    expect(Number(verified(OTHER, second).id)).toBe(42);
    expect(Number(verified(SECRET, second).id)).toBe(42);
    thread.stopStream(SUB, stream.gen);
    await stream.ended;
  });
});
