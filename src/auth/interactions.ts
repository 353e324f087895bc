// The login and consent pages of the authorization code flow (/interaction/{uid}): plain HTML forms
// that work without JavaScript. CSRF defence: each form carries a token that is an HMAC of the
// interaction (uid, its creation time and the browser session it belongs to), checked on POST; the
// interaction itself is only reachable with the browser's signed, SameSite `_interaction` cookie.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { errors as oidcErrors } from 'oidc-provider';
import { Application } from '../db/entities/Application.ts';
import type { User, UserRole } from '../db/entities/User.ts';
import { AppError, TooManyRequestsError } from '../domain/errors.ts';
import { findUser } from './accounts.ts';
import { EXPLORER_CLIENT_ID } from './applications.ts';
import type { LoginThrottle } from './login-throttle.ts';
import type { ClientInfo } from './pages/client-origin.ts';
import { consentPage } from './pages/consent.ts';
import { renderErrorPage } from './pages/error.ts';
import { sendPage } from './pages/html.ts';
import { loginPage } from './pages/login.ts';
import { checkPasswordLogin } from './password-login.ts';
import { grantableScopes } from './scopes.ts';

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

const ROUTE = /^\/interaction\/([A-Za-z0-9_-]{1,64})(\/(login|confirm|abort))?$/;
const FORM_LIMIT_BYTES = 8 * 1024;

/** A failure shown as an HTML page with an OAuth-style error code. */
class PageError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, description: string) {
    super(description);
    this.status = status;
    this.code = code;
  }
}

export interface InteractionOptions {
  getProvider: () => Provider;
  em: EntityManager;
  audience: string;
  csrfKey: Buffer;
  throttle: LoginThrottle;
}

