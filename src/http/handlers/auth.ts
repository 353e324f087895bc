// Registration, first-party login, the current user and role changes.

import {
  findUser,
  registerUser,
  setUserRole,
  type UserRegisteredHook,
  userView,
} from '../../auth/accounts.ts';
import type { TokenResponse } from '../../auth/first-party-login.ts';
import type { LoginThrottle } from '../../auth/login-throttle.ts';
import { checkPasswordLogin } from '../../auth/password-login.ts';
import { rateLimitHeaders } from '../../auth/rate-limit.ts';
import type { User, UserRole } from '../../db/entities/User.ts';
import type { Orm } from '../../db/orm.ts';
import { UnauthorizedError } from '../../domain/errors.ts';
import { caller, type HandlerMap } from '../handler.ts';

export interface AuthHandlerDeps {
  orm: Orm;
  throttle: LoginThrottle;
  onUserRegistered?: UserRegisteredHook;
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
  return {
    async registerUser(request, ctx) {
      ctx.set(rateLimitHeaders(await throttle.attempt('register', ctx.ip)));
      const body = request.body as { username: string; password: string };
      ctx.body = await registerUser(orm, body, deps.onUserRegistered);
      ctx.status = 201;
      ctx.set('Location', '/api/v1/me');
    },

    async login(request, ctx) {
      const { username, password, scope } = request.body as {
        username: string;
        password: string;
        scope?: string;
      };
      const { user, budget } = await checkPasswordLogin(orm.em.fork(), throttle, {
        username,
        password,
        ip: ctx.ip,
      });
      ctx.set(rateLimitHeaders(budget));
      if (!user) throw invalidCredentials();
      ctx.set('Cache-Control', 'no-store');
      ctx.body = await deps.issueTokens(user, scope);
    },

    async getCurrentUser(request, ctx) {
      const em = orm.em.fork();
      const user = await findUser(em, caller(request).userId);
      if (!user)
        throw new UnauthorizedError(
          'The user of this token no longer exists.',
          'Bearer realm="gats", error="invalid_token"',
          '/problems/invalid-token',
        );
      ctx.body = await userView(em, user);
    },

    async setUserRole(request, ctx) {
      const { role } = request.body as { role: UserRole };
      ctx.body = await setUserRole(orm, request.params.user_id, role);
      await deps.onRoleChanged?.(request.params.user_id);
    },
  };
}
