// Who is calling, once credentials are checked, and the interface the HTTP edge and the WebSocket
// gateway authenticate through. The implementation is src/auth/authenticator.ts (token + API key).
import type { Context } from 'koa';
import type { OperationGuard } from '../contract/operations.ts';
import type { UserRole } from '../db/entities/User.ts';

export type Role = UserRole;

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
  /**
   * The user whose per-user limits (request rate, WebSocket connections, webhooks, trade proposals)
   * the caller counts against: `userId`, or a service account's owner (30.6).
   */
  account: string;
}

export interface Authenticator {
  /**
   * Checks the credentials the guard asks for (401 when missing or invalid, 403 when a scope or
   * role is lacking, 429 when the key's rate limit is used up) and returns who is calling.
   */
  authenticate(ctx: Context, guard: OperationGuard): Promise<AuthContext>;
}
