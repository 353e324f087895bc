import { type ClientInfo, clientOrigin } from './client-origin.ts';
import { escapeHtml } from './html.ts';

export function loginPage(input: {
  uid: string;
  client: ClientInfo;
  csrf: string;
  username?: string;
  error?: string;
}): string {
  return `<h1>Sign in</h1>
<p class="muted">to continue to <strong>${escapeHtml(input.client.name)}</strong></p>
${input.client.firstParty ? '' : clientOrigin(input.client)}
${input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : ''}
<form method="post" action="/interaction/${escapeHtml(input.uid)}/login" autocomplete="on">
<input type="hidden" name="csrf" value="${escapeHtml(input.csrf)}">
<label for="username">Username</label>
<input type="text" id="username" name="username" required maxlength="32" autocomplete="username" value="${escapeHtml(input.username ?? '')}">
<label for="password">Password</label>
<input type="password" id="password" name="password" required maxlength="128" autocomplete="current-password">
<button type="submit">Sign in</button>
</form>
<p><a href="/interaction/${escapeHtml(input.uid)}/abort">Cancel</a></p>`;
}
