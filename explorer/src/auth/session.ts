// The signed-in session: OAuth 2.0 authorization code + PKCE through the service's own /authorize,
// login and consent pages; refresh before expiry; an API key created for the session and revoked
// with it. Kept in sessionStorage, so it ends with the tab and never leaks to other sites.

import {
  type ApiClient,
  type Credentials,
  createApiClient,
  formEncoded,
  type Operations,
  type Schemas,
} from '../api/client.ts';
import { ApiError, unwrap } from '../api/problem.ts';
import { BASE_PATH, CLIENT_ID, callbackUrl, refreshMarginMs, SCOPES } from '../config.ts';
import { codeChallenge, randomToken } from './pkce.ts';

type User = Schemas['User'];
type TokenResponse = Schemas['TokenResponse'];
type AuthorizeQuery = Operations['authorize']['parameters']['query'];

interface StoredSession {
  accessToken: string;
  refreshToken: string | null;
  /** Epoch milliseconds when the access token expires. */
  expiresAt: number;
  /** Epoch milliseconds from when it is refreshed before use. */
  refreshAt: number;
  apiKey: { id: string; key: string } | null;
  user: User | null;
}

interface PendingSignIn {
  state: string;
  verifier: string;
  returnTo: string;
}

const SESSION_KEY = 'gats-explorer:session';
const PENDING_KEY = 'gats-explorer:pending-sign-in';

function read<T>(key: string): T | null {
  const raw = sessionStorage.getItem(key);
  if (!raw) return null;
  try {
    return JSON.parse(raw) as T;
  } catch {
    sessionStorage.removeItem(key);
    return null;
  }
}

function problem(title: string, detail?: string): ApiError {
  return new ApiError({ type: 'about:blank', title, status: 0, detail });
}

/** Emits `change` when the user signs in or out (or the session ends on its own). */
export class Session extends EventTarget {
  /** API calls with the session's bearer token and API key. */
  readonly api: ApiClient;
  /** Calls that carry no session credentials (the OAuth endpoints). */
  private readonly anonymous: ApiClient;
  private state: StoredSession | null = read<StoredSession>(SESSION_KEY);
  private refreshing: Promise<void> | null = null;
  private timer: number | undefined;

  constructor() {
    super();
    this.api = createApiClient(this);
    this.anonymous = createApiClient();
    this.schedule();
  }

  get signedIn(): boolean {
    return this.state !== null;
  }

  get user(): User | null {
    return this.state?.user ?? null;
  }

  /** Whether `address` (any case) is one of the signed-in user's wallets. */
  controls(address: string): boolean {
    const wanted = address.toLowerCase();
    return this.user?.wallets.some((wallet) => wallet.toLowerCase() === wanted) ?? false;
  }

