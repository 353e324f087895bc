// The OAuth 2.0 / OpenID Connect authorization server: oidc-provider, configured for the
// authorization code flow with PKCE (S256, always), RFC 9068 JWT access tokens signed with EdDSA
// for the API resource, rotating refresh tokens, and state persisted through the MikroORM adapter.
import type { EntityManager } from '@mikro-orm/sql';
import type { JWK } from 'jose';
import Provider, { type Configuration, errors, type KoaContextWithOIDC } from 'oidc-provider';
import { User } from '../db/entities/User.ts';
import type { Logger } from '../observability/logger.ts';
import { createAdapterFactory } from './adapter.ts';
import { secretMatchesDigest } from './client-secrets.ts';
import { renderErrorPage } from './pages/error.ts';
import { ALL_SCOPES, API_SCOPES, OIDC_SCOPES } from './scopes.ts';
import { CLIENT_ASSERTION_ALGORITHMS, serviceTokenGrant } from './service-accounts.ts';

/** The longest a `private_key_jwt` client assertion may live (exp - iat, and exp from now), in seconds. */
export const MAX_CLIENT_ASSERTION_SECONDS = 300;
/** oidc-provider's clock tolerance, allowed on top. */
const ASSERTION_CLOCK_TOLERANCE_SECONDS = 15;

/** Throws invalid_client when a client assertion claims a longer life than MAX_CLIENT_ASSERTION_SECONDS. */
function assertionLifetimeProblem(claims: { exp?: unknown; iat?: unknown }): void {
  const now = Math.floor(Date.now() / 1000);
  const max = MAX_CLIENT_ASSERTION_SECONDS + ASSERTION_CLOCK_TOLERANCE_SECONDS;
  const exp = typeof claims.exp === 'number' ? claims.exp : Number.POSITIVE_INFINITY;
  const issued = typeof claims.iat === 'number' ? claims.iat : now;
  if (exp - now > max || exp - issued > max)
    throw new errors.InvalidClientAuth(
      `client assertions may live at most ${MAX_CLIENT_ASSERTION_SECONDS} s (exp - iat, and exp from now)`,
    );
}

/** Routes oidc-provider serves, as the contract names them. */
export const PROVIDER_ROUTES = {
  authorization: '/authorize',
  token: '/token',
  revocation: '/token/revocation',
  jwks: '/jwks',
} as const;

export interface ProviderOptions {
  issuer: string;
  /** The API's resource indicator and the `aud` of every access token. */
  audience: string;
  em: EntityManager;
  privateJwks: JWK[];
  cookieKeys: string[];
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  trustProxy: boolean;
  logger: Logger;
}

/** What the API resource server tells oidc-provider: scopes, audience, JWT format and EdDSA. */
export function apiResourceServer(
  audience: string,
  accessTokenTtlSeconds: number,
  scope = API_SCOPES.join(' '),
) {
  return {
    scope,
    audience,
    accessTokenTTL: accessTokenTtlSeconds,
    accessTokenFormat: 'jwt' as const,
    jwt: { sign: { alg: 'EdDSA' as const } },
  };
}

