// The access-control module: oidc-provider (authorization code + PKCE, token, revocation, JWKS,
// discovery), the login and consent pages, first-party login, API keys, rate limits, and the
// Authenticator the HTTP edge and the WebSocket gateway call for every protected operation. The
// REST handlers of accounts and applications are built by the edge (src/http/handlers/) from the
// services exported here.
import { hkdfSync } from 'node:crypto';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import type { Config } from '../config/index.ts';
import type { SecretBox } from '../crypto/secret-box.ts';
import type { User } from '../db/entities/User.ts';
import type { Orm } from '../db/orm.ts';
import type { Logger } from '../observability/logger.ts';
import type { RedisLink } from '../redis/link.ts';
import { purgeExpiredPayloads } from './adapter.ts';
import { type ApiKeyService, createApiKeyService } from './api-keys.ts';
import { ensureExplorerClient, ensureFirstPartyClient } from './applications.ts';
import { createAuthenticator } from './authenticator.ts';
import type { Authenticator } from './caller.ts';
import { type ClientStatus, createClientStatus } from './client-status.ts';
import { issueFirstPartyTokens, type TokenResponse } from './first-party-login.ts';
import { interactionRoutes } from './interactions.ts';
import { createLimitOwners, type LimitOwners } from './limit-owners.ts';
import { createLoginThrottle, type LoginThrottle } from './login-throttle.ts';
import { createProvider, PROVIDER_ROUTES } from './provider.ts';
import { createMemoryRateLimiter, createRedisRateLimiter, type RateLimiter } from './rate-limit.ts';
import {
  ensureSigningKeys,
  loadSigningKeys,
  rotateSigningKey,
  type SigningKeySet,
  signingKeysFingerprint,
} from './signing-keys.ts';
import { createTokenVerifier } from './token-verifier.ts';

export { ensureDemoClient } from './applications.ts';

/** Operations of the contract served by `middleware` (oidc-provider and the pages), not by the contract router. */
export const MIDDLEWARE_OPERATIONS = [
  'authorize',
  'resumeAuthorization',
  'requestToken',
  'revokeToken',
  'getJwks',
  'getOpenIdConfiguration',
  'getOAuthServerMetadata',
  'getInteraction',
  'submitInteractionLogin',
  'submitInteractionConsent',
  'abortInteraction',
] as const;

const DISCOVERY_PATH = '/.well-known/openid-configuration';
const RFC8414_PATH = '/.well-known/oauth-authorization-server';
const PROVIDER_PATHS = new Set<string>([...Object.values(PROVIDER_ROUTES), DISCOVERY_PATH]);
/** `/authorize/{uid}`: where the login and consent pages send the browser back to. */
const RESUME_PATH = /^\/authorize\/[A-Za-z0-9_-]+$/;
const KEY_CHECK_INTERVAL_MS = 60_000;
const PURGE_INTERVAL_MS = 10 * 60_000;
/** Retired keys stay published this much longer than the longest token they signed lives. */
const KEY_RETENTION_MARGIN_SECONDS = 300;

export interface AuthModuleOptions {
  config: Config;
  orm: Orm;
  logger: Logger;
  secretBox: SecretBox;
  /** The service secret (SECRET_KEY or the generated one): cookie and CSRF keys are derived from it. */
  secret: string;
  /** Shared rate-limit counters (REDIS_URL); per instance without it or while Redis is away. */
  redis?: RedisLink;
  /** Called when a count falls back to this instance's memory because Redis is away. */
  onRedisFallback?: () => void;
}

export interface AuthModule {
  authenticator: Authenticator;
  /** The request counters (the verify handler charges its extra cost to the same per-key budget). */
  limiter: RateLimiter;
  /** Serves oidc-provider's routes and the interaction pages; place it before the body parser. */
  middleware: (ctx: Context, next: Next) => Promise<void>;
  /** Login attempts per address, lockouts per username (first-party login and the login page). */
  throttle: LoginThrottle;
  apiKeys: ApiKeyService;
  /** Whether an OAuth client (application) still exists (a deleted one's tokens stop at once). */
  clients: ClientStatus;
  /** Whose per-user limits a user or service account counts against (30.6). */
  owners: LimitOwners;
  /** A first-party token pair for `user`, minted by oidc-provider (same keys, revocation, refresh). */
  issueTokens(user: User, scope: string | undefined): Promise<TokenResponse>;
  /** The API's resource indicator: the `aud` of every access token. */
  audience: string;
  /** Rotates the signing key (retired keys stay published until their tokens expire); returns the new kid. */
  rotateSigningKey(): Promise<string>;
  close(): Promise<void>;
}

/**
 * OpenID Connect Core §11 lets `offline_access` through only with `prompt=consent` "unless other
 * conditions ... are in place"; ours is that a request for it always shows the consent page. So a
 * request with `offline_access` and no `prompt` is treated as `prompt=consent`, and the client gets
 * the refresh token it asked for (as the contract promises) after the user saw the consent page.
 */
