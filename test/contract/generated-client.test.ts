// 16.6: what an integrator gets from the bundled document with @hey-api/openapi-ts: a client that
// type-checks under strict tsc, keeps the contract's constraints in its types, and runs the main
// flows against the real app.
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createClient as generateClient } from '@hey-api/openapi-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orm } from '../../src/db/orm.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { contractCheckedFetch } from '../helpers/contract.ts';
import { setRole } from '../helpers/ledger-fixtures.ts';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));
const outDir = join(repo, `.generated-client-${process.pid}`);
const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
const PASSWORD = 'correct horse battery staple';
const METADATA = {
  image: 'https://cdn.example-game.com/items/1.png',
  attributes: [{ trait_type: 'rarity', value: 'rare' }],
  creator: 'Example Studio',
};

// Each line must be a compile error in the generated types (checked with @ts-expect-error).
const typeProbe = `import type * as T from './client/types.gen.ts';
// @ts-expect-error a verify request needs one of jwt, credential or presentation
export const empty: T.VerifyRequest = {};
// @ts-expect-error login always returns the refresh token: it is not optional
export const login: T.LoginResponses[200] = { access_token: 'a', token_type: 'Bearer', expires_in: 1, scope: '' };
// the password stays in the request types (not dropped as writeOnly)
export const register: T.RegisterRequest = { username: 'player1', password: 'correct horse battery staple' };
export const refresh: string = ({} as T.LoginResponses[200]).refresh_token;
`;

// The SDK exists only once the test has generated it, after tsc has checked this file; its own
// types are checked by the strict tsc run below.
type Call = (options?: object) => Promise<{ data?: any; error?: unknown; response: Response }>;
type Sdk = Record<string, Call>;

describe('16.6: a client generated with @hey-api/openapi-ts from the bundled document', () => {
  let t: TestApp;
  let sdk: Sdk;

  beforeAll(async () => {
    rmSync(outDir, { recursive: true, force: true });
    mkdirSync(outDir, { recursive: true });
    await generateClient({
      input: join(repo, 'generated/openapi/openapi.json'),
      output: { path: join(outDir, 'client'), importFileExtension: '.ts' },
      logs: { level: 'silent' },
    });
    t = await startTestApp('sqlite', { LOGIN_RATE_LIMIT_REQUESTS: '1000' });
    sdk = (await import(join(outDir, 'client', 'sdk.gen.ts'))) as Sdk;
    const { client } = (await import(join(outDir, 'client', 'client.gen.ts'))) as {
      client: { setConfig(config: object): void };
    };
    // Every answer the generated client receives is checked against the contract as well.
    client.setConfig({
      baseUrl: t.baseUrl,
      fetch: contractCheckedFetch(t.app.router.implemented),
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    rmSync(outDir, { recursive: true, force: true });
  });

  it('16.6: compiles under strict tsc, with no renamed duplicate, and keeps the constraints in its types', async () => {
    writeFileSync(join(outDir, 'probe.ts'), typeProbe);
    writeFileSync(
      join(outDir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          allowImportingTsExtensions: true,
          skipLibCheck: true,
          lib: ['es2022', 'dom'],
        },
        include: ['client/**/*.ts', 'probe.ts'],
      }),
    );
    const result = await run(process.execPath, [tsc, '-p', join(outDir, 'tsconfig.json')]).catch(
      (error: { stdout: string }) => ({ stdout: error.stdout }),
    );
    expect(result.stdout).toBe('');
    const { readFileSync } = await import('node:fs');
    const types = readFileSync(join(outDir, 'client', 'types.gen.ts'), 'utf8');
    expect(types.match(/^export type \w+\d = /gm) ?? []).toEqual([]);
  });

  it('16.6: runs register, login, refresh, key, mint, transfer + replay, paging, price, DID, issue and verify', async () => {
    async function user(role?: 'oracle') {
      const username = `hey${Math.random().toString(36).slice(2, 10)}`;
      const registered = await sdk.registerUser({ body: { username, password: PASSWORD } });
      expect(registered.response.status).toBe(201);
      if (role) await setRole(t.app.orm as unknown as Orm, registered.data?.id as string, role);
      const login = await sdk.login({ body: { username, password: PASSWORD } });
      expect(login.response.status).toBe(200);
      const tokens = login.data as { refresh_token: string };
      const refreshed = await sdk.requestToken({
        body: {
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token,
          client_id: 'gats-first-party',
        },
      });
      expect(refreshed.response.status, JSON.stringify(refreshed.error)).toBe(200);
      const access = (refreshed.data as { access_token: string }).access_token;
      const key = await sdk.createApiKey({
        body: { name: 'hey-api' },
        headers: { authorization: `Bearer ${access}` },
      });
      expect(key.response.status).toBe(201);
      const headers = { authorization: `Bearer ${access}`, 'x-api-key': key.data?.key as string };
      const wallets = await sdk.listMyWallets({ headers });
      return { headers, wallet: wallets.data?.data[0].address as string };
    }
    const player = await user();
    const friend = await user();
    const oracle = await user('oracle');

    const minted: string[] = [];
    for (const name of ['Sword', 'Shield', 'Helmet']) {
      const nft = await sdk.createNft({ body: { name, metadata: METADATA }, headers: player.headers });
      expect(nft.response.status, JSON.stringify(nft.error)).toBe(201);
      minted.push(nft.data?.id as string);
    }
    const body = { assetId: minted[0], from: player.wallet, to: friend.wallet, amount: '1' };
    const sent = await sdk.createTransfer({
      body,
      headers: { ...player.headers, 'idempotency-key': 'hey-1' },
    });
    expect(sent.response.status).toBe(201);
    const replayed = await sdk.createTransfer({
      body,
      headers: { ...player.headers, 'idempotency-key': 'hey-1' },
    });
    expect([replayed.response.status, replayed.data?.id]).toEqual([201, sent.data?.id]);
    expect(replayed.response.headers.get('idempotent-replayed')).toBe('true');

    const first = await sdk.listWalletAssets({
      path: { wallet_id: player.wallet },
      query: { limit: 1 },
      headers: player.headers,
    });
    expect(first.data?.data).toHaveLength(1);
    const second = await sdk.listWalletAssets({
      path: { wallet_id: player.wallet },
      query: { limit: 1, cursor: first.data?.next_cursor as string },
      headers: player.headers,
    });
    expect(second.data?.data).toHaveLength(1);
    expect(second.data?.data[0]).not.toEqual(first.data?.data[0]);

    const posted = await sdk.postPrice({
      path: { id: minted[1] },
      body: { price: '12.5', currency: 'USD', source: 'hey-api-oracle' },
      headers: oracle.headers,
    });
    expect(posted.response.status, JSON.stringify(posted.error)).toBe(201);
    const price = await sdk.getPrice({ path: { id: minted[1] }, headers: player.headers });
    expect(price.data?.price).toBe('12.5');

    const did = await sdk.createIdentity({ body: {}, headers: player.headers });
    expect(did.response.status).toBe(201);
    const issued = await sdk.issueCredential({
      body: {
        type: 'AssetOwnershipCredential',
        subjectDid: did.data?.did as string,
        wallet: player.wallet,
        assetId: minted[2],
      },
      headers: player.headers,
    });
    expect(issued.response.status, JSON.stringify(issued.error)).toBe(201);
    const verified = await sdk.verifyCredential({
      body: { jwt: issued.data?.jwt as string },
      headers: player.headers,
    });
    expect(verified.data?.verified).toBe(true);
  });
});
