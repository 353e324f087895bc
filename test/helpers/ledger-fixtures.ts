// Ledger test fixtures: a ledger over a fresh real database, users created straight through the ORM
// (role changes need an admin, so tests set roles on the row), and the invariant checks.
import { randomBytes } from 'node:crypto';
import { grantableScopes, isApiScope } from '../../src/auth/scopes.ts';
import { createSecretBox } from '../../src/crypto/secret-box.ts';
import { openDatabase } from '../../src/db/database.ts';
import { Asset } from '../../src/db/entities/Asset.ts';
import { AssetSupply } from '../../src/db/entities/AssetSupply.ts';
import { CurrencyLot } from '../../src/db/entities/CurrencyLot.ts';
import { Holding } from '../../src/db/entities/Holding.ts';
import { Listing } from '../../src/db/entities/Listing.ts';
import { ListingTrait } from '../../src/db/entities/ListingTrait.ts';
import { User, type UserRole } from '../../src/db/entities/User.ts';
import { Wallet } from '../../src/db/entities/Wallet.ts';
import { migrate, type Orm } from '../../src/db/orm.ts';
import { databaseKindOf } from '../../src/db/platform.ts';
import { newId } from '../../src/domain/ids.ts';
import { type Actor, createLedger, type Ledger } from '../../src/domain/ledger/index.ts';
import { type LedgerDatabase, ledgerDatabase } from '../../src/domain/ledger/store/index.ts';
import { listingTraitsOf } from '../../src/domain/ledger/store/listing-traits.ts';
import { walletNewestEventsSql } from '../../src/events/reads.ts';
import { migratedDatabase, type TestDatabaseKind } from './db.ts';
import { FIXTURE_PASSWORD } from './fixture-passwords.ts';

export interface LedgerFixture {
  orm: Orm;
  /** The database handle with its one ledger store and commit hook, as the app builds it. */
  database: LedgerDatabase;
  ledger: Ledger;
  close(): Promise<void>;
}

export const TEST_PUBLIC_URL = 'http://localhost:3000';

export async function openLedger(kind: TestDatabaseKind): Promise<LedgerFixture> {
  const scratch = await migratedDatabase(kind);
  // The fixtures fire up to 100 writes at once at one row: they queue for the pool's 30 connections
  // behind one row lock, which on a loaded machine can take longer than the production wait for a
  // connection (5 s, whose expiry is a fault tested in test/faults/). These tests are about the
  // ledger's invariants, so they wait as long as it takes.
  const db = await openDatabase({ ...scratch, poolMax: 30, connectTimeoutMs: 60_000 });
  const orm = db.orm;
  await migrate(orm);
  const database = ledgerDatabase(db);
  const ledger = createLedger({
    database,
    config: { publicUrl: TEST_PUBLIC_URL, idempotencyTtlSeconds: 86_400 },
    secretBox: createSecretBox('ledger-test-secret-0123456789abcdef'),
  });
  return {
    orm,
    database,
    ledger,
    async close() {
      await db.close();
      await scratch.drop();
    },
  };
}

export interface TestUser extends Actor {
  /** The custodial wallet, lowercase. */
  wallet: string;
}

/** A user with a custodial wallet, written in one transaction as registration does. */
export async function createUser(
  fixture: Pick<LedgerFixture, 'orm' | 'ledger'>,
  role: UserRole = 'player',
): Promise<TestUser> {
  const userId = newId('usr');
  const username = `u${randomBytes(6).toString('hex')}`;
  const wallet = await fixture.orm.em.fork().transactional(async (em) => {
    em.create(User, {
      id: userId,
      username,
      usernameNormalized: username,
      passwordHash: 'x',
      role,
      createdAt: new Date(),
    });
    return fixture.ledger.wallets.createCustodialWallet(em, userId);
  });
  return { userId, role, wallet: wallet.address.toLowerCase() };
}

/** Sets a user's role on the row (there is no admin yet to do it through the API). */
export async function setRole(orm: Orm, userId: string, role: UserRole): Promise<void> {
  await orm.em.fork().nativeUpdate(User, { id: userId }, { role });
}

