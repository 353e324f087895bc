// What the edge knows about the caller once credentials are checked, and the contract every
// authenticator fulfils. The implementation lives in src/auth/ (token + API key verification).
import type { Context } from 'koa';
import type { OperationGuard } from './contract.ts';

export type Role = 'player' | 'studio' | 'oracle' | 'admin';

export interface AuthContext {
  userId: string;
  role: Role;
  scopes: ReadonlySet<string>;
  /** The OAuth client (application) the token was issued to. */
  clientId: string;
  /** `jti` of the access token. */
  tokenId: string;
  /** Seconds since the epoch when the access token expires. */
  expiresAt: number;
  /** The API key presented, when the operation needs one. */
  apiKeyId: string | null;
}

export interface Authenticator {
  /**
   * Checks the credentials the guard asks for (401 when missing or invalid, 403 when a scope or
   * role is lacking, 429 when the key's rate limit is used up) and returns who is calling.
   */
  authenticate(ctx: Context, guard: OperationGuard): Promise<AuthContext>;
}
