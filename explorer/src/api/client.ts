// The typed API client: openapi-fetch over the contract's generated `paths`, so every request and
// response shape comes from the published OpenAPI document, never from hand-written types.
import createClient from 'openapi-fetch';
import type { components, operations, paths } from '../../../generated/openapi/types.ts';

export type ApiClient = ReturnType<typeof createClient<paths>>;
export type Schemas = components['schemas'];
export type Operations = operations;

export interface Credentials {
  accessToken: string;
  /** Null only while the session's API key is being created (that call needs the bearer token only). */
  apiKey: string | null;
}

/** Hands out fresh credentials (refreshing the access token first when it is about to expire). */
export interface CredentialSource {
  current(): Promise<Credentials | null>;
}

export function createApiClient(credentials?: CredentialSource): ApiClient {
  const client = createClient<paths>({ baseUrl: location.origin });
  if (credentials) {
    client.use({
      async onRequest({ request }) {
        const current = await credentials.current();
        if (current) {
          request.headers.set('Authorization', `Bearer ${current.accessToken}`);
          if (current.apiKey) request.headers.set('X-API-Key', current.apiKey);
        }
        return request;
      },
    });
  }
  return client;
}

/** Request options for the OAuth endpoints, which take `application/x-www-form-urlencoded` bodies. */
export const formEncoded = {
  headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  bodySerializer: (body: unknown) => {
    const form = new URLSearchParams();
    for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
      if (value !== undefined) form.set(name, String(value));
    }
    return form;
  },
};
