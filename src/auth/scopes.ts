// Which scopes a token may carry, by role. A token never grants more than its user's role allows:
// requested scopes are intersected with the role's allowance when a token is issued, and again when
// a token is used (so a demoted user's older tokens lose what the new role no longer allows).
import type { Role } from './caller.ts';

export const OIDC_SCOPES = ['openid', 'offline_access'] as const;

/** Scopes of the API (the resource server); OIDC_SCOPES belong to the authorization server itself. */
export const API_SCOPES = [
  'assets:read',
  'assets:write',
  'transfers:write',
  'prices:write',
  'identity:write',
  'users:admin',
] as const;

/** A scope of the API: the contract's ApiScope. */
export type ApiScope = (typeof API_SCOPES)[number];

export function isApiScope(scope: string): scope is ApiScope {
  return (API_SCOPES as readonly string[]).includes(scope);
}

export const ALL_SCOPES: readonly string[] = [...OIDC_SCOPES, ...API_SCOPES];

const BASE = ['openid', 'offline_access', 'assets:read', 'assets:write', 'transfers:write', 'identity:write'];

const ALLOWED: Record<Role, ReadonlySet<string>> = {
  player: new Set(BASE),
  studio: new Set(BASE),
  oracle: new Set([...BASE, 'prices:write']),
  admin: new Set(ALL_SCOPES),
};

export function scopesAllowedFor(role: Role): ReadonlySet<string> {
  return ALLOWED[role];
}

/** The requested scopes the role allows, in canonical order; `undefined` requests everything allowed. */
export function grantableScopes(role: Role, requested?: Iterable<string>): string[] {
  const allowed = scopesAllowedFor(role);
  const wanted = requested === undefined ? allowed : new Set(requested);
  return ALL_SCOPES.filter((scope) => wanted.has(scope) && allowed.has(scope));
}
