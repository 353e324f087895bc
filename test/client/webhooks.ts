// Issue 38: the official client verifies real deliveries of the service, before and after a secret
// rotation (two signatures in the header; a receiver holding either secret, or both, verifies).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { unwrap, verifyWebhook, WebhookVerificationError } from '../../clients/typescript/src/index.ts';
import type { TestApp } from '../helpers/app.ts';
import type { HttpUser } from '../helpers/ledger-fixtures.ts';
import { type Receiver, startReceiver } from '../integration/webhooks/receiver.ts';
import { clientFor, METADATA, type SharedApp } from './fixture.ts';

/** Real deliveries of the app of `shared` (test/client/client.test.ts). */
export function webhookTests(shared: () => SharedApp): void {
  let t: TestApp;
  let player: HttpUser;
  let receiver: Receiver;

  beforeAll(async () => {
    ({ t, player } = shared());
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('verifies real deliveries and parses them into the contract’s events, across a rotation', async () => {
    const gats = clientFor(t, player);
    const hook = await unwrap(
      gats.POST('/api/v1/webhooks', {
        body: { url: receiver.url, eventTypes: ['newNFT'], filter: { walletId: player.wallet } },
      }),
    );
    const nft = await unwrap(
      gats.POST('/api/v1/nft/create', { body: { name: 'Hooked', metadata: METADATA } }),
    );
    const [first] = await receiver.waitFor(1);
    const headers = {
      'webhook-id': first.id,
      'webhook-timestamp': first.timestamp,
      'webhook-signature': first.signature,
    };
    const verified = verifyWebhook(first.body, new Headers(headers), hook.secret);
    expect(verified.deliveryId).toBe(first.id);
    expect(verified.event.type).toBe('newNFT');
    if (verified.event.type === 'newNFT') expect(verified.event.data.id).toBe(nft.id);
    // A forged body, or another secret, is refused.
    expect(() => verifyWebhook(first.body.replace('Hooked', 'Forged'), headers, hook.secret)).toThrow(
      WebhookVerificationError,
    );
    expect(() =>
      verifyWebhook(first.body, headers, `whsec_${Buffer.alloc(24, 7).toString('base64')}`),
    ).toThrow('No matching signature found');

    const rotated = await unwrap(
      gats.POST('/api/v1/webhooks/{webhook_id}/rotate-secret', { params: { path: { webhook_id: hook.id } } }),
    );
    await unwrap(gats.POST('/api/v1/nft/create', { body: { name: 'Rotated', metadata: METADATA } }));
    // Delivery is at least once: a slow answer may bring the first event again (signed before the
    // rotation, with one signature), so the second event is found by its content.
    let second = (await receiver.waitFor(2)).find((request) => request.body.includes('"Rotated"'));
    for (let count = 3; !second; count++)
      second = (await receiver.waitFor(count)).find((request) => request.body.includes('"Rotated"'));
    expect(second.signature.split(' ')).toHaveLength(2);
    const after = {
      'webhook-id': second.id,
      'webhook-timestamp': second.timestamp,
      'webhook-signature': second.signature,
    };
    for (const secrets of [hook.secret, rotated.secret, [rotated.secret, hook.secret]]) {
      expect(verifyWebhook(second.body, after, secrets).event.type).toBe('newNFT');
    }
  });
}
