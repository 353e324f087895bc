// POST /api/v1/auth/login mints tokens through the same oidc-provider instance as /token: a Grant
// for the first-party client, a JWT access token for the API resource and a refresh token, all
// oidc-provider models. So keys, lifetimes, revocation and refresh (at the standard token
// endpoint, grant_type=refresh_token) are shared with the authorization code flow.
import type Provider from 'oidc-provider';
import type { User } from '../db/entities/User.ts';
import { FIRST_PARTY_CLIENT_ID } from './applications.ts';
import { apiResourceServer } from './provider.ts';
import { API_SCOPES, grantableScopes, OIDC_SCOPES } from './scopes.ts';

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** The `gty` recorded on the tokens (shows up as the grant type they descend from). */
const GRANT_TYPE = 'password';

export async function issueFirstPartyTokens(
  provider: Provider,
  options: { audience: string; accessTokenTtlSeconds: number },
  user: User,
  requestedScope: string | undefined,
): Promise<TokenResponse> {
  const requested = requestedScope === undefined ? undefined : requestedScope.split(' ').filter(Boolean);
  // The first-party session always has a refresh token, whatever narrower scope was asked for.
  const granted = grantableScopes(user.role, requested && [...requested, 'offline_access']);
  const oidcScopes = granted.filter((scope) => (OIDC_SCOPES as readonly string[]).includes(scope));
  const apiScopes = granted.filter((scope) => (API_SCOPES as readonly string[]).includes(scope));

  const client = await provider.Client.find(FIRST_PARTY_CLIENT_ID);
  if (!client) throw new Error(`the first-party client ${FIRST_PARTY_CLIENT_ID} is not seeded`);

  const grant = new provider.Grant({ accountId: user.id, clientId: client.clientId });
  grant.addOIDCScope(oidcScopes.join(' '));
  grant.addResourceScope(options.audience, apiScopes.join(' '));
  const grantId = await grant.save();

  const accessToken = new provider.AccessToken({
    accountId: user.id,
    client,
    grantId,
    gty: GRANT_TYPE,
    scope: apiScopes.join(' '),
    resourceServer: new provider.ResourceServer(
      options.audience,
      apiResourceServer(options.audience, options.accessTokenTtlSeconds),
    ),
  });
  const accessTokenValue = await accessToken.save();

  const refreshToken = new provider.RefreshToken({
    accountId: user.id,
    client,
    grantId,
    gty: GRANT_TYPE,
    scope: granted.join(' '),
    resource: options.audience,
    rotations: 0,
    authTime: Math.floor(Date.now() / 1000),
  });
  const refreshTokenValue = await refreshToken.save();

  return {
    access_token: accessTokenValue,
    token_type: 'Bearer',
    expires_in: accessToken.expiration,
    refresh_token: refreshTokenValue,
    scope: granted.join(' '),
  };
}