/**
 * The ledger's invariants, read straight from the tables: no negative balance (the column type
 * cannot hold one, checked anyway), per currency the balances add up to the total supply, and every
 * NFT has exactly one holder with balance 1, the one `Asset.owner` names; a holding's reserved part
 * (issue 35) lies between 0 and its balance.
 */
/**
 * A currency's total supply as stored (its row in asset_supply, issue 34 item 5); null when it has
 * none (an NFT).
 */
export async function supplyOf(orm: Orm, assetId: string): Promise<bigint | null> {
  const row = await orm.em.fork().findOne(AssetSupply, { asset: assetId });
  return row ? (row.totalSupply as bigint) : null;
}

export async function checkInvariants(orm: Orm): Promise<string[]> {
  const em = orm.em.fork();
  const problems: string[] = [];
  const assets = await em.find(Asset, {});
  // A currency's supply is its row in asset_supply (issue 34 item 5): one per currency, none per NFT.
  const supplies = new Map(
    (await em.find(AssetSupply, {})).map((row) => [row.asset.id, row.totalSupply as bigint]),
  );
  const holdings = await em.find(Holding, {});
  for (const holding of holdings) {
    if ((holding.balance as bigint) < 0n)
      problems.push(`negative balance ${holding.wallet} ${holding.asset.id}`);
    // Issue 35: the reserved part of a holding is part of its balance.
    if ((holding.reserved as bigint) < 0n || (holding.reserved as bigint) > (holding.balance as bigint))
      problems.push(
        `reserved ${holding.reserved} of ${holding.balance} ${holding.wallet} ${holding.asset.id}`,
      );
  }
  // Issue 36, timed currency grants: a holding's lots and reserved part never exceed its balance.
  const lots = new Map<string, bigint>();
  for (const lot of await em.find(CurrencyLot, {})) {
    if ((lot.amount as bigint) <= 0n) problems.push(`empty lot ${lot.id}`);
    const key = `${lot.assetId} ${lot.wallet}`;
    lots.set(key, (lots.get(key) ?? 0n) + (lot.amount as bigint));
  }
  for (const [key, sum] of lots) {
    const [assetId, wallet] = key.split(' ');
    const holding = holdings.find((h) => h.asset.id === assetId && h.wallet === wallet);
    const room = holding ? (holding.balance as bigint) - (holding.reserved as bigint) : 0n;
    if (sum > room) problems.push(`lots of ${wallet} ${assetId}: ${sum}, balance less reserved ${room}`);
  }
  // Issue 35, the trait floor: trait rows of the active listings only, each active listing's rows its
  // item's current attribute values, with its collection, currency and price.
  const listings = new Map((await em.find(Listing, { status: 'active' })).map((l) => [l.id, l]));
  const traits = new Map<string, string[]>();
  for (const row of await em.find(ListingTrait, {})) {
    const listing = listings.get(row.listingId);
    if (
      !listing ||
      listing.collectionId !== row.collectionId ||
      listing.currencyId !== row.currencyId ||
      listing.price !== row.price
    )
      problems.push(
        `trait row ${row.listingId} ${row.traitType}=${row.traitValue} of no such active listing`,
      );
    traits.set(row.listingId, [...(traits.get(row.listingId) ?? []), `${row.traitType}=${row.traitValue}`]);
  }
  for (const listing of listings.values()) {
    const item = assets.find((asset) => asset.id === listing.assetId);
    const wanted = listingTraitsOf(item?.metadata).map(([type, value]) => `${type}=${value}`);
    const found = traits.get(listing.id) ?? [];
    if (wanted.sort().join('\n') !== found.sort().join('\n'))
      problems.push(
        `listing ${listing.id}: trait rows ${found.join(', ')}, its item has ${wanted.join(', ')}`,
      );
  }
  for (const asset of assets) {
    const mine = holdings.filter(
      (holding) => holding.asset.id === asset.id && (holding.balance as bigint) > 0n,
    );
    const totalSupply = supplies.get(asset.id);
    if (asset.kind !== 'fungible' && totalSupply !== undefined)
      problems.push(`${asset.id}: an NFT with a supply row`);
    if (asset.kind === 'fungible') {
      const sum = mine.reduce((total, holding) => total + (holding.balance as bigint), 0n);
      if (totalSupply === undefined) problems.push(`${asset.id}: a currency without a supply row`);
      else if (sum !== totalSupply)
        problems.push(`${asset.id}: balances add up to ${sum}, supply is ${totalSupply}`);
      if (asset.maxSupply != null && totalSupply !== undefined && totalSupply > asset.maxSupply)
        problems.push(`${asset.id}: supply past max`);
    } else if (asset.owner === '0x0000000000000000000000000000000000000000') {
      // Burned: held by no one.
      if (mine.length !== 0) problems.push(`${asset.id}: burned but held by ${mine.length} wallets`);
    } else {
      if (mine.length !== 1 || mine[0].balance !== 1n) problems.push(`${asset.id}: ${mine.length} holders`);
      else if (mine[0].wallet !== asset.owner)
        problems.push(`${asset.id}: owner ${asset.owner} but held by ${mine[0].wallet}`);
    }
  }
  // Issue 34: on PostgreSQL each NFT's newest event is in asset_last_event (its event reads stop
  // there, src/events/reads.ts), written with the event; SQLite writes none.
  const postgres = databaseKindOf(em.getPlatform()) === 'postgresql';
  const connection = em.getConnection();
  const newest = await connection.execute<{ asset_id: string; id: string | number }[]>(
    'select asset_id, max(id) as id from outbox_event where asset_id is not null group by asset_id',
  );
  const newestOf = new Map(newest.map((row) => [row.asset_id, Number(row.id)]));
  const bounds = await connection.execute<{ asset_id: string; event_id: string | number }[]>(
    'select asset_id, event_id from asset_last_event',
  );
  const boundOf = new Map(bounds.map((row) => [row.asset_id, Number(row.event_id)]));
  for (const asset of assets) {
    const wanted = postgres && asset.kind === 'nft' ? (newestOf.get(asset.id) ?? null) : null;
    const found = boundOf.get(asset.id) ?? null;
    if (found !== wanted) problems.push(`${asset.id}: asset_last_event ${found}, its newest event ${wanted}`);
  }
  // Likewise each wallet's newest event as `from` or `to` in wallet_last_event (PostgreSQL; not the
  // zero address, whose reads have no bound).
  const walletNewest = await connection.execute<{ wallet: string; id: string | number }[]>(
    walletNewestEventsSql(),
  );
  const walletBound = new Map(
    (
      await connection.execute<{ wallet: string; event_id: string | number }[]>(
        'select wallet, event_id from wallet_last_event',
      )
    ).map((row) => [row.wallet, Number(row.event_id)]),
  );
  const wanted = new Map(postgres ? walletNewest.map((row) => [row.wallet, Number(row.id)]) : []);
  for (const wallet of new Set([...wanted.keys(), ...walletBound.keys()]))
    if (walletBound.get(wallet) !== wanted.get(wallet))
      problems.push(
        `${wallet}: wallet_last_event ${walletBound.get(wallet) ?? null}, its newest event ${wanted.get(wallet) ?? null}`,
      );
  return problems;
}

