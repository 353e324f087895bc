// Issue 21: `assetUpdated` reaches webhooks like every event type: a player's webhook on its wallet
// receives the update of an NFT it owns (signed, the contract's AssetUpdatedEvent), and the
// delivery lists with its event type.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import { httpUser } from '../../helpers/ledger-fixtures.ts';
import { startReceiver, verified } from './receiver.ts';

const METADATA = {
  image: 'https://cdn.example-game.com/x.png',
  attributes: [{ trait_type: 'level', value: 1 }],
  creator: 'tests',
};

describe.each(DB_KINDS)('assetUpdated webhooks on %s', (kind) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp(kind, { WEBHOOK_ALLOW_LOOPBACK: 'true', RATE_LIMIT_ACCOUNT_REQUESTS: '1000' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('delivers an NFT update to the webhook of its owner', async () => {
    const [studio, player] = await Promise.all([httpUser(t, 'studio'), httpUser(t)]);
    const collection = await t.http('POST', '/api/v1/collections', {
      body: { id: 'hooked', name: 'Hooked', mutableAttributes: ['level'] },
      headers: studio.headers,
    });
    expect(collection.status, collection.text).toBe(201);
    const minted = await t.http('POST', '/api/v1/collections/hooked/mint/batch', {
      body: { items: [{ to: player.wallet, nft: { name: 'Blade', metadata: METADATA } }] },
      headers: studio.headers,
    });
    expect(minted.status, minted.text).toBe(201);
    const blade = minted.body.nfts[0].id as string;
    const receiver = await startReceiver();
    try {
      const created = await t.http('POST', '/api/v1/webhooks', {
        body: { url: receiver.url, eventTypes: ['assetUpdated'], filter: { walletId: player.wallet } },
        headers: player.headers,
      });
      expect(created.status, created.text).toBe(201);
      const updated = await t.http('PATCH', `/api/v1/assets/${blade}/metadata`, {
        body: { attributes: [{ trait_type: 'level', value: 2 }] },
        headers: studio.headers,
      });
      expect(updated.status, updated.text).toBe(200);
      const [request] = await receiver.waitFor(1);
      const event = verified(created.body.secret, request);
      expect(event).toMatchObject({ type: 'assetUpdated', data: { id: blade, metadataVersion: 1 } });
      // The delivery's row is written as it completes: wait for it.
      const listed = async () => {
        const deliveries = await t.http('GET', `/api/v1/webhooks/${created.body.id}/deliveries?limit=10`, {
          headers: player.headers,
        });
        expect(deliveries.status, deliveries.text).toBe(200);
        return deliveries.body.data.map((d: { eventType: string }) => d.eventType);
      };
      await expect.poll(listed, { timeout: 5000 }).toEqual(['assetUpdated']);
    } finally {
      await receiver.close();
    }
  });
});
