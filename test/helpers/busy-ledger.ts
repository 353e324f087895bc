// A ledger with a history of every kind of write, made through the real app over HTTP (each answer
// checked against the contract by the test client): currencies minted, moved and burned, NFTs minted,
// moved and burned (one by craft), a craft, a settled trade, a frozen item and a metadata version.
// What operations tools (db:check, backups) must handle, not just the demo seed (issue 32.1).
import { expect } from 'vitest';
import type { TestApp } from './app.ts';
import { type HttpUser, httpUser } from './ledger-fixtures.ts';

const metadata = {
  image: 'https://cdn.example.com/item.png',
  attributes: [{ trait_type: 'level', value: 1 }],
  creator: 'Example Studio',
};

export interface BusyLedger {
  studio: HttpUser;
  alice: HttpUser;
  bob: HttpUser;
  /** NFT ids by what happened to them. */
  nfts: { burned: string; crafted: string; traded: string; frozen: string; versioned: string };
}

export async function makeBusyLedger(t: TestApp): Promise<BusyLedger> {
  const [studio, alice, bob] = [await httpUser(t, 'studio'), await httpUser(t), await httpUser(t)];
  const call = async (user: HttpUser, method: string, path: string, body: unknown, status: number) => {
    const answer = await t.http(method, path, { body, headers: user.headers });
    expect(answer.status, `${method} ${path}: ${answer.text}`).toBe(status);
    return answer.body;
  };
  const mint = async (to: HttpUser, name: string) =>
    (
      await call(
        studio,
        'POST',
        '/api/v1/collections/busy/mint/batch',
        {
          items: [{ to: to.wallet, nft: { name, metadata } }],
        },
        201,
      )
    ).nfts[0].id as string;

  await call(
    studio,
    'POST',
    '/api/v1/collections',
    {
      id: 'busy',
      name: 'Busy',
      mutableAttributes: ['level'],
    },
    201,
  );
  await call(
    studio,
    'POST',
    '/api/v1/currencies',
    {
      id: 'busy-gold',
      name: 'Gold',
      symbol: 'BGLD',
      decimals: 2,
      collection: 'busy',
      metadata,
    },
    201,
  );
  await call(studio, 'POST', '/api/v1/currencies/busy-gold/mint', { to: alice.wallet, amount: '500' }, 201);
  await call(studio, 'POST', '/api/v1/currencies/busy-gold/mint', { to: bob.wallet, amount: '500' }, 201);
  await call(
    alice,
    'POST',
    '/api/v1/transfer',
    {
      assetId: 'busy-gold',
      from: alice.wallet,
      to: bob.wallet,
      amount: '12.5',
    },
    201,
  );
  await call(bob, 'POST', '/api/v1/assets/busy-gold/burn', { from: bob.wallet, amount: '7.25' }, 201);

  // An NFT burned by its holder.
  const burned = await mint(alice, 'Broken Shield');
  await call(alice, 'POST', `/api/v1/assets/${burned}/burn`, { from: alice.wallet, amount: '1' }, 201);

  // A craft: a Rusty Sword and 10 gold burned, a Fine Sword minted.
  const rusty = await mint(alice, 'Rusty Sword');
  const recipe = await call(
    studio,
    'POST',
    '/api/v1/collections/busy/recipes',
    {
      name: 'Reforge',
      inputs: [{ nft: { collection: 'busy', name: 'Rusty Sword' } }, { assetId: 'busy-gold', amount: '10' }],
      outputs: [{ nft: { name: 'Fine Sword', metadata } }],
    },
    201,
  );
  const crafted = await call(
    alice,
    'POST',
    `/api/v1/recipes/${recipe.id}/craft`,
    {
      wallet: alice.wallet,
      nfts: [rusty],
    },
    201,
  );
  expect(crafted.burned.map((leg: { assetId: string }) => leg.assetId)).toContain(rusty);

  // A trade: alice's Fine Sword for 100 of bob's gold.
  const traded = crafted.nfts[0].id as string;
  const trade = await call(
    alice,
    'POST',
    '/api/v1/trades',
    {
      fromWallet: alice.wallet,
      toWallet: bob.wallet,
      offer: [{ assetId: traded, amount: '1' }],
      request: [{ assetId: 'busy-gold', amount: '100' }],
    },
    201,
  );
  await call(bob, 'POST', `/api/v1/trades/${trade.id}/accept`, undefined, 201);

  // A frozen item and a new metadata version.
  const frozen = await mint(bob, 'Relic');
  await call(studio, 'POST', `/api/v1/assets/${frozen}/freeze`, undefined, 200);
  const versioned = await mint(alice, 'Living Blade');
  await call(
    studio,
    'PATCH',
    `/api/v1/assets/${versioned}/metadata`,
    {
      version: 0,
      attributes: [{ trait_type: 'level', value: 2 }],
    },
    200,
  );
  return { studio, alice, bob, nfts: { burned, crafted: rusty, traded, frozen, versioned } };
}