/** A user of the running app: tokens for its role and an API key, ready for protected calls. */
export interface HttpUser {
  userId: string;
  username: string;
  role: UserRole;
  /** Authorization and X-API-Key headers. */
  headers: Record<string, string>;
  /** The custodial wallet, EIP-55. */
  wallet: string;
}

export const PASSWORD = FIXTURE_PASSWORD;

interface HttpClient {
  app: { orm: unknown };
  http<T = any>(
    method: string,
    path: string,
    options?: { body?: unknown; form?: Record<string, string>; headers?: Record<string, string> },
  ): Promise<{ status: number; body: T; text: string }>;
}

async function expectStatus<T>(
  response: Promise<{ status: number; body: T; text: string }>,
  status: number,
): Promise<T> {
  const { status: actual, body, text } = await response;
  if (actual !== status) throw new Error(`expected ${status}, got ${actual}: ${text}`);
  return body;
}

/** Registers a user through the API, gives it `role` on the row (as an admin would), logs in, makes an API key. */
export async function httpUser(t: HttpClient, role: UserRole = 'player'): Promise<HttpUser> {
  const username = `u${randomBytes(6).toString('hex')}`;
  const user = await expectStatus<{ id: string }>(
    t.http('POST', '/api/v1/auth/register', { body: { username, password: PASSWORD } }),
    201,
  );
  if (role !== 'player') await setRole(t.app.orm as Orm, user.id, role);
  const tokens = await expectStatus<{ access_token: string }>(
    t.http('POST', '/api/v1/auth/login', { body: { username, password: PASSWORD } }),
    200,
  );
  const bearer = { authorization: `Bearer ${tokens.access_token}` };
  const key = await expectStatus<{ key: string }>(
    t.http('POST', '/api/v1/api-keys', { body: { name: 'ledger tests' }, headers: bearer }),
    201,
  );
  const headers = { ...bearer, 'x-api-key': key.key };
  const wallets = await expectStatus<{ data: { address: string }[] }>(
    t.http('GET', '/api/v1/wallets', { headers }),
    200,
  );
  return { userId: user.id, username, role, headers, wallet: wallets.data[0].address };
}