export function createProvider(options: ProviderOptions): Provider {
  const { em, audience, accessTokenTtlSeconds, refreshTokenTtlSeconds } = options;

  const configuration: Configuration = {
    adapter: createAdapterFactory(em),
    jwks: { keys: options.privateJwks as never },
    cookies: {
      keys: options.cookieKeys,
      long: { httpOnly: true, sameSite: 'lax', signed: true },
      short: { httpOnly: true, sameSite: 'lax', signed: true },
    },
    async findAccount(_ctx, sub) {
      const user = await em.fork().findOne(User, { id: sub }, { fields: ['id'] });
      if (!user) return undefined;
      return { accountId: user.id, claims: async () => ({ sub: user.id }) };
    },
    scopes: [...OIDC_SCOPES],
    claims: { openid: ['sub'] },
    responseTypes: ['code'],
    // PKCE for every client; oidc-provider 9 implements S256 only (`plain` is rejected).
    pkce: { required: () => true },
    // Redirect URIs are compared exactly, and must always be sent (OAuth 2.1, security BCP).
    allowOmittingSingleRegisteredRedirectUri: false,
    // private_key_jwt: service accounts that registered a JWK Set (RFC 7523 client assertions).
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'],
    // 30.12: an assertion is for one request, moments after it was signed: a longer one (10 years
    // were accepted) is a reusable credential, and its jti is kept for replay detection until it expires.
    assertJwtClientAuthClaimsAndHeader: async (_ctx, claims) => assertionLifetimeProblem(claims),
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'EdDSA',
    },
    // One key type for everything the service signs (the contract's JWKS holds Ed25519 keys only).
    enabledJWA: {
      idTokenSigningAlgValues: ['EdDSA'],
      clientAuthSigningAlgValues: [...CLIENT_ASSERTION_ALGORITHMS],
    },
    routes: PROVIDER_ROUTES,
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      // Service accounts (src/auth/service-accounts.ts): RFC 6749 §4.4.
      clientCredentials: { enabled: true },
      // Not offered: the API is the only resource, and the ID token carries `sub`.
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      resourceIndicators: {
        enabled: true,
        // No `resource` parameter needed: every token is for the API.
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: async (_ctx, indicator, client) => {
          if (indicator !== audience) throw new errors.InvalidTarget(`the only resource is ${audience}`);
          if (!client.grantTypes?.includes('client_credentials'))
            return apiResourceServer(audience, accessTokenTtlSeconds);
          // A service account's token carries at most the scopes it was granted that its role allows.
          const grant = await serviceTokenGrant(em.fork(), client.clientId);
          return apiResourceServer(audience, accessTokenTtlSeconds, grant?.scopes.join(' ') ?? '');
        },
      },
    },
    async extraTokenClaims(_ctx, token) {
      const { accountId, clientId } = token as { accountId?: string; clientId?: string };
      // A client credentials token: the service account is the client (sub = client_id = user_id).
      if (!accountId) {
        const grant = clientId ? await serviceTokenGrant(em.fork(), clientId) : undefined;
        return grant ? { user_id: grant.userId, role: grant.role } : undefined;
      }
      const user = await em.fork().findOne(User, { id: accountId }, { fields: ['role'] });
      return user ? { user_id: accountId, role: user.role } : undefined;
    },
    rotateRefreshToken: true,
    ttl: {
      AccessToken: accessTokenTtlSeconds,
      IdToken: accessTokenTtlSeconds,
      // The client credentials grant's access tokens (service accounts) live as long as users' ones.
      ClientCredentials: accessTokenTtlSeconds,
      AuthorizationCode: 60,
      Interaction: 15 * 60,
      Session: refreshTokenTtlSeconds,
      Grant: refreshTokenTtlSeconds,
      // A rotated refresh token inherits what is left of its family's lifetime: rotation never
      // extends a login beyond REFRESH_TOKEN_TTL_SECONDS.
      RefreshToken: (ctx: KoaContextWithOIDC) => {
        const rotated = ctx?.oidc?.entities.RotatedRefreshToken;
        return rotated ? Math.max(1, rotated.remainingTTL) : refreshTokenTtlSeconds;
      },
    },
    renderError: async (ctx, out) => renderErrorPage(ctx, out),
  };

  const provider = new Provider(options.issuer, configuration);
  provider.proxy = options.trustProxy;
  provider.use(async (ctx, next) => {
    await next();
    // Redirects carry no body (the contract declares none; Koa would add "Redirecting to ...").
    if (ctx.status >= 300 && ctx.status < 400 && ctx.response.get('Location')) ctx.body = '';
    // oidc-provider lists only its own (OpenID) scopes; the API's scopes are requested here too.
    if (ctx.path === '/.well-known/openid-configuration' && ctx.status === 200) {
      (ctx.body as { scopes_supported: string[] }).scopes_supported = [...ALL_SCOPES];
    }
    // RFC 6749 §5.1 lets `scope` be left out; the contract always has it (a client credentials
    // request without `scope` gets a token with none, which says so).
    if (
      ctx.path === PROVIDER_ROUTES.token &&
      ctx.status === 200 &&
      ctx.body &&
      typeof ctx.body === 'object'
    ) {
      const body = ctx.body as { scope?: string };
      body.scope ??= '';
    }
  });

  // Confidential clients' secrets are stored as SHA-256 digests (findClientMetadata hands the
  // digests to oidc-provider as `client_secret`, space-separated when a service account has two
  // during a rotation), so the presented secret is digested and compared with each.
  provider.Client.prototype.compareClientSecret = async function compare(
    this: { clientSecret?: string },
    actual: string,
  ) {
    if (typeof this.clientSecret !== 'string') return false;
    const matches = this.clientSecret.split(' ').map((digest) => secretMatchesDigest(actual, digest));
    return matches.includes(true);
  };

  provider.on('server_error', (_ctx, error) =>
    options.logger.error({ err: error }, 'oidc-provider server error'),
  );
  return provider;
}
