// A representative day of the service, driven through the contract proxy on the demo data: sign-up
// and keys, reading the demo wallets, a studio's collection, currency and mints, an NFT and
// transfers, an oracle's prices, transfer lists, event catch-up, the identity life cycle, and the
// error answers a client must be able to rely on (401, 403, 404, 400, 409, 422).
import { randomBytes } from 'node:crypto';
import { DEMO_ORACLE } from '../../../src/seed/demo.ts';
import type { ProxyClient } from './client.ts';

interface Session {
  headers: Record<string, string>;
  wallet: string;
}

const METADATA = { image: 'https://cdn.example.com/proxy.png', attributes: [], creator: 'Proxy Studio' };

/** Flips the case of the first hex letter: the same address with a wrong EIP-55 checksum. */
function wrongChecksum(address: string): string {
  const at = [...address].findIndex((char, i) => i > 1 && /[a-fA-F]/.test(char));
  const char = address[at];
  return (
    address.slice(0, at) +
    (char === char.toLowerCase() ? char.toUpperCase() : char.toLowerCase()) +
    address.slice(at + 1)
  );
}

async function signIn(client: ProxyClient, username: string, password: string): Promise<Session> {
  const tokens = await client.call('POST', '/api/v1/auth/login', {
    body: { username, password },
    expect: 200,
  });
  return withKey(client, tokens.body.access_token);
}

/** A service account: a token by the client credentials grant (client_secret_basic), then its own key. */
async function signInService(client: ProxyClient, clientId: string, secret: string): Promise<Session> {
  const tokens = await client.call('POST', '/token', {
    form: { grant_type: 'client_credentials', scope: 'assets:read prices:write' },
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
    expect: 200,
  });
  return withKey(client, tokens.body.access_token);
}

async function withKey(client: ProxyClient, accessToken: string): Promise<Session> {
  const bearer = { authorization: `Bearer ${accessToken}` };
  const key = await client.call('POST', '/api/v1/api-keys', {
    body: { name: 'proxy run' },
    headers: bearer,
    expect: 201,
  });
  const headers = { ...bearer, 'x-api-key': key.body.key };
  const wallets = await client.call('GET', '/api/v1/wallets', { headers, expect: 200 });
  return { headers, wallet: wallets.body.data[0].address };
}

