// What an integrator holding only /openapi.json and /asyncapi.json sees: the deployment's own
// server (16.4), and a WebSocket handshake that works when built from the AsyncAPI document's
// server security alone (16.5).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { httpUser } from '../helpers/ledger-fixtures.ts';
import { connect } from '../helpers/ws.ts';

type Json = Record<string, any>;
const generated = (path: string): Json =>
  JSON.parse(readFileSync(new URL(`../../generated/${path}`, import.meta.url), 'utf8')) as Json;

describe('16.4: the served documents name the configured PUBLIC_URL', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite', { PUBLIC_URL: 'https://play.example-game.test/gats' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('16.4: /openapi.json names PUBLIC_URL as its server and its OAuth endpoints, not localhost:3000', async () => {
    const { body } = await t.http('GET', '/openapi.json');
    expect(body.servers).toEqual([
      { url: 'https://play.example-game.test/gats', description: expect.any(String) },
    ]);
    expect(body.components.securitySchemes.oauth2.flows.authorizationCode).toMatchObject({
      authorizationUrl: 'https://play.example-game.test/gats/authorize',
      tokenUrl: 'https://play.example-game.test/gats/token',
    });
    expect(JSON.stringify(body.servers)).not.toContain('localhost');
  });

  it('16.4: /asyncapi.json names PUBLIC_URL host (wss behind https) for both ways of authenticating', async () => {
    const { body } = await t.http('GET', '/asyncapi.json');
    expect(Object.keys(body.servers).sort()).toEqual(['deployment', 'deploymentBrowser']);
    for (const server of Object.values(body.servers) as Json[]) {
      expect(server).toMatchObject({ host: 'play.example-game.test', protocol: 'wss', pathname: '/gats' });
      expect(server.variables).toBeUndefined();
    }
  });

  it('16.4: the files in generated/ keep a placeholder, not a deployment', () => {
    const openapi = generated('openapi/openapi.json');
    expect(openapi.servers[0]).toMatchObject({
      url: '{publicUrl}',
      variables: { publicUrl: { default: 'http://localhost:3000' } },
    });
    expect(generated('asyncapi/asyncapi.json').servers.production.host).toBe('{host}');
  });
});

describe('16.5: the AsyncAPI server security requires the bearer token and the API key together', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite');
  });
  afterAll(async () => {
    await t?.close();
  });

  /** The handshake credentials for a server, read from its security schemes only. */
  function credentialsFor(doc: Json, server: Json, values: Record<string, string>) {
    const headers: Record<string, string> = {};
    const query = new URLSearchParams();
    for (const ref of server.security as Json[]) {
      const name = (ref.$ref as string).split('/').pop() as string;
      const scheme = doc.components.securitySchemes[name];
      if (scheme.type === 'http' && scheme.scheme === 'bearer')
        headers.authorization = `Bearer ${values.bearer}`;
      else if (scheme.type === 'httpApiKey' && scheme.in === 'header') headers[scheme.name] = values.apiKey;
      else if (scheme.type === 'httpApiKey' && scheme.in === 'query') query.set(scheme.name, values.ticket);
      else throw new Error(`unexpected scheme ${name}`);
    }
    const url = `${server.protocol}://${server.host}${server.pathname ?? ''}`;
    return { url, headers, query: query.size > 0 ? `?${query}` : '' };
  }

  it('16.5: a client that sends every scheme of the header server connects; the bearer alone is refused', async () => {
    const user = await httpUser(t);
    const doc = (await t.http('GET', '/asyncapi.json')).body as Json;
    const server = doc.servers.deployment;
    expect(server['x-security-requirement']).toBe('all');
    const names = (server.security as Json[]).map((ref) => (ref.$ref as string).split('/').pop());
    expect(names).toEqual(['bearerToken', 'apiKey']);
    const values = {
      bearer: user.headers.authorization.replace('Bearer ', ''),
      apiKey: user.headers['x-api-key'],
      ticket: '',
    };
    const { url, headers } = credentialsFor(doc, server, values);
    const socket = await connect(`${url}/ws`, headers);
    socket.send({ type: 'ping', requestId: 'r1' });
    expect((await socket.next((m) => m.type === 'pong')).requestId).toBe('r1');
    socket.close();
    // What the integrator's generated client did before: only the first scheme.
    await expect(connect(`${url}/ws`, { authorization: headers.authorization })).rejects.toMatchObject({
      status: 401,
    });
  });

  it('16.5: the browser server needs the ticket alone', async () => {
    const user = await httpUser(t);
    const doc = (await t.http('GET', '/asyncapi.json')).body as Json;
    const ticket = await t.http('POST', '/api/v1/events/ws-ticket', { headers: user.headers });
    expect(ticket.status).toBe(201);
    const { url, headers, query } = credentialsFor(doc, doc.servers.deploymentBrowser, {
      bearer: '',
      apiKey: '',
      ticket: ticket.body.ticket,
    });
    expect(headers).toEqual({});
    const socket = await connect(`${url}/assets/subscribe${query}`);
    socket.send({ type: 'ping' });
    await socket.next((m) => m.type === 'pong');
    socket.close();
  });
});
