// The error page of the authorization server: shown instead of redirecting when the redirect URI
// cannot be trusted (unknown client, unregistered redirect_uri, expired interaction, ...).
import type { Context } from 'koa';
import { escapeHtml, sendPage } from './html.ts';

export function renderErrorPage(ctx: Context, out: { error?: string; error_description?: string }): void {
  const status = Math.max(ctx.status, 400);
  sendPage(
    ctx,
    status,
    'Sign-in error',
    `<h1>Sign-in could not continue</h1>
<p class="error"><strong>${escapeHtml(out.error ?? 'invalid_request')}</strong></p>
<p>${escapeHtml(out.error_description ?? 'The request is not valid.')}</p>
<p class="muted">Return to the application and try again.</p>`,
  );
}