export async function runFlow(client: ProxyClient): Promise<void> {
  const suffix = randomBytes(3).toString('hex');
  await client.call('GET', '/healthz', { expect: 200 });
  await client.call('GET', '/readyz', { expect: 200 });
  await client.call('GET', '/.well-known/openid-configuration', { expect: 200 });
  await client.call('GET', '/jwks', { expect: 200 });

  // A new player signs up; the demo accounts sign in.
  const username = `proxy_${suffix}`;
  const password = 'proxy-run-password-123';
  await client.call('POST', '/api/v1/auth/register', { body: { username, password }, expect: 201 });
  const player = await signIn(client, username, password);
  await client.call('GET', '/api/v1/me', { headers: player.headers, expect: 200 });
  const studio = await signIn(client, 'studio', 'studio-demo-password');
  const alice = await signIn(client, 'alice', 'alice-demo-password');
  const oracle = await signInService(client, DEMO_ORACLE.clientId, DEMO_ORACLE.clientSecret);

  // The demo wallets and assets.
  await client.call('GET', `/wallets/${alice.wallet}/assets`, { headers: alice.headers, expect: 200 });
  await client.call('GET', '/api/v1/assets?kind=nft', { headers: alice.headers, expect: 200 });
  await client.call('GET', '/assets/gold', { headers: alice.headers, expect: 200 });
  await client.call('GET', '/assets/gold/owners?limit=5', { headers: alice.headers, expect: 200 });
  await client.call('GET', '/api/v1/collections', { headers: alice.headers, expect: 200 });

  // A studio launches a game: collection, currency, mints (idempotent), an NFT.
  const collection = `proxy-${suffix}`;
  const currency = `coin-${suffix}`;
  await client.call('POST', '/api/v1/collections', {
    body: { id: collection, name: 'Proxy Quest' },
    headers: studio.headers,
    expect: 201,
  });
  await client.call('POST', '/api/v1/currencies', {
    body: { id: currency, name: 'Proxy Coin', symbol: 'PXC', decimals: 2, collection, metadata: METADATA },
    headers: studio.headers,
    expect: 201,
  });
  const mintKey = { ...studio.headers, 'idempotency-key': `mint-${suffix}` };
  const mint = { to: player.wallet, amount: '100.50' };
  await client.call('POST', `/api/v1/currencies/${currency}/mint`, {
    body: mint,
    headers: mintKey,
    expect: 201,
  });
  const replay = await client.call('POST', `/api/v1/currencies/${currency}/mint`, {
    body: mint,
    headers: mintKey,
    expect: 201,
  });
  if (replay.headers.get('idempotent-replayed') !== 'true')
    client.failures.push('mint replay: no Idempotent-Replayed: true');
  const nft = await client.call('POST', '/api/v1/nft/create', {
    body: { name: 'Proxy Blade', metadata: METADATA },
    headers: player.headers,
    expect: 201,
  });

  // Transfers, and reading them back.
  const sent = await client.call('POST', '/api/v1/transfer', {
    body: { assetId: currency, from: player.wallet, to: alice.wallet, amount: '10' },
    headers: { ...player.headers, 'idempotency-key': `transfer-${suffix}` },
    expect: 201,
  });
  await client.call('POST', '/api/v1/transfer', {
    body: { assetId: nft.body.id, from: player.wallet, to: alice.wallet.toLowerCase(), amount: '1' },
    headers: player.headers,
    expect: 201,
  });
  await client.call('GET', `/api/v1/transfers?wallet=${player.wallet}&limit=10`, {
    headers: player.headers,
    expect: 200,
  });
  await client.call('GET', `/api/v1/transfers/${sent.body.id}`, { headers: player.headers, expect: 200 });

  // An oracle prices the currency; anyone reads the price and its history.
  await client.call('POST', `/api/v1/price/${currency}`, {
    body: { price: '0.015', currency: 'USD', source: 'proxy-oracle' },
    headers: oracle.headers,
    expect: 201,
  });
  await client.call('GET', `/api/v1/price/${currency}`, { headers: player.headers, expect: 200 });
  await client.call('GET', '/api/v1/price/gold/history?interval=1h', {
    headers: player.headers,
    expect: 200,
  });

  // Events: catch up, then resume after the last one; a WebSocket ticket.
  const events = await client.call('GET', '/api/v1/events?types=newTransfer,newNFT&limit=50', {
    headers: player.headers,
    expect: 200,
  });
  const last = events.body.data.at(-1)?.id ?? '0';
  await client.call('GET', `/api/v1/events?after=${last}`, { headers: player.headers, expect: 200 });
  await client.call('POST', '/api/v1/events/ws-ticket', { body: {}, headers: player.headers, expect: 201 });

  // Identity: a DID, a credential about the player's currency balance, verification, revocation.
  const identity = await client.call('POST', '/identity/create', {
    body: {},
    headers: player.headers,
    expect: 201,
  });
  await client.call('GET', `/identity/dids/${identity.body.did}`, { expect: 200 });
  const issued = await client.call('POST', '/identity/issue_credential', {
    body: {
      type: 'AssetOwnershipCredential',
      subjectDid: identity.body.did,
      wallet: player.wallet,
      assetId: currency,
    },
    headers: player.headers,
    expect: 201,
  });
  await client.call('POST', '/identity/verify', {
    body: { jwt: issued.body.jwt },
    headers: alice.headers,
    expect: 200,
  });
  await client.call('POST', `/identity/credentials/${issued.body.id}/revoke`, {
    body: {},
    headers: player.headers,
    expect: 200,
  });
  await client.call('POST', '/identity/verify', {
    body: { credential: issued.body.credential },
    headers: alice.headers,
    expect: 200,
  });
  await client.call('GET', new URL(issued.body.status.statusListCredential).pathname, { expect: 200 });
  await client.call('GET', '/.well-known/did.json', { expect: 200 });

  // The error answers.
  await client.call('GET', '/api/v1/me', {
    headers: { ...player.headers, authorization: 'Bearer not.a.token' },
    expect: 401,
  });
  await client.call('POST', '/api/v1/currencies', {
    body: { id: `nope-${suffix}`, name: 'Nope', symbol: 'NOPE', decimals: 0, collection, metadata: METADATA },
    headers: alice.headers,
    expect: 403,
  });
  await client.call('GET', '/assets/nft_01JD3Z6W8Q5N2M7K4R9T1V0XYZ', { headers: alice.headers, expect: 404 });
  await client.call('GET', `/wallets/${wrongChecksum(alice.wallet)}/assets`, {
    headers: alice.headers,
    expect: 400,
  });
  await client.call('POST', '/api/v1/transfer', {
    body: { assetId: currency, from: player.wallet, to: alice.wallet, amount: '1000000' },
    headers: player.headers,
    expect: 409,
  });
  await client.call('POST', '/api/v1/collections', {
    body: { id: collection, name: 'Again' },
    headers: studio.headers,
    expect: 409,
  });
  await client.call('POST', `/api/v1/currencies/${currency}/mint`, {
    body: { ...mint, amount: '1' },
    headers: mintKey,
    expect: 422,
  });

  // Keys and applications come and go.
  const application = await client.call('POST', '/api/v1/applications', {
    body: { name: 'Proxy App', redirectUris: ['https://game.example.com/cb'] },
    headers: player.headers,
    expect: 201,
  });
  await client.call('GET', '/api/v1/applications', { headers: player.headers, expect: 200 });
  await client.call('DELETE', `/api/v1/applications/${application.body.clientId}`, {
    headers: player.headers,
    expect: 204,
  });
  const keys = await client.call('GET', '/api/v1/api-keys', { headers: player.headers, expect: 200 });
  const spare = await client.call('POST', '/api/v1/api-keys', {
    body: { name: 'spare' },
    headers: player.headers,
    expect: 201,
  });
  await client.call('DELETE', `/api/v1/api-keys/${spare.body.id}`, { headers: player.headers, expect: 204 });
  if (keys.body.data.length === 0) client.failures.push('api-keys: the listing is empty');
}