function withOfflineConsent(url: string): string | undefined {
  const parsed = new URL(url, 'http://placeholder');
  const scopes = (parsed.searchParams.get('scope') ?? '').split(' ');
  if (!scopes.includes('offline_access') || parsed.searchParams.has('prompt')) return undefined;
  parsed.searchParams.set('prompt', 'consent');
  return parsed.pathname + parsed.search;
}

function deriveKey(secret: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'game-asset-tracking', purpose, 32));
}

export async function createAuthModule(options: AuthModuleOptions): Promise<AuthModule> {
  const { config, orm, logger, secretBox } = options;
  const em = orm.em;
  const audience = `${config.publicUrl}/api`;
  const retainSeconds = config.accessTokenTtlSeconds + KEY_RETENTION_MARGIN_SECONDS;
  const cookieKeys = [deriveKey(options.secret, 'oidc-cookies v1').toString('base64url')];
  const csrfKey = deriveKey(options.secret, 'interaction-csrf v1');

  await ensureFirstPartyClient(em);
  await ensureExplorerClient(em, config.publicUrl);
  await ensureSigningKeys(em, secretBox);

  let keys: SigningKeySet = await loadSigningKeys(em, secretBox, retainSeconds);
  const buildProvider = (set: SigningKeySet) =>
    createProvider({
      issuer: config.publicUrl,
      audience,
      em,
      privateJwks: set.privateJwks,
      cookieKeys,
      accessTokenTtlSeconds: config.accessTokenTtlSeconds,
      refreshTokenTtlSeconds: config.refreshTokenTtlSeconds,
      trustProxy: config.trustProxy,
      logger,
    });
  // oidc-provider's keystore is fixed at construction: a key change builds a new instance (all of
  // its state is in the database, so nothing is lost).
  let provider: Provider = buildProvider(keys);
  let serve = provider.callback();

  const verifier = createTokenVerifier({
    issuer: config.publicUrl,
    audience,
    publicJwks: keys.publicJwks,
    reloadKeys: async () => {
      await reloadKeys();
      return keys.publicJwks;
    },
  });

  async function reloadKeys(): Promise<void> {
    const next = await loadSigningKeys(em, secretBox, retainSeconds);
    if (next.fingerprint === keys.fingerprint) return;
    keys = next;
    provider = buildProvider(keys);
    serve = provider.callback();
    verifier.setKeys(keys.publicJwks);
    logger.info({ keys: keys.fingerprint }, 'signing keys reloaded');
  }

  // Another instance may rotate; keys retire on a schedule too. Both are noticed here.
  const keyCheck = setInterval(() => {
    signingKeysFingerprint(em, retainSeconds)
      .then((fingerprint) => (fingerprint === keys.fingerprint ? undefined : reloadKeys()))
      .catch((error: unknown) => logger.error({ err: error }, 'signing key check failed'));
  }, KEY_CHECK_INTERVAL_MS);
  keyCheck.unref();
  const purge = setInterval(() => {
    purgeExpiredPayloads(em).catch((error: unknown) =>
      logger.error({ err: error }, 'purging expired OAuth state failed'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();

  const limiter = options.redis
    ? createRedisRateLimiter(options.redis, options.onRedisFallback)
    : createMemoryRateLimiter();
  const throttle = createLoginThrottle(limiter, config.rateLimit);
  const apiKeys = createApiKeyService(orm, config.quotas);
  const clients = createClientStatus(orm);
  const owners = createLimitOwners(orm);
  const interactions = interactionRoutes({ getProvider: () => provider, em, audience, csrfKey, throttle });

  /** Hands the raw request to oidc-provider (its own Koa app, with its own cookie keys). */
  async function delegate(ctx: Context, url?: string): Promise<void> {
    const original = ctx.req.url;
    if (url) ctx.req.url = url;
    ctx.respond = false;
    try {
      await serve(ctx.req, ctx.res);
    } finally {
      ctx.req.url = original;
    }
  }

  async function middleware(ctx: Context, next: Next): Promise<void> {
    if (ctx.path === RFC8414_PATH && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      // RFC 8414 metadata is the OpenID discovery document (a superset); oidc-provider serves only the latter.
      return delegate(ctx, DISCOVERY_PATH);
    }
    if (ctx.path === PROVIDER_ROUTES.authorization && ctx.method === 'GET')
      return delegate(ctx, withOfflineConsent(ctx.req.url ?? ''));
    if (PROVIDER_PATHS.has(ctx.path) || RESUME_PATH.test(ctx.path)) return delegate(ctx);
    await interactions(ctx, next);
  }

  return {
    authenticator: createAuthenticator({
      verifier,
      apiKeys,
      clients,
      owners,
      limiter,
      rateLimit: config.rateLimit,
    }),
    limiter,
    middleware,
    throttle,
    apiKeys,
    clients,
    owners,
    issueTokens: (user, scope) =>
      issueFirstPartyTokens(
        provider,
        { audience, accessTokenTtlSeconds: config.accessTokenTtlSeconds },
        user,
        scope,
      ),
    audience,
    async rotateSigningKey() {
      const [kid] = await rotateSigningKey(em, secretBox, retainSeconds);
      await reloadKeys();
      return kid;
    },
    async close() {
      clearInterval(keyCheck);
      clearInterval(purge);
      await limiter.close();
    },
  };
}
