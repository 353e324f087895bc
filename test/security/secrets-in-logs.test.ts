// OWASP API8: no credential ever reaches a log line. Everything the app logs (at debug level, the most
// verbose it has) during registration, logins, API key and client secret creation, token refresh,
// the sign-in form, a WebSocket ticket and authenticated calls is captured and searched for every
// secret those steps handled.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.ts';
import { DB_KINDS } from '../helpers/db.ts';
import { type SecurityApp, startSecurityApp } from './security-app.ts';

const kind = DB_KINDS[0];
const PASSWORD = 'correct horse battery staple 42';

describe(`logs on ${kind}`, () => {
  let s: SecurityApp;
  const lines: string[] = [];

  beforeAll(async () => {
    s = await startSecurityApp(kind, {
      logger: createLogger('debug', { write: (line: string) => void lines.push(line) }),
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  async function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
    const response = await fetch(s.baseUrl + path, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }

  it('holds no password, token, API key, client secret or ticket', async () => {
    const username = 'log_tester';
    expect((await call('POST', '/api/v1/auth/register', {}, { username, password: PASSWORD })).status).toBe(
      201,
    );
    const wrong = await call('POST', '/api/v1/auth/login', {}, { username, password: `${PASSWORD}-wrong` });
    expect(wrong.status).toBe(401);
    const tokens = await call('POST', '/api/v1/auth/login', {}, { username, password: PASSWORD });
    expect(tokens.status).toBe(200);
    const bearer = { authorization: `Bearer ${tokens.body.access_token}` };
    const key = await call('POST', '/api/v1/api-keys', bearer, { name: 'logged?' });
    expect(key.status).toBe(201);
    const app = await call('POST', '/api/v1/applications', bearer, {
      name: 'Server app',
      redirectUris: ['https://game.example.com/cb'],
      type: 'confidential',
    });
    expect(app.status).toBe(201);
    const headers = { ...bearer, 'x-api-key': key.body.key };
    expect((await call('GET', '/api/v1/me', headers)).status).toBe(200);
    const ticket = await call('POST', '/api/v1/events/ws-ticket', headers, {});
    expect(ticket.status).toBe(201);
    // Credentials in a query string (a WebSocket ticket, a leaked token) are not logged either.
    await call(
      'GET',
      `/api/v1/me?access_token=${tokens.body.access_token}&ticket=${ticket.body.ticket}`,
      headers,
    );
    const refreshed = await fetch(`${s.baseUrl}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: tokens.body.refresh_token,
        client_id: 'gats-first-party',
      }),
    });
    const rotated = (await refreshed.json()) as { access_token: string; refresh_token: string };
    expect(refreshed.status).toBe(200);
    // The confidential client authenticating at the token endpoint with its secret (wrong grant on purpose).
    await fetch(`${s.baseUrl}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${app.body.clientId}:${app.body.clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: 'nope',
        redirect_uri: 'https://game.example.com/cb',
      }),
    });

    const log = lines.join('');
    expect(log).toContain('"msg":"request"'); // the capture works: the access log is there
    const secrets: Record<string, string> = {
      password: PASSWORD,
      'access token': tokens.body.access_token,
      'access token signature': tokens.body.access_token.split('.')[2],
      'refresh token': tokens.body.refresh_token,
      'rotated access token': rotated.access_token,
      'rotated refresh token': rotated.refresh_token,
      'API key': key.body.key,
      'API key body': key.body.key.slice(4),
      'client secret': app.body.clientSecret,
      'WebSocket ticket': ticket.body.ticket,
    };
    for (const [name, secret] of Object.entries(secrets)) {
      expect(typeof secret, name).toBe('string');
      expect(log.includes(secret), `${name} found in the log`).toBe(false);
    }
  });

  it('redacts credentials that slip into a logged object', () => {
    const captured: string[] = [];
    const logger = createLogger('info', { write: (line: string) => void captured.push(line) });
    logger.info(
      {
        password: 'p1',
        body: { password: 'p2' },
        headers: { authorization: 'Bearer t1', 'x-api-key': 'gak_k1', cookie: 'c1' },
        access_token: 't2',
        refresh_token: 't3',
        key: 'gak_k2',
        clientSecret: 's1',
      },
      'careless',
    );
    const line = captured.join('');
    for (const secret of ['p1', 'p2', 't1', 'gak_k1', 'c1', 't2', 't3', 'gak_k2', 's1']) {
      expect(line, secret).not.toContain(`"${secret}`);
      expect(line, secret).not.toContain(` ${secret}"`);
    }
    expect(line).toContain('[redacted]');
  });
});