  /** Sends the browser to the service's authorization endpoint; comes back to /explorer/callback. */
  beginSignIn(returnTo: string): void {
    const pending: PendingSignIn = { state: randomToken(), verifier: randomToken(), returnTo };
    sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
    const query: AuthorizeQuery = {
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: callbackUrl(),
      scope: SCOPES,
      state: pending.state,
      code_challenge: codeChallenge(pending.verifier),
      code_challenge_method: 'S256',
      // Consent is where offline_access (the refresh token) is granted.
      prompt: 'consent',
    };
    const params = new URLSearchParams(
      Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined),
    );
    location.assign(`/authorize?${params}`);
  }

  /**
   * Finishes the flow on the callback: checks `state` and `iss`, swaps the code for tokens, creates
   * the session's API key and reads the user. Returns the path to go back to.
   */
  async completeSignIn(params: URLSearchParams): Promise<string> {
    const pending = read<PendingSignIn>(PENDING_KEY);
    sessionStorage.removeItem(PENDING_KEY);
    // The callback reloaded after a sign-in that already completed: nothing to do.
    if (!pending && this.signedIn) return BASE_PATH;
    if (!pending || params.get('state') !== pending.state) {
      throw problem(
        'Sign-in could not be completed',
        'This sign-in answer does not match a sign-in started here. Please sign in again.',
      );
    }
    const error = params.get('error');
    if (error)
      throw problem(
        error === 'access_denied' ? 'Sign-in was cancelled' : `Sign-in failed (${error})`,
        params.get('error_description') ?? undefined,
      );
    await this.checkIssuer(params.get('iss'));
    const code = params.get('code');
    if (!code) throw problem('Sign-in failed', 'The answer carries no authorization code.');

    const tokens = unwrap(
      await this.anonymous.POST('/token', {
        body: {
          grant_type: 'authorization_code',
          code,
          redirect_uri: callbackUrl(),
          code_verifier: pending.verifier,
          client_id: CLIENT_ID,
        },
        ...formEncoded,
      }),
    );
    this.store(tokens, null, null);
    try {
      const key = unwrap(
        await this.api.POST('/api/v1/api-keys', {
          body: { name: `Explorer session ${new Date().toISOString()}` },
        }),
      );
      this.state = { ...(this.state as StoredSession), apiKey: { id: key.id, key: key.key } };
      const user = unwrap(await this.api.GET('/api/v1/me'));
      this.state = { ...this.state, user };
      this.persist();
    } catch (failure) {
      await this.signOut();
      throw failure;
    }
    this.dispatchEvent(new Event('change'));
    return pending.returnTo;
  }

  /** RFC 9207: the authorization response must come from this service's own issuer. */
  private async checkIssuer(iss: string | null): Promise<void> {
    if (iss === null) return;
    const metadata = unwrap(await this.anonymous.GET('/.well-known/oauth-authorization-server'));
    if (metadata.issuer !== iss)
      throw problem('Sign-in failed', `The answer came from ${iss}, not from ${metadata.issuer}.`);
  }

  /** The credential source of `api`: refreshes first when the access token is about to expire. */
  async current(): Promise<Credentials | null> {
    if (!this.state) return null;
    if (Date.now() >= this.state.refreshAt && this.state.refreshToken) await this.refresh();
    if (!this.state) return null;
    return { accessToken: this.state.accessToken, apiKey: this.state.apiKey?.key ?? null };
  }

  /** Refreshes once at a time; a failure (refresh token expired or revoked) ends the session. */
  refresh(): Promise<void> {
    this.refreshing ??= this.doRefresh().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async doRefresh(): Promise<void> {
    const refreshToken = this.state?.refreshToken;
    if (!refreshToken) return;
    const result = await this.anonymous.POST('/token', {
      body: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: CLIENT_ID },
      ...formEncoded,
    });
    if (result.response.status === 400 || result.response.status === 401) {
      this.end();
      return;
    }
    const tokens = unwrap(result);
    if (this.state) this.store(tokens, this.state.apiKey, this.state.user);
  }

  /** Revokes the session's API key and refresh token, then forgets them. Best effort: never throws. */
  async signOut(): Promise<void> {
    const state = this.state;
    if (!state) return;
    if (state.apiKey) {
      await this.api
        .DELETE('/api/v1/api-keys/{key_id}', { params: { path: { key_id: state.apiKey.id } } })
        .catch(() => undefined);
    }
    if (state.refreshToken) {
      await this.anonymous
        .POST('/token/revocation', {
          body: { token: state.refreshToken, token_type_hint: 'refresh_token', client_id: CLIENT_ID },
          ...formEncoded,
        })
        .catch(() => undefined);
    }
    this.end();
  }

  private end(): void {
    this.state = null;
    window.clearTimeout(this.timer);
    sessionStorage.removeItem(SESSION_KEY);
    this.dispatchEvent(new Event('change'));
  }

  private store(tokens: TokenResponse, apiKey: StoredSession['apiKey'], user: User | null): void {
    const lifetimeMs = tokens.expires_in * 1000;
    this.state = {
      accessToken: tokens.access_token,
      // Each refresh returns a new refresh token (rotation); the old one is spent.
      refreshToken: tokens.refresh_token ?? this.state?.refreshToken ?? null,
      expiresAt: Date.now() + lifetimeMs,
      refreshAt: Date.now() + lifetimeMs - refreshMarginMs(lifetimeMs),
      apiKey,
      user,
    };
    this.persist();
    this.schedule();
  }

  private persist(): void {
    if (this.state) sessionStorage.setItem(SESSION_KEY, JSON.stringify(this.state));
  }

  /** Refreshes ahead of expiry, so live connections and open views never meet an expired token. */
  private schedule(): void {
    window.clearTimeout(this.timer);
    if (!this.state?.refreshToken) return;
    const delay = Math.max(0, this.state.refreshAt - Date.now());
    this.timer = window.setTimeout(() => void this.refresh().catch(() => undefined), delay);
  }
}

/** Where the browser goes after the callback: only paths inside the explorer. */
export function safeReturnPath(path: string | null): string {
  return path?.startsWith(BASE_PATH) && !path.startsWith(`${BASE_PATH}callback`) ? path : BASE_PATH;
}
