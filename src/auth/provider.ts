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
export function apiResourceServer(audience: string, accessTokenTtlSeconds: number) {
  return {
    scope: API_SCOPES.join(' '),
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
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'EdDSA',
    },
    // One key type for everything the service signs (the contract's JWKS holds Ed25519 keys only).
    enabledJWA: {
      idTokenSigningAlgValues: ['EdDSA'],
    },
    routes: PROVIDER_ROUTES,
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      // Not offered: the API is the only resource, and the ID token carries `sub`.
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      resourceIndicators: {
        enabled: true,
        // No `resource` parameter needed: every token is for the API.
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== audience) throw new errors.InvalidTarget(`the only resource is ${audience}`);
          return apiResourceServer(audience, accessTokenTtlSeconds);
        },
      },
    },
    async extraTokenClaims(_ctx, token) {
      const accountId = (token as { accountId?: string }).accountId;
      if (!accountId) return undefined;
      const user = await em.fork().findOne(User, { id: accountId }, { fields: ['role'] });
      return user ? { user_id: accountId, role: user.role } : undefined;
    },
    rotateRefreshToken: true,
    ttl: {
      AccessToken: accessTokenTtlSeconds,
      IdToken: accessTokenTtlSeconds,
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
  });

  // Confidential clients' secrets are stored as SHA-256 digests (findClientMetadata hands the
  // digest to oidc-provider as `client_secret`), so the presented secret is digested to compare.
  provider.Client.prototype.compareClientSecret = async function compare(
    this: { clientSecret?: string },
    actual: string,
  ) {
    return typeof this.clientSecret === 'string' && secretMatchesDigest(actual, this.clientSecret);
  };

  provider.on('server_error', (_ctx, error) =>
    options.logger.error({ err: error }, 'oidc-provider server error'),
  );
  return provider;
}
