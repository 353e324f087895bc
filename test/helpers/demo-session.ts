// A demo user's session on a running service (demo seed: `<name>-demo-password`), by plain fetch, for
// tests that run the service as a child process: a bearer token, an API key, the custodial wallet,
// and `post` with JSON.
export interface DemoSession {
  post(
    url: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, any> }>;
  /** Authorization and X-API-Key headers. */
  headers: Record<string, string>;
  wallet: string;
}

export async function demoSession(base: string, username: string): Promise<DemoSession> {
  const post = async (url: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(base + url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const login = await post('/api/v1/auth/login', { username, password: `${username}-demo-password` });
  const bearer = { authorization: `Bearer ${login.body.access_token}` };
  const key = await post('/api/v1/api-keys', { name: 'test session' }, bearer);
  const headers = { ...bearer, 'x-api-key': key.body.key as string };
  const me = (await (await fetch(`${base}/api/v1/me`, { headers })).json()) as { wallets: string[] };
  return { post, headers, wallet: me.wallets[0] as string };
}
