// Shared steps of the access-control tests: register, log in, create an API key, call with both.
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from '../../helpers/app.ts';
import { assertMatchesContract } from '../../helpers/contract.ts';
import { FIXTURE_PASSWORD } from '../../helpers/fixture-passwords.ts';

export const PASSWORD = FIXTURE_PASSWORD;

export interface Session {
  userId: string;
  username: string;
  accessToken: string;
  refreshToken: string;
  scope: string;
  apiKey: string;
  apiKeyId: string;
}

export function uniqueUsername(prefix = 'user'): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/** A registered user (its password stored at a test's cost by the test app: test/helpers/fixture-passwords.ts). */
export async function register(
  t: TestApp,
  username = uniqueUsername(),
): Promise<{ id: string; username: string }> {
  const response = await t.http('POST', '/api/v1/auth/register', { body: { username, password: PASSWORD } });
  expect(response.status, response.text).toBe(201);
  return response.body;
}

export async function login(t: TestApp, username: string, scope?: string) {
  const response = await t.http('POST', '/api/v1/auth/login', {
    body: { username, password: PASSWORD, ...(scope ? { scope } : {}) },
  });
  expect(response.status, response.text).toBe(200);
  return response.body as {
    access_token: string;
    refresh_token: string;
    scope: string;
    expires_in: number;
    token_type: string;
  };
}

export async function createApiKey(
  t: TestApp,
  accessToken: string,
  name = 'test key',
): Promise<{ id: string; key: string }> {
  const response = await t.http('POST', '/api/v1/api-keys', { body: { name }, headers: bearer(accessToken) });
  expect(response.status, response.text).toBe(201);
  return response.body;
}

/**
 * A service account's own credentials: a client credentials token (client_secret_post, scope
 * `assets:read`) and an API key made with it, as headers.
 */
export async function serviceAccountCredentials(
  t: TestApp,
  account: { id: string; clientSecret: string },
): Promise<Record<string, string>> {
  const token = await t.http('POST', '/token', {
    form: {
      grant_type: 'client_credentials',
      client_id: account.id,
      client_secret: account.clientSecret,
      scope: 'assets:read',
    },
  });
  expect(token.status, token.text).toBe(200);
  const key = await createApiKey(t, token.body.access_token, 'service account key');
  return credentials(token.body.access_token, key.key);
}

export function bearer(accessToken: string): Record<string, string> {
  return { authorization: `Bearer ${accessToken}` };
}

export function credentials(accessToken: string, apiKey: string): Record<string, string> {
  return { authorization: `Bearer ${accessToken}`, 'x-api-key': apiKey };
}

/** A registered, logged-in user with an API key of the first-party client. */
export async function newSession(
  t: TestApp,
  options: { username?: string; scope?: string } = {},
): Promise<Session> {
  const user = await register(t, options.username);
  const tokens = await login(t, user.username, options.scope);
  const key = await createApiKey(t, tokens.access_token);
  return {
    userId: user.id,
    username: user.username,
    accessToken: tokens.access_token,
    refreshToken: tokens.refresh_token,
    scope: tokens.scope,
    apiKey: key.key,
    apiKeyId: key.id,
  };
}

/** A minimal browser: a cookie jar and manual redirects, every response checked against the contract. */
export class Browser {
  readonly #t: TestApp;
  readonly #cookies = new Map<string, string>();

  constructor(t: TestApp) {
    this.#t = t;
  }

  async request(
    method: string,
    url: string,
    options: { form?: Record<string, string>; unchecked?: boolean } = {},
  ) {
    const { pathname, search } = new URL(url, this.#t.baseUrl);
    const cookie = [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await this.#t.http(method, pathname + search, {
      form: options.form,
      headers: cookie ? { cookie } : {},
      unchecked: options.unchecked ?? false,
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const index = pair.indexOf('=');
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      const expired = attributes.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a)) || value === '';
      if (expired) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
    return response;
  }

  /** GETs `url` and follows redirects within the service; returns the first response that is not one (or leaves). */
  async follow(url: string) {
    let response = await this.request('GET', url);
    while (response.status === 303 || response.status === 302) {
      const location = new URL(response.headers.get('location') as string, this.#t.baseUrl);
      if (location.origin !== this.#t.baseUrl) return { response, location };
      response = await this.request('GET', location.href);
    }
    return { response, location: null };
  }
}

export function csrfFrom(html: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error(`no csrf token in page: ${html.slice(0, 300)}`);
  return match[1];
}

export function interactionPath(html: string, action: 'login' | 'confirm'): string {
  const match = new RegExp(`action="(/interaction/[^"]+/${action})"`).exec(html);
  if (!match) throw new Error(`no ${action} form in page`);
  return match[1];
}

/**
 * Drives the authorization code flow through the real pages: authorize -> login page -> consent
 * page -> back to the client. Returns the final redirect to the client's redirect_uri.
 */
export async function authorizeInBrowser(
  browser: Browser,
  authorizeUrl: URL | string,
  username: string,
  password = PASSWORD,
): Promise<URL> {
  let { response, location } = await browser.follow(authorizeUrl.toString());
  if (location) return location;
  expect(response.status, response.text).toBe(200);
  if (response.text.includes('/login"')) {
    const login = await browser.request('POST', interactionPath(response.text, 'login'), {
      form: { username, password, csrf: csrfFrom(response.text) },
    });
    expect(login.status, login.text).toBe(303);
    ({ response, location } = await browser.follow(login.headers.get('location') as string));
    if (location) return location;
  }
  expect(response.text).toContain('/confirm"');
  const consent = await browser.request('POST', interactionPath(response.text, 'confirm'), {
    form: { csrf: csrfFrom(response.text) },
  });
  expect(consent.status, consent.text).toBe(303);
  ({ location } = await browser.follow(consent.headers.get('location') as string));
  if (!location) throw new Error('the flow did not return to the client');
  return location;
}

/** A fetch for openid-client: its own requests are checked against the contract too. */
export const checkedFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  const url = new URL(input instanceof Request ? input.url : input.toString());
  const text = await response.clone().text();
  const contentType = response.headers.get('content-type') ?? '';
  assertMatchesContract(init?.method ?? 'GET', url.pathname, {
    status: response.status,
    contentType,
    body: /json/.test(contentType) && text ? JSON.parse(text) : text || undefined,
    headers: response.headers,
  });
  return response;
};
