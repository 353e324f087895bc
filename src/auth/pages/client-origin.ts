// Who is asking (13.10): the login and consent pages say whether the client is one of the service's
// own applications or a third party's, and which user registered it, so a third-party application
// cannot pass itself off as the service by its name alone.
import { escapeHtml } from './html.ts';

export interface ClientInfo {
  clientId: string;
  name: string;
  /** One of the service's own clients (seeded, no owner). */
  firstParty: boolean;
  /** Username of the user who registered a third-party client (null when unknown or deleted). */
  registeredBy: string | null;
}

export function clientOrigin(client: ClientInfo): string {
  if (client.firstParty) {
    return `<p class="client-origin first-party"><strong>${escapeHtml(client.name)}</strong> is part of this service.</p>`;
  }
  const owner = client.registeredBy
    ? `registered by the user <strong>${escapeHtml(client.registeredBy)}</strong>`
    : 'registered by a user of this service';
  return `<p class="client-origin third-party" role="note"><strong>${escapeHtml(client.name)}</strong> is a
<strong>third-party application</strong>, ${owner} (client id <code>${escapeHtml(client.clientId)}</code>).
It is not part of this service: continue only if you trust it.</p>`;
}
