// The typed API client: the official TypeScript client (`@gats/client`, clients/typescript), so every
// request and response shape comes from the published OpenAPI document, every write carries an
// Idempotency-Key its retries reuse, and a 429 is waited out as its Retry-After says.
import { createGatsClient, type GatsClient } from '../../../clients/typescript/src/index.ts';
import type { components, operations } from '../../../generated/openapi/types.ts';

export type ApiClient = GatsClient;
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
  return createGatsClient({
    baseUrl: location.origin,
    token: async () => (await credentials?.current())?.accessToken,
    apiKey: async () => (await credentials?.current())?.apiKey ?? undefined,
  });
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