/**
 * A service account of `owner` with `role` (the API scopes that role allows), its client credentials
 * token and an API key made with it: a machine caller, as an HttpUser.
 */
export async function httpServiceAccount(
  t: HttpClient,
  owner: HttpUser,
  role: UserRole = owner.role,
): Promise<HttpUser> {
  const scopes = grantableScopes(role).filter(isApiScope);
  const account = await expectStatus<{ id: string; clientSecret: string; wallets: string[] }>(
    t.http('POST', '/api/v1/service-accounts', {
      body: { name: `svc ${role}`, role, scopes },
      headers: { authorization: owner.headers.authorization },
    }),
    201,
  );
  const basic = Buffer.from(`${account.id}:${account.clientSecret}`).toString('base64');
  const tokens = await expectStatus<{ access_token: string }>(
    t.http('POST', '/token', {
      form: { grant_type: 'client_credentials', scope: scopes.join(' ') },
      headers: { authorization: `Basic ${basic}` },
    }),
    200,
  );
  const bearer = { authorization: `Bearer ${tokens.access_token}` };
  const key = await expectStatus<{ key: string }>(
    t.http('POST', '/api/v1/api-keys', { body: { name: 'service key' }, headers: bearer }),
    201,
  );
  return {
    userId: account.id,
    username: account.id,
    role,
    headers: { ...bearer, 'x-api-key': key.key },
    wallet: account.wallets[0],
  };
}

/** Links `address` to the user as an external wallet, straight on the row (as a SIWE link ends). */
export async function linkWallet(fixture: LedgerFixture, userId: string, address: string): Promise<void> {
  const em = fixture.orm.em.fork();
  em.create(Wallet, { address: address.toLowerCase(), user: userId, kind: 'linked', createdAt: new Date() });
  await em.flush();
}

/** Links an account's address to an app user through the SIWE challenge the API issues. */
export async function linkWalletHttp(
  t: HttpClient,
  user: HttpUser,
  account: { address: string; signMessage(args: { message: string }): Promise<`0x${string}`> },
): Promise<void> {
  const challenge = await expectStatus<{ message: string }>(
    t.http('POST', '/api/v1/wallets/link/challenge', {
      body: { address: account.address },
      headers: user.headers,
    }),
    201,
  );
  const signature = await account.signMessage({ message: challenge.message });
  await expectStatus(
    t.http('POST', '/api/v1/wallets/link', {
      body: { message: challenge.message, signature },
      headers: user.headers,
    }),
    201,
  );
}
