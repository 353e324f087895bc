// The credentials of a WebSocket upgrade: a one-time ticket (browsers cannot set headers on a
// WebSocket), else the same bearer token and API key headers as REST, through the same
// authenticator, with the scope that reading events over REST needs.
import type { IncomingMessage } from 'node:http';
import type { Context } from 'koa';
import type { AuthContext, Authenticator } from '../auth/caller.ts';
import { bundledOperations, type ContractOperation, type OperationGuard } from '../contract/operations.ts';
import { UnauthorizedError } from '../domain/errors.ts';
import type { TicketStore } from '../events/tickets.ts';

/** What a WebSocket handshake needs: the same as reading events over REST (the contract's listEvents). */
const WS_GUARD: OperationGuard = {
  ...(bundledOperations().byId.get('listEvents') as ContractOperation).guard,
  operationId: 'websocket',
};

export interface UpgradeCredentialsDeps {
  authenticator: Authenticator;
  tickets: TicketStore;
  apiKeyIsActive(keyId: string): Promise<boolean>;
  /** A Koa context for the upgrade request (the authenticator reads headers and the client address). */
  createContext(request: IncomingMessage): Context;
}

export interface UpgradeCredentials {
  /** Credentials of an upgrade request (headers or a ticket); throws an AppError (401/403/429). */
  authenticate(request: IncomingMessage, url: URL): Promise<AuthContext>;
  /** Whether the credentials still hold (API key not revoked); checked at every heartbeat. */
  stillValid(auth: AuthContext): Promise<boolean>;
}

export function upgradeCredentials(deps: UpgradeCredentialsDeps): UpgradeCredentials {
  // Whether credentials checked earlier still hold: the API key may have been revoked since.
  const stillValid = async (auth: AuthContext) =>
    auth.apiKeyId === null || deps.apiKeyIsActive(auth.apiKeyId);
  return {
    async authenticate(request, url) {
      const ticket = url.searchParams.get('ticket');
      if (ticket !== null) {
        const auth = await deps.tickets.redeem(ticket);
        // The ticket stands for credentials checked when it was issued; they may have lapsed since.
        if (!auth || auth.expiresAt <= Date.now() / 1000 || !(await stillValid(auth)))
          throw new UnauthorizedError(
            'The WebSocket ticket is unknown, used or expired, or its credentials no longer hold.',
            'Bearer',
            '/problems/invalid-ticket',
          );
        return auth;
      }
      return deps.authenticator.authenticate(deps.createContext(request), WS_GUARD);
    },
    // A revoked API key ends its connections at the next heartbeat (close 4001).
    stillValid,
  };
}
