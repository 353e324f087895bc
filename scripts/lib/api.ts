// A small client of the service's public API (the OpenAPI contract), just what the benchmarks need to
// set up their data: users with a token and an API key, collections, currencies, NFTs, reads.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Role } from './database.ts';
import type { Service } from './service.ts';

export interface Session {
  userId: string;
  /** The user's custodial wallet (EIP-55). */
  wallet: string;
  token: string;
  apiKey: string;
  /** Authorization + X-API-Key, as every protected operation wants them. */
  headers: Record<string, string>;
}

const PASSWORD = 'bench-password-not-secret';

export class ApiError extends Error {
  override name = 'ApiError';
  /** The answer's HTTP status. */
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

/** Calls the API and returns the parsed JSON body; anything but 2xx throws with the problem detail. */
export async function call<T = unknown>(
  baseUrl: string,
  method: 'GET' | 'POST' | 'PATCH' | 'PUT',
  path: string,
  options: { session?: Pick<Session, 'headers'>; body?: unknown } = {},
): Promise<T> {
  const headers: Record<string, string> = { ...options.session?.headers };
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    // Every creating POST accepts one; a benchmark never retries, so a fresh key each time.
    headers['idempotency-key'] = randomUUID();
  }
  const response = await fetch(baseUrl + path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  if (!response.ok) throw new ApiError(`${method} ${path}: ${response.status} ${text}`, response.status);
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/**
 * Registers a user (role `player`), optionally gives it another role in the database, logs in (so the
 * token carries the role) and creates an API key.
 */
export async function createUser(service: Service, role: Role = 'player'): Promise<Session> {
  // A registration runs the password KDF at the service's cost; on a loaded machine one can outrun
  // a short REQUEST_TIMEOUT_MS (the outage run's 3 s) and answer 503 with its outcome unknown: then
  // another name is registered (a user left over from the first try holds nothing).
  for (let attempt = 1; ; attempt++) {
    const username = `bench-${randomBytes(6).toString('hex')}`;
    let user: { id: string; wallets: string[] };
    try {
      user = await call<{ id: string; wallets: string[] }>(service.baseUrl, 'POST', '/api/v1/auth/register', {
        body: { username, password: PASSWORD },
      });
    } catch (error) {
      if (attempt < 3 && error instanceof ApiError && error.status === 503) continue;
      throw error;
    }
    if (role !== 'player') await service.setRole(user.id, role);
    return signIn(service.baseUrl, { id: user.id, wallet: user.wallets[0] }, username, PASSWORD);
  }
}

/** Logs an existing user in (password login) and creates an API key: a session of that user. */
export async function signIn(
  baseUrl: string,
  user: { id: string; wallet: string },
  username: string,
  password: string,
): Promise<Session> {
  // The login verifies at the service's cost too: a 503 (a short REQUEST_TIMEOUT_MS on a loaded
  // machine) is tried again; a login changes nothing.
  let login: { access_token: string };
  for (let attempt = 1; ; attempt++) {
    try {
      login = await call<{ access_token: string }>(baseUrl, 'POST', '/api/v1/auth/login', {
        body: { username, password },
      });
      break;
    } catch (error) {
      if (attempt < 3 && error instanceof ApiError && error.status === 503) continue;
      throw error;
    }
  }
  const bearer = { authorization: `Bearer ${login.access_token}` };
  const key = await call<{ key: string }>(baseUrl, 'POST', '/api/v1/api-keys', {
    session: { headers: bearer },
    body: { name: 'benchmark' },
  });
  return {
    userId: user.id,
    wallet: user.wallet,
    token: login.access_token,
    apiKey: key.key,
    headers: { ...bearer, 'x-api-key': key.key },
  };
}

export const NFT_METADATA = {
  image: 'https://cdn.example-game.com/items/bench.png',
  attributes: [
    { trait_type: 'rarity', value: 'common' },
    { trait_type: 'damage', value: 12 },
  ],
  creator: 'Benchmark Studio',
};

export async function createCollection(service: Service, studio: Session, id: string): Promise<void> {
  await call(service.baseUrl, 'POST', '/api/v1/collections', {
    session: studio,
    body: { id, name: `Collection ${id}` },
  });
}

/** A currency with 2 decimals in `collection`, created by a studio. */
export async function createCurrency(
  service: Service,
  studio: Session,
  id: string,
  collection: string,
): Promise<void> {
  await call(service.baseUrl, 'POST', '/api/v1/currencies', {
    session: studio,
    body: {
      id,
      name: `Currency ${id}`,
      symbol: id
        .replace(/[^a-z0-9]/g, '')
        .toUpperCase()
        .slice(0, 12),
      decimals: 2,
      collection,
      metadata: { ...NFT_METADATA, attributes: [] },
    },
  });
}

export async function mint(
  service: Service,
  studio: Session,
  assetId: string,
  to: string,
  amount: string,
): Promise<void> {
  await call(service.baseUrl, 'POST', `/api/v1/currencies/${assetId}/mint`, {
    session: studio,
    body: { to, amount },
  });
}

/**
 * An NFT minted into the owner's custodial wallet, in `collection` (the owner's) or, when undefined,
 * in the owner's personal collection; returns its id.
 */
export async function createNft(
  service: Service,
  owner: Session,
  collection: string | undefined,
  name: string,
): Promise<string> {
  const asset = await call<{ id: string }>(service.baseUrl, 'POST', '/api/v1/nft/create', {
    session: owner,
    body: {
      name,
      description: 'A benchmark item.',
      metadata: NFT_METADATA,
      ...(collection ? { collection } : {}),
    },
  });
  return asset.id;
}
