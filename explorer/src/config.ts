// Fixed facts about how the explorer talks to the service it is served by.

/** The public OAuth client the service registers for the explorer (PKCE, no secret). */
export const CLIENT_ID = 'gats-explorer';

/**
 * Everything the explorer does: read, mint, transfer; offline_access for refresh tokens; users:admin
 * for the admin console (the service grants a scope only when the user's role allows it).
 */
export const SCOPES = 'openid offline_access assets:read assets:write transfers:write users:admin';

/** Where the explorer is mounted; every route lives below it. */
export const BASE_PATH = '/explorer/';

export function callbackUrl(): string {
  return `${location.origin}${BASE_PATH}callback`;
}

/** Refresh the access token a minute before it expires (a quarter of its life, if that is shorter). */
export function refreshMarginMs(lifetimeMs: number): number {
  return Math.min(60_000, lifetimeMs / 4);
}

/** Page sizes of the lists the explorer shows. */
export const PAGE_SIZE = { nfts: 12, currencies: 10, owners: 10, transfers: 10 } as const;
