// Service account ids (issue 18): `svc_` and a ULID, shared by the account's user row and its OAuth
// client. Its own module so the registration code can reserve the prefix without depending on the
// service-account code (which depends on it).

/** Service account ids (and so their usernames and client ids) start with this; users may not register it. */
export const SERVICE_ACCOUNT_PREFIX = 'svc_';

export function isServiceAccountId(id: string): boolean {
  return id.startsWith(SERVICE_ACCOUNT_PREFIX);
}