export function interactionRoutes(options: InteractionOptions) {
  const { em, audience, csrfKey, throttle } = options;

  function csrfToken(interaction: Interaction): string {
    const binding = `${interaction.uid}.${interaction.iat}.${interaction.session?.uid ?? ''}`;
    return createHmac('sha256', csrfKey).update(binding).digest('base64url');
  }

  function assertCsrf(interaction: Interaction, presented: string | undefined): void {
    const expected = Buffer.from(csrfToken(interaction));
    const actual = Buffer.from(presented ?? '');
    if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) {
      throw new PageError(
        403,
        'invalid_request',
        'The form has expired or did not come from this page. Go back and try again.',
      );
    }
  }

  async function load(ctx: Context, uid: string): Promise<Interaction> {
    let interaction: Interaction;
    try {
      interaction = await options.getProvider().interactionDetails(ctx.req, ctx.res);
    } catch (error) {
      if (error instanceof oidcErrors.SessionNotFound) {
        throw new PageError(
          400,
          'invalid_request',
          'This sign-in has expired or belongs to another browser. Start again from the application.',
        );
      }
      throw error;
    }
    if (interaction.uid !== uid)
      throw new PageError(400, 'invalid_request', 'This sign-in does not belong to this browser.');
    return interaction;
  }

  /** The client as the pages present it: its name, and whether it is the service's own or whose. */
  async function clientInfo(interaction: Interaction): Promise<ClientInfo> {
    const clientId = String(interaction.params.client_id);
    const app = await em.fork().findOne(Application, { clientId, deletedAt: null }, { populate: ['owner'] });
    if (!app) return { clientId, name: clientId, firstParty: false, registeredBy: null };
    return {
      clientId,
      name: app.name,
      firstParty: app.firstParty,
      registeredBy: app.owner?.getEntity().username ?? null,
    };
  }

  /** The scopes the page asks consent for: requested, and allowed by the user's role. */
  function consentScopes(interaction: Interaction, role: UserRole): string[] {
    const requested = String(interaction.params.scope ?? '').split(' ');
    return grantableScopes(role, requested);
  }

  async function showLogin(
    ctx: Context,
    interaction: Interaction,
    status: number,
    extra: { username?: string; error?: string } = {},
  ) {
    sendPage(
      ctx,
      status,
      'Sign in',
      loginPage({
        uid: interaction.uid,
        client: await clientInfo(interaction),
        csrf: csrfToken(interaction),
        ...extra,
      }),
    );
  }

  async function showPage(ctx: Context, interaction: Interaction): Promise<void> {
    if (interaction.prompt.name === 'login') return showLogin(ctx, interaction, 200);
    if (interaction.prompt.name !== 'consent')
      throw new PageError(400, 'invalid_request', 'Unsupported step.');
    const user = await findUser(em.fork(), interaction.session?.accountId ?? '');
    if (!user)
      throw new PageError(400, 'invalid_request', 'The signed-in user no longer exists. Start again.');
    const client = await clientInfo(interaction);
    // Issue 37: the explorer is the service: the user is not asked to authorize the service to
    // itself. The grant is what the consent page would have granted (the requested scopes the role
    // allows); the code still goes only to the explorer's own page on this origin, against its PKCE
    // challenge. The demo client (first-party too, but its redirect URIs are loopback ports anything
    // on the machine may listen on) keeps the consent page.
    if (client.clientId === EXPLORER_CLIENT_ID) return grantConsent(ctx, interaction, user);
    sendPage(
      ctx,
      200,
      'Authorize',
      consentPage({
        uid: interaction.uid,
        client,
        csrf: csrfToken(interaction),
        username: user.username,
        scopes: consentScopes(interaction, user.role),
      }),
    );
  }

  async function submitLogin(ctx: Context, interaction: Interaction): Promise<void> {
    if (interaction.prompt.name !== 'login')
      throw new PageError(400, 'invalid_request', 'This sign-in is not waiting for a password.');
    const form = await readForm(ctx);
    assertCsrf(interaction, form.get('csrf') ?? undefined);
    const username = form.get('username') ?? '';
    const password = form.get('password') ?? '';
    if (!username || !password || username.length > 32 || password.length > 128) {
      throw new PageError(400, 'invalid_request', 'Enter a username and a password.');
    }
    const { user } = await checkPasswordLogin(em.fork(), throttle, { username, password, ip: ctx.ip });
    if (!user) {
      return showLogin(ctx, interaction, 200, { username, error: 'Invalid username or password.' });
    }
    const returnTo = await options
      .getProvider()
      .interactionResult(
        ctx.req,
        ctx.res,
        { login: { accountId: user.id } },
        { mergeWithLastSubmission: false },
      );
    redirect(ctx, returnTo);
  }

  async function submitConsent(ctx: Context, interaction: Interaction): Promise<void> {
    if (interaction.prompt.name !== 'consent')
      throw new PageError(400, 'invalid_request', 'This sign-in is not waiting for consent.');
    const form = await readForm(ctx);
    assertCsrf(interaction, form.get('csrf') ?? undefined);
    const accountId = interaction.session?.accountId;
    const user = accountId ? await findUser(em.fork(), accountId) : null;
    if (!user)
      throw new PageError(400, 'invalid_request', 'The signed-in user no longer exists. Start again.');
    await grantConsent(ctx, interaction, user);
  }

  /** Grants the requested scopes the user's role allows (the rest rejected) and resumes the flow. */
  async function grantConsent(ctx: Context, interaction: Interaction, user: User): Promise<void> {
    const provider = options.getProvider();
    const grant = interaction.grantId
      ? ((await provider.Grant.find(interaction.grantId)) ??
        new provider.Grant({ accountId: user.id, clientId: String(interaction.params.client_id) }))
      : new provider.Grant({ accountId: user.id, clientId: String(interaction.params.client_id) });
    const allowed = new Set(consentScopes(interaction, user.role));
    const details = interaction.prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    // Scopes the role does not allow are recorded as rejected, so they are neither granted nor asked again.
    const split = (scopes: string[]) => [
      scopes.filter((s) => allowed.has(s)).join(' '),
      scopes.filter((s) => !allowed.has(s)).join(' '),
    ];
    if (details.missingOIDCScope) {
      const [granted, rejected] = split(details.missingOIDCScope);
      if (granted) grant.addOIDCScope(granted);
      if (rejected) grant.rejectOIDCScope(rejected);
    }
    if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(details.missingResourceScopes ?? {})) {
      if (indicator !== audience) continue;
      const [granted, rejected] = split(scopes);
      if (granted) grant.addResourceScope(indicator, granted);
      if (rejected) grant.rejectResourceScope(indicator, rejected);
    }
    const grantId = await grant.save();
    const returnTo = await provider.interactionResult(
      ctx.req,
      ctx.res,
      { consent: { grantId } },
      { mergeWithLastSubmission: true },
    );
    redirect(ctx, returnTo);
  }

  async function abort(ctx: Context): Promise<void> {
    const returnTo = await options
      .getProvider()
      .interactionResult(
        ctx.req,
        ctx.res,
        { error: 'access_denied', error_description: 'The user cancelled the authorization.' },
        { mergeWithLastSubmission: false },
      );
    redirect(ctx, returnTo);
  }

  /** Serves /interaction/{uid}[/login|/confirm|/abort]; other paths go on down the stack. */
  return async function interactions(ctx: Context, next: () => Promise<unknown>): Promise<void> {
    const match = ROUTE.exec(ctx.path);
    if (!match) {
      await next();
      return;
    }
    const [, uid, , action] = match;
    const method = action === 'login' || action === 'confirm' ? 'POST' : 'GET';
    if (ctx.method !== method) {
      ctx.set('Allow', method);
      throw new AppError(405, '/problems/method-not-allowed', {
        detail: `Use ${method} on ${ctx.path}.`,
      });
    }
    try {
      const interaction = await load(ctx, uid);
      if (action === 'login') await submitLogin(ctx, interaction);
      else if (action === 'confirm') await submitConsent(ctx, interaction);
      else if (action === 'abort') await abort(ctx);
      else await showPage(ctx, interaction);
    } catch (error) {
      if (error instanceof PageError) {
        ctx.status = error.status;
        renderErrorPage(ctx, { error: error.code, error_description: error.message });
      } else if (error instanceof TooManyRequestsError) {
        for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
        ctx.status = 429;
        renderErrorPage(ctx, {
          error: 'temporarily_unavailable',
          error_description: 'Too many sign-in attempts from this address. Wait a little and try again.',
        });
      } else {
        throw error;
      }
    }
  };
}

/** 303 See Other, without Koa's "Redirecting to" body (the contract declares none). */
function redirect(ctx: Context, location: string): void {
  ctx.status = 303;
  ctx.redirect(location);
  ctx.body = '';
}

/** Reads an application/x-www-form-urlencoded body (small: two or three fields). */
async function readForm(ctx: Context): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded'))
    throw new PageError(
      400,
      'invalid_request',
      'The form must be sent as application/x-www-form-urlencoded.',
    );
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > FORM_LIMIT_BYTES) throw new PageError(400, 'invalid_request', 'The form is too large.');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
