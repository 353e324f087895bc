import { type ClientInfo, clientOrigin } from './client-origin.ts';
import { escapeHtml } from './html.ts';

const DESCRIPTIONS: Record<string, string> = {
  openid: 'Know who you are (your user id)',
  offline_access: 'Stay signed in (refresh tokens)',
  'assets:read': 'Read your assets, wallets, transfers, prices and events',
  'assets:write': 'Create collections, NFTs and currencies, and link wallets',
  'transfers:write': 'Move assets out of your wallets',
  'prices:write': 'Post prices',
  'identity:write': 'Create DIDs, request and revoke credentials',
  'users:admin': "Change users' roles",
};

export function consentPage(input: {
  uid: string;
  client: ClientInfo;
  csrf: string;
  username: string;
  scopes: string[];
}): string {
  const items = input.scopes.map(
    (scope) =>
      `<li>${escapeHtml(DESCRIPTIONS[scope] ?? scope)} <span class="muted">(${escapeHtml(scope)})</span></li>`,
  );
  const name = escapeHtml(input.client.name);
  return `<h1>Authorize ${name}${input.client.firstParty ? '' : ' (third party)'}</h1>
${clientOrigin(input.client)}
<p>Signed in as <strong>${escapeHtml(input.username)}</strong>.</p>
<p><strong>${name}</strong> asks to:</p>
<ul>${items.join('') || '<li>Sign you in</li>'}</ul>
<form method="post" action="/interaction/${escapeHtml(input.uid)}/confirm">
<input type="hidden" name="csrf" value="${escapeHtml(input.csrf)}">
<button type="submit">Allow</button>
</form>
<p><a href="/interaction/${escapeHtml(input.uid)}/abort">Deny</a></p>`;
}
