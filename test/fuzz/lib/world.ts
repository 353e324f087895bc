// The live state the fuzzer aims at: one user per role with a token and an API key, a collection, a
// currency, NFTs, a price, a transfer, an identity with a credential and an OAuth application, made
// through the API. Their ids fill the pools the generated requests draw from, and broken variants of
// the credentials are what "bad or missing tokens and keys" means.
import type { TestApp } from '../../helpers/app.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';
import type { Pools } from './schema-arbitrary.ts';

export type ActorRole = 'studio' | 'oracle' | 'player' | 'admin';

export interface Credentials {
  label: string;
  headers: Record<string, string>;
}

export interface World {
  actors: Record<ActorRole, HttpUser>;
  /** Missing, malformed, forged, mismatched and revoked credentials. */
  badCredentials: Credentials[];
  pools: Pools;
}

/** The idempotency key of the seeded transfer: reusing it with another body must answer 422. */
export const SEEDED_IDEMPOTENCY_KEY = 'fuzz-seeded-transfer';
const COLLECTION = 'fuzz-world';
const CURRENCY = 'fuzz-gold';
const METADATA = { image: 'https://cdn.example.com/fuzz.png', attributes: [], creator: 'Fuzz Studio' };

async function expectCreated<T = unknown>(
  t: TestApp,
  user: HttpUser,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<T> {
  const response = await t.http<T>('POST', path, { body, headers: { ...user.headers, ...headers } });
  if (response.status !== 201 && response.status !== 200) {
    throw new Error(`fuzz world: POST ${path} answered ${response.status}: ${response.text}`);
  }
  return response.body;
}

/** Flips one character of the JWT's signature: well-formed, correctly encoded, wrongly signed. */
function forge(token: string): string {
  const at = token.length - 5;
  return `${token.slice(0, at)}${token[at] === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`;
}

export async function buildWorld(t: TestApp): Promise<World> {
  const [studio, oracle, player, admin, victim, revoked] = await Promise.all([
    httpUser(t, 'studio'),
    httpUser(t, 'oracle'),
    httpUser(t, 'player'),
    httpUser(t, 'admin'),
    httpUser(t, 'player'),
    httpUser(t, 'player'),
  ]);

  await expectCreated(t, studio, '/api/v1/collections', { id: COLLECTION, name: 'Fuzz World' });
  await expectCreated(t, studio, '/api/v1/currencies', {
    id: CURRENCY,
    name: 'Fuzz Gold',
    symbol: 'FZG',
    decimals: 2,
    collection: COLLECTION,
    metadata: METADATA,
  });
  for (const to of [studio.wallet, player.wallet]) {
    await expectCreated(t, studio, `/api/v1/currencies/${CURRENCY}/mint`, { to, amount: '1000000' });
  }
  const nfts: string[] = [];
  for (const owner of [studio, player]) {
    const nft = await expectCreated<{ id: string }>(t, owner, '/api/v1/nft/create', {
      name: 'Fuzz Blade',
      metadata: METADATA,
      // Only the studio owns the collection; the player mints into its personal one.
      ...(owner === studio ? { collection: COLLECTION } : {}),
    });
    nfts.push(nft.id);
  }
  await expectCreated(t, oracle, `/api/v1/price/${CURRENCY}`, {
    price: '0.25',
    currency: 'USD',
    source: 'fuzz',
  });
  const transfer = await expectCreated<{ id: string }>(
    t,
    studio,
    '/api/v1/transfer',
    { assetId: CURRENCY, from: studio.wallet, to: player.wallet, amount: '10' },
    { 'idempotency-key': SEEDED_IDEMPOTENCY_KEY },
  );
  const identity = await expectCreated<{ did: string }>(t, player, '/identity/create', {});
  const issued = await expectCreated<{ id: string; jwt: string; status: { statusListCredential: string } }>(
    t,
    player,
    '/identity/issue_credential',
    { type: 'AssetOwnershipCredential', subjectDid: identity.did, wallet: player.wallet, assetId: nfts[1] },
  );
  const application = await expectCreated<{ clientId: string }>(t, studio, '/api/v1/applications', {
    name: 'Fuzz App',
    redirectUris: ['https://game.example.com/cb'],
  });
  const keys = await t.http<{ data: { id: string }[] }>('GET', '/api/v1/api-keys', {
    headers: revoked.headers,
  });
  const revokedKeyId = keys.body.data[0].id;
  const revocation = await t.http('DELETE', `/api/v1/api-keys/${revokedKeyId}`, { headers: revoked.headers });
  if (revocation.status !== 204) throw new Error(`fuzz world: revoking a key answered ${revocation.status}`);
  const events = await t.http<{ data: { id: string }[] }>('GET', '/api/v1/events?limit=5', {
    headers: player.headers,
  });

  const serviceDid = `did:web:${new URL(t.baseUrl).host.replace(':', '%3A')}`;
  const pools = new Map<string, unknown[]>([
    ['AssetId', [CURRENCY, ...nfts]],
    ['Address', [studio.wallet, player.wallet, player.wallet.toLowerCase(), oracle.wallet]],
    ['CollectionId', [COLLECTION]],
    // Small amounts, so some generated transfers and mints fit the balances and succeed.
    ['Amount', ['1', '0.01', '2.5']],
    ['UserId', [victim.userId]],
    ['ClientId', [application.clientId]],
    ['ApiKeyId', [revokedKeyId]],
    ['CredentialId', [issued.id]],
    ['CompactJws', [issued.jwt]],
    ['DidKey', [identity.did]],
    ['Did', [identity.did, serviceDid]],
    ['EventId', ['0', ...events.body.data.map((event) => event.id)]],
    ['Username', [player.username]],
    ['param:transfer_id', [transfer.id]],
    ['param:list_id', [new URL(issued.status.statusListCredential).pathname.split('/').pop() as string]],
    ['param:Idempotency-Key', [SEEDED_IDEMPOTENCY_KEY]],
  ]);

  const bearer = (user: HttpUser) => ({ authorization: user.headers.authorization });
  const token = player.headers.authorization.slice('Bearer '.length);
  const badCredentials: Credentials[] = [
    { label: 'none', headers: {} },
    { label: 'bearer-without-key', headers: bearer(player) },
    { label: 'key-without-bearer', headers: { 'x-api-key': player.headers['x-api-key'] } },
    { label: 'forged-signature', headers: { ...player.headers, authorization: `Bearer ${forge(token)}` } },
    {
      label: 'truncated-token',
      headers: { ...player.headers, authorization: `Bearer ${token.slice(0, -20)}` },
    },
    { label: 'not-a-jwt', headers: { ...player.headers, authorization: 'Bearer not.a.jwt' } },
    { label: 'basic-scheme', headers: { ...player.headers, authorization: 'Basic dXNlcjpwYXNz' } },
    { label: 'empty-bearer', headers: { ...player.headers, authorization: 'Bearer ' } },
    { label: 'latin1-token', headers: { ...player.headers, authorization: 'Bearer \u00e9\u00ff' } },
    { label: 'long-token', headers: { ...player.headers, authorization: `Bearer ${'a'.repeat(6000)}` } },
    { label: 'someone-elses-key', headers: { ...bearer(player), 'x-api-key': studio.headers['x-api-key'] } },
    { label: 'revoked-key', headers: revoked.headers },
    { label: 'unknown-key', headers: { ...bearer(player), 'x-api-key': `gak_${'A'.repeat(43)}` } },
    { label: 'malformed-key', headers: { ...bearer(player), 'x-api-key': 'gak_/../\u00e9' } },
  ];
  return { actors: { studio, oracle, player, admin }, badCredentials, pools };
}
