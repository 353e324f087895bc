// Registration, first-party login, the current user and role changes.

import {
  findUser,
  listUsers,
  registerUser,
  setUserRole,
  type UserRegisteredHook,
  userView,
} from '../../auth/accounts.ts';
import type { TokenResponse } from '../../auth/first-party-login.ts';
import type { LoginThrottle } from '../../auth/login-throttle.ts';
import { checkPasswordLogin } from '../../auth/password-login.ts';
import type { PasswordHasher } from '../../auth/passwords.ts';
import { rateLimitHeaders } from '../../auth/rate-limit.ts';
import type { User } from '../../db/entities/User.ts';
import type { Orm } from '../../db/orm.ts';
import { UnauthorizedError } from '../../domain/errors.ts';
import { caller, type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { cursorOf, limitOf } from './ledger-request.ts';

export interface AuthHandlerDeps {
  orm: Orm;
  throttle: LoginThrottle;
  onUserRegistered?: UserRegisteredHook;
  /** How registrations hash their password (src/auth/passwords.ts); absent: at the service's cost. */
  hashPassword?: PasswordHasher;
  issueTokens(user: User, scope: string | undefined): Promise<TokenResponse>;
  /**
   * After a role change has committed: what holds the user's previous role lets go of it (13.7:
   * this instance's cached API key lookups, which carry the role, kept it for up to 5 s).
   */
  onRoleChanged?(userId: string): Promise<void> | void;
}

/** The same answer whether the user is unknown or the password wrong (and, by the dummy hash, the same time). */
function invalidCredentials(): UnauthorizedError {
  return new UnauthorizedError(
    'The username or password is incorrect.',
    'Bearer realm="gats"',
    '/problems/invalid-credentials',
  );
}

export function authHandlers(deps: AuthHandlerDeps): HandlerMap {
  const { orm, throttle } = deps;
  return typedHandlers<'registerUser' | 'login' | 'getCurrentUser' | 'listUsers' | 'setUserRole'>({
    async registerUser(request, ctx) {
      ctx.set(rateLimitHeaders(await throttle.attempt('register', ctx.ip)));
      const user = await registerUser(orm, request.body, deps.onUserRegistered, deps.hashPassword);
      ctx.set('Location', '/api/v1/me');
      respond(ctx, 'registerUser', 201, user);
    },

    async login(request, ctx) {
      const { username, password, scope } = request.body;
      const { user, budget } = await checkPasswordLogin(orm.em.fork(), throttle, {
        username,
        password,
        ip: ctx.ip,
      });
      ctx.set(rateLimitHeaders(budget));
      if (!user) throw invalidCredentials();
      ctx.set('Cache-Control', 'no-store');
      respond(ctx, 'login', 200, await deps.issueTokens(user, scope));
    },

    async getCurrentUser(request, ctx) {
      const em = orm.em.fork();
      const auth = caller(request);
      const user = await findUser(em, auth.userId);
      if (!user)
        throw new UnauthorizedError(
          'The user of this token no longer exists.',
          'Bearer realm="gats", error="invalid_token"',
          '/problems/invalid-token',
        );
      // 30.12: the role the caller acts with (a service account capped by its owner's role), not the stored one.
      respond(ctx, 'getCurrentUser', 200, { ...(await userView(em, user)), role: auth.role });
    },

    async listUsers(request, ctx) {
      const { role, username } = request.query;
      respond(
        ctx,
        'listUsers',
        200,
        await listUsers(orm.em.fork(), {
          role,
          username,
          limit: limitOf(request),
          cursor: cursorOf(request),
        }),
      );
    },

    async setUserRole(request, ctx) {
      respond(ctx, 'setUserRole', 200, await setUserRole(orm, request.params.user_id, request.body.role));
      await deps.onRoleChanged?.(request.params.user_id);
    },
  });
}
