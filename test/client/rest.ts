// Issue 38: the official client's REST part against the real service: typed calls checked against
// the contract, a write whose answer was lost retried with its Idempotency-Key (one write, the first
// answer), an unkeyed write not resent, problem+json as GatsProblemError.
import { readFileSync } from 'node:fs';
import { beforeAll, expect, it } from 'vitest';
import { createGatsClient, GatsProblemError, unwrap } from '../../clients/typescript/src/index.ts';
import type { TestApp } from '../helpers/app.ts';
import type { HttpUser } from '../helpers/ledger-fixtures.ts';
import { clientFor, METADATA, type SharedApp } from './fixture.ts';

/** The REST part against the app of `shared` (test/client/client.test.ts). */
export function restTests(shared: () => SharedApp): void {
  let t: TestApp;
  let player: HttpUser;
  let friend: HttpUser;

  beforeAll(() => {
    ({ t, player, friend } = shared());
  });

  it('calls operations through the types generated from the contract', async () => {
    const gats = clientFor(t, player);
    const me = await unwrap(gats.GET('/api/v1/me'));
    expect(me.wallets).toContain(player.wallet);
    const nft = await unwrap(
      gats.POST('/api/v1/nft/create', { body: { name: 'Sword', metadata: METADATA } }),
    );
    const sent = await unwrap(
      gats.POST('/api/v1/transfer', {
        body: { assetId: nft.id, from: player.wallet, to: friend.wallet, amount: '1' },
      }),
    );
    expect(sent.status).toBe('completed');
    const assets = await unwrap(
      gats.GET('/wallets/{wallet_id}/assets', { params: { path: { wallet_id: friend.wallet } } }),
    );
    expect(assets.data.map((holding) => holding.asset.id)).toContain(nft.id);
    const events = await unwrap(
      gats.GET('/api/v1/events', { params: { query: { walletId: friend.wallet, types: ['newTransfer'] } } }),
    );
    expect(events.data.map((event) => event.type)).toEqual(['newTransfer']);
    const ticket = await unwrap(gats.POST('/api/v1/events/ws-ticket', { body: {} }));
    expect(ticket.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/ws\?ticket=/);
    const key = await unwrap(gats.POST('/api/v1/api-keys', { body: { name: 'client test' } }));
    const revoked = await gats.DELETE('/api/v1/api-keys/{key_id}', { params: { path: { key_id: key.id } } });
    expect(revoked.response.status).toBe(204);
  });

  it("sends array query parameters in the contract's style (comma-separated, not repeated)", async () => {
    const urls: string[] = [];
    const gats = clientFor(t, player, {}, async (request) => {
      urls.push(request.url);
      return fetch(request);
    });
    const events = await unwrap(
      gats.GET('/api/v1/events', {
        params: { query: { walletId: friend.wallet, types: ['newNFT', 'newTransfer'], limit: 1000 } },
      }),
    );
    expect(new URL(urls[0] as string).searchParams.getAll('types')).toEqual(['newNFT,newTransfer']);
    expect(new Set(events.data.map((event) => event.type))).toEqual(new Set(['newTransfer']));
  });

  it('retries a write whose answer was lost with the same Idempotency-Key: one write, the first answer', async () => {
    const keys: (string | null)[] = [];
    let dropped = 0;
    const gats = clientFor(t, player, { retry: { baseDelayMs: 10 } }, async (request) => {
      keys.push(request.headers.get('idempotency-key'));
      const response = await fetch(request);
      // The service applied the write; the answer never reaches the client.
      if (dropped++ === 0) throw new TypeError('fetch failed: connection reset');
      return response;
    });
    const { data, response } = await gats.POST('/api/v1/nft/create', {
      body: { name: 'Lost answer', metadata: METADATA },
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    const minted = await t.http('GET', `/api/v1/events?walletId=${player.wallet}&types=newNFT`, {
      headers: player.headers,
    });
    const named = minted.body.data.filter(
      (event: { data: { name: string } }) => event.data.name === 'Lost answer',
    );
    expect(named.map((event: { data: { id: string } }) => event.data.id)).toEqual([data?.id]);
  });

  it("keeps the caller's Idempotency-Key", async () => {
    const gats = clientFor(t, player);
    const body = { name: 'Keyed', metadata: METADATA };
    const first = await gats.POST('/api/v1/nft/create', {
      body,
      params: { header: { 'Idempotency-Key': 'client-38-a' } },
    });
    const again = await gats.POST('/api/v1/nft/create', {
      body,
      params: { header: { 'Idempotency-Key': 'client-38-a' } },
    });
    expect(again.data?.id).toBe(first.data?.id);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
  });

  it('does not resend a write the service does not key after a network error', async () => {
    let sent = 0;
    const gats = clientFor(t, player, { retry: { baseDelayMs: 10 } }, async (request) => {
      sent++;
      await fetch(request);
      throw new TypeError('fetch failed');
    });
    await expect(gats.POST('/api/v1/api-keys', { body: { name: 'not keyed' } })).rejects.toThrow(
      'fetch failed',
    );
    expect(sent).toBe(1);
  });

  it('turns problem+json answers into GatsProblemError with the type, status and fields', async () => {
    const gats = clientFor(t, player);
    const error = await unwrap(
      gats.POST('/api/v1/transfer', {
        body: { assetId: 'gold', from: player.wallet, to: 'not-an-address', amount: '-1' },
      }),
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GatsProblemError);
    const problem = error as GatsProblemError;
    expect([problem.type, problem.status]).toEqual(['/problems/validation-failed', 400]);
    expect(problem.fields.map((field) => field.pointer)).toContain('/body/to');
    expect(problem.requestId).toBeTruthy();
    const unauthenticated = createGatsClient({ baseUrl: t.baseUrl });
    const denied = await unwrap(unauthenticated.GET('/api/v1/me')).catch((caught: unknown) => caught);
    expect([(denied as GatsProblemError).status, (denied as GatsProblemError).type]).toEqual([
      401,
      '/problems/unauthorized',
    ]);
  });

  it('calls every operation of the contract once, with its documented example inputs; every answer is one the contract declares', async () => {
    const gats = clientFor(t, player, { retry: false });
    const failures: string[] = [];
    let called = 0;
    for (const { operationId, method, path, init } of exampleCalls()) {
      called++;
      try {
        // Checked against the contract by the client's fetch (fixture.ts): an answer the contract
        // does not declare for the operation throws.
        const { response } = await gats.request(method as 'get', path as '/api/v1/me', init as never);
        expect(response.status, operationId).toBeLessThan(500);
      } catch (error) {
        failures.push(`${operationId}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    expect(failures).toEqual([]);
    expect(called).toBe(exampleCalls().length);
    expect(called).toBeGreaterThan(100);
  }, 120_000);
}

interface ExampleCall {
  operationId: string;
  method: string;
  path: string;
  init: {
    params: { path: Record<string, unknown>; query: Record<string, unknown> };
    body?: unknown;
  } & Record<string, unknown>;
}

type Json = Record<string, any>;

/** Every operation of the bundled contract, with the parameters and body its examples give. */
function exampleCalls(): ExampleCall[] {
  const document = JSON.parse(
    readFileSync(new URL('../../generated/openapi/openapi.json', import.meta.url), 'utf8'),
  ) as Json;
  const resolve = (value: Json): Json => {
    let current = value;
    while (typeof current?.$ref === 'string') {
      current = (current.$ref as string)
        .slice(2)
        .split('/')
        .reduce((node: Json, key: string) => node[key], document);
    }
    return current;
  };
  const exampleOf = (holder: Json): unknown => {
    if (holder.example !== undefined) return holder.example;
    const first = holder.examples && Object.values(holder.examples as Json)[0];
    if (first !== undefined) return resolve(first as Json).value ?? first;
    const schema = holder.schema ? resolve(holder.schema as Json) : undefined;
    if (schema?.example !== undefined) return schema.example;
    if (Array.isArray(schema?.examples)) return schema.examples[0];
    return undefined;
  };
  const calls: ExampleCall[] = [];
  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const [method, operation] of Object.entries(item as Json)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const init: ExampleCall['init'] = { params: { path: {}, query: {} } };
      for (const raw of [...((item as Json).parameters ?? []), ...((operation as Json).parameters ?? [])]) {
        const parameter = resolve(raw as Json);
        const value = exampleOf(parameter) ?? (parameter.in === 'path' ? 'example' : undefined);
        if (
          value === undefined ||
          !(parameter.in === 'path' || (parameter.in === 'query' && parameter.required))
        )
          continue;
        (init.params[parameter.in as 'path' | 'query'] as Record<string, unknown>)[parameter.name] = value;
      }
      const content =
        (operation as Json).requestBody && resolve((operation as Json).requestBody as Json).content;
      if (content?.['application/json']) init.body = exampleOf(content['application/json'] as Json) ?? {};
      else if (content?.['application/x-www-form-urlencoded']) {
        init.body = exampleOf(content['application/x-www-form-urlencoded'] as Json) ?? {};
        init.headers = { 'Content-Type': 'application/x-www-form-urlencoded' };
        init.bodySerializer = (body: Record<string, unknown>) =>
          new URLSearchParams(
            Object.entries(body).map(([name, value]): [string, string] => [name, String(value)]),
          );
      }
      // A success that is not JSON (metrics, HTML pages) is read as text.
      const answers = Object.entries((operation as Json).responses as Json)
        .filter(([status]) => status.startsWith('2'))
        .map(([, r]) => resolve(r as Json));
      const json = answers.some((r) => Object.keys(r.content ?? {}).some((type) => type.includes('json')));
      if (!json) init.parseAs = 'text';
      calls.push({ operationId: (operation as Json).operationId, method: method.toUpperCase(), path, init });
    }
  }
  return calls;
}
