// Issue 37: the audit trail, through the in-process app on both databases. Each action kind is run
// once while the trail refuses appends (a trigger fails the tip's update, after the entry row was
// inserted): the action must fail and leave neither its effect nor an entry; run again, it succeeds
// and its entry is there, so action and entry commit together or not at all. Then the chain is
// verified, tampered with (an entry deleted, altered, two swapped) and the tampering found, the
// entries are scanned for every secret the test was given, GET /api/v1/audit-log is read as an
// admin, a studio, another studio and a player, and retention prunes with a checkpoint.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminResume, adminSuspend, adminUnregister } from '../../src/chain/admin.ts';
import { reassignContract } from '../../src/chain/reassign.ts';
import { loadOpenApiDocument } from '../../src/contract/operations.ts';
import { ChainContract, Collection } from '../../src/db/entities/index.ts';
import type { Orm } from '../../src/db/orm.ts';
import {
  AUDIT_ACTIONS,
  auditDraft,
  pruneAudit,
  recordAudit,
  verifyAudit,
  withAuditOrigin,
} from '../../src/domain/audit.ts';
import { DB_KINDS, startTestApp, TEST_SECRET_KEY, type TestApp } from '../helpers/app.ts';
import { runScript } from '../helpers/commands.ts';
import { type HttpUser, httpUser, PASSWORD } from '../helpers/ledger-fixtures.ts';

const METADATA = {
  image: 'https://cdn.example.com/item.png',
  attributes: [{ trait_type: 'level', value: 1 }],
  creator: 'Audit Studio',
};

interface Response {
  status: number;
  body: any;
  text: string;
}

interface Row {
  seq: number;
  action: string;
  object_type: string;
  object_id: string;
  body: string;
}

describe.each(DB_KINDS)('the audit trail on %s', (kind) => {
  let t: TestApp;
  let admin: HttpUser;
  let studio: HttpUser;
  let rival: HttpUser;
  let player: HttpUser;
  let orm: Orm;
  const collection = `audit-${kind}`;
  const currency = `agold-${kind}`;
  /** Every secret the service handed out in this test: none may appear in an entry. */
  const secrets: string[] = [PASSWORD];
  /** The action kinds seen recorded with their action and rolled back with it. */
  const covered = new Set<string>();

  const sql = <T = Record<string, unknown>>(query: string) => orm.em.getConnection().execute<T[]>(query);
  const rows = async () =>
    (await sql<Row>('select seq, action, object_type, object_id, body from audit_entry order by seq')).map(
      (row) => ({ ...row, seq: Number(row.seq) }),
    );
  const call = (user: HttpUser, method: string, path: string, body?: unknown, bearerOnly = false) =>
    t.http(method, path, {
      body,
      headers: bearerOnly ? { authorization: user.headers.authorization } : user.headers,
    }) as Promise<Response>;

  /** Makes every append fail after its entry row is written (the tip's update raises). */
  async function refuseAppends(on: boolean): Promise<void> {
    if (kind === 'sqlite') {
      await sql(
        on
          ? "create trigger audit_refuse before update of hash on audit_tip begin select raise(abort, 'audit refused by the test'); end"
          : 'drop trigger audit_refuse',
      );
      return;
    }
    if (on) {
      await sql(
        "create or replace function audit_refuse() returns trigger language plpgsql as $$ begin raise exception 'audit refused by the test'; end $$",
      );
      await sql(
        'create trigger audit_refuse before update of hash on audit_tip for each row execute function audit_refuse()',
      );
    } else await sql('drop trigger audit_refuse on audit_tip');
  }

  /**
   * Runs `run` while appends fail (it must fail, changing nothing: `unchanged` checks its effect
   * where running it again would not show it), then again: it succeeds with an entry of `action`.
   */
  async function audited(
    action: keyof typeof AUDIT_ACTIONS,
    run: () => Promise<Response>,
    unchanged?: () => Promise<void>,
  ): Promise<{ response: Response; entry: Row }> {
    const before = (await rows()).length;
    await refuseAppends(true);
    let refused: Response;
    try {
      refused = await run();
    } finally {
      await refuseAppends(false);
    }
    expect(refused.status, `${action} while appends fail: ${refused.text}`).toBe(500);
    expect((await rows()).length, `${action} left an entry`).toBe(before);
    await unchanged?.();
    const response = await run();
    expect(response.status, `${action}: ${response.text}`).toBeLessThan(300);
    const added = (await rows()).slice(before);
    const entry = added.find((row) => row.action === action);
    expect(entry, `${action} recorded`).toBeDefined();
    covered.add(action);
    return { response, entry: entry as Row };
  }

  beforeAll(async () => {
    t = await startTestApp(kind, {
      RATE_LIMIT_REQUESTS: '100000',
      RATE_LIMIT_USER_REQUESTS: '100000',
      RATE_LIMIT_ACCOUNT_REQUESTS: '100000',
      WEBHOOK_ALLOW_LOOPBACK: 'true',
    });
    orm = t.app.orm as unknown as Orm;
    [admin, studio, rival, player] = await Promise.all([
      httpUser(t, 'admin'),
      httpUser(t, 'studio'),
      httpUser(t, 'studio'),
      httpUser(t, 'player'),
    ]);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('records each action kind with its action, and rolls it back with it', async () => {
    const assetsIn = async () =>
      Number(
        (await sql<{ n: number }>(`select count(*) as n from asset where collection_id = '${collection}'`))[0]
          .n,
      );

    // Collections and their economy.
    await audited('collection.created', () =>
      call(studio, 'POST', '/api/v1/collections', {
        id: collection,
        name: 'Audit',
        burnPolicy: 'holder_or_studio',
        mutableAttributes: ['level'],
      }),
    );
    await audited('currency.created', () =>
      call(studio, 'POST', '/api/v1/currencies', {
        id: currency,
        name: 'Audit Gold',
        symbol: 'AGLD',
        decimals: 0,
        collection,
        metadata: { image: METADATA.image, attributes: [], creator: 'Audit Studio' },
      }),
    );
    await audited('collection.marketChanged', () =>
      call(studio, 'PUT', `/api/v1/collections/${collection}/market/settings`, { royaltyBps: 250 }),
    );
    const minted = await audited(
      'asset.minted',
      () =>
        call(studio, 'POST', `/api/v1/collections/${collection}/mint/batch`, {
          items: [{ to: player.wallet, nft: { name: 'Audited Sword', metadata: METADATA } }],
        }),
      async () => expect(await assetsIn()).toBe(1), // the currency only
    );
    const nft = minted.response.body.nfts[0].id as string;
    expect(JSON.parse(minted.entry.body)).toMatchObject({
      object: { type: 'asset', id: nft, ownerId: studio.userId, collectionId: collection },
      actor: { kind: 'user', id: studio.userId, role: 'studio' },
      credential: { kind: 'apiKey' },
    });
    await audited('asset.minted', () =>
      call(studio, 'POST', `/api/v1/currencies/${currency}/mint`, { to: player.wallet, amount: '100' }),
    );
    const frozen = await audited('asset.frozen', () => call(studio, 'POST', `/api/v1/assets/${nft}/freeze`));
    expect(JSON.parse(frozen.entry.body)).toMatchObject({
      before: { frozen: false },
      after: { frozen: true, frozenBy: studio.userId },
    });
    expect(JSON.parse(frozen.entry.body)).toMatchObject({
      address: expect.any(String),
      requestId: expect.any(String),
    });
    await audited('asset.unfrozen', () => call(studio, 'POST', `/api/v1/assets/${nft}/unfreeze`));
    const changed = await audited('asset.metadataChanged', () =>
      call(studio, 'PATCH', `/api/v1/assets/${nft}/metadata`, {
        attributes: [{ trait_type: 'level', value: 2 }],
      }),
    );
    expect(JSON.parse(changed.entry.body)).toMatchObject({ before: { version: 0 }, after: { version: 1 } });
    await audited('asset.burned', () =>
      call(studio, 'POST', `/api/v1/assets/${nft}/burn`, { from: player.wallet, amount: '1' }),
    );
    await audited('recipe.created', () =>
      call(studio, 'POST', `/api/v1/collections/${collection}/recipes`, {
        name: 'Audited potion',
        inputs: [{ assetId: currency, amount: '2' }],
        outputs: [{ nft: { name: 'Potion', metadata: METADATA } }],
      }),
    );
    const offer = await audited('storeOffer.created', () =>
      call(studio, 'POST', `/api/v1/collections/${collection}/store-offers`, {
        name: 'Bundle',
        price: [{ assetId: currency, amount: '5' }],
        grants: [{ nft: { name: 'Bundle Sword', metadata: METADATA } }],
        payTo: studio.wallet,
      }),
    );
    await audited('storeOffer.updated', () =>
      call(studio, 'PATCH', `/api/v1/store-offers/${offer.response.body.id}`, { name: 'Bundle, renamed' }),
    );
    const codes = await audited('claimCode.created', () =>
      call(studio, 'POST', `/api/v1/collections/${collection}/claim-codes`, {
        grants: [{ assetId: currency, amount: '1' }],
        count: 2,
      }),
    );
    for (const { code } of codes.response.body.codes) secrets.push(code);
    // A claim code is changed as the store offer it is.
    await audited('claimCode.updated', () =>
      call(studio, 'PATCH', `/api/v1/store-offers/${codes.response.body.codes[0].claimCode.id}`, {
        totalLimit: 5,
      }),
    );
    const table = await audited('dropTable.created', () =>
      call(studio, 'POST', `/api/v1/collections/${collection}/drop-tables`, {
        name: 'Audited chest',
        entries: [
          { weight: 1, outcome: { assetId: currency, amount: '1' } },
          { weight: 1, outcome: null },
        ],
      }),
    );
    await audited('lootBox.created', () =>
      call(studio, 'POST', `/api/v1/collections/${collection}/loot-boxes`, {
        name: `Audited box ${Date.now()}`,
        table: table.response.body.id,
        paid: false,
      }),
    );

    // OAuth applications (issue 37: their registration and deletion were not recorded).
    const applications = async () =>
      Number(
        (await sql<{ n: number }>('select count(*) as n from application where deleted_at is null'))[0].n,
      );
    const applicationCount = await applications();
    const application = await audited(
      'application.created',
      () =>
        call(
          studio,
          'POST',
          '/api/v1/applications',
          {
            name: 'Audited launcher',
            redirectUris: ['https://launcher.example/callback'],
            type: 'confidential',
          },
          true,
        ),
      async () => expect(await applications()).toBe(applicationCount),
    );
    secrets.push(application.response.body.clientSecret);
    const clientId = application.response.body.clientId as string;
    expect(JSON.parse(application.entry.body)).toMatchObject({
      object: { type: 'application', id: clientId, ownerId: studio.userId },
      after: {
        name: 'Audited launcher',
        type: 'confidential',
        redirectUris: ['https://launcher.example/callback'],
      },
    });
    await audited(
      'application.deleted',
      () => call(studio, 'DELETE', `/api/v1/applications/${clientId}`, undefined, true),
      async () => expect(await applications()).toBe(applicationCount + 1),
    );

    // Accounts, keys, secrets and webhooks.
    const keys = async () => Number((await sql<{ n: number }>('select count(*) as n from api_key'))[0].n);
    const keyCount = await keys();
    const key = await audited(
      'apiKey.created',
      () => call(studio, 'POST', '/api/v1/api-keys', { name: 'audited key' }, true),
      async () => expect(await keys()).toBe(keyCount),
    );
    secrets.push(key.response.body.key);
    await audited('apiKey.revoked', () =>
      call(studio, 'DELETE', `/api/v1/api-keys/${key.response.body.id}`, undefined, true),
    );
    const accounts = async () =>
      Number((await sql<{ n: number }>('select count(*) as n from service_account'))[0].n);
    const accountCount = await accounts();
    const account = await audited(
      'serviceAccount.created',
      () => call(studio, 'POST', '/api/v1/service-accounts', { name: 'Audited feed', role: 'studio' }, true),
      async () => expect(await accounts()).toBe(accountCount),
    );
    secrets.push(account.response.body.clientSecret);
    const accountId = account.response.body.id as string;
    const secret = await audited('clientSecret.created', () =>
      call(studio, 'POST', `/api/v1/service-accounts/${accountId}/secrets`, undefined, true),
    );
    secrets.push(secret.response.body.secret);
    await audited('clientSecret.revoked', () =>
      call(
        studio,
        'DELETE',
        `/api/v1/service-accounts/${accountId}/secrets/${secret.response.body.id}`,
        undefined,
        true,
      ),
    );
    await audited('serviceAccount.deleted', () =>
      call(studio, 'DELETE', `/api/v1/service-accounts/${accountId}`, undefined, true),
    );
    const hooks = async () =>
      Number((await sql<{ n: number }>('select count(*) as n from webhook_subscription'))[0].n);
    const hookCount = await hooks();
    const hook = await audited(
      'webhook.created',
      () =>
        call(studio, 'POST', '/api/v1/webhooks', { url: 'http://127.0.0.1:9/hooks', eventTypes: ['newNFT'] }),
      async () => expect(await hooks()).toBe(hookCount),
    );
    secrets.push(hook.response.body.secret);
    const hookId = hook.response.body.id as string;
    await audited('webhook.updated', () => call(studio, 'POST', `/api/v1/webhooks/${hookId}/disable`));
    const rotated = await audited('webhook.secretRotated', () =>
      call(studio, 'POST', `/api/v1/webhooks/${hookId}/rotate-secret`),
    );
    secrets.push(rotated.response.body.secret);
    await audited('webhook.deleted', () => call(studio, 'DELETE', `/api/v1/webhooks/${hookId}`));

    // An admin's role change.
    const role = await audited('user.roleChanged', () =>
      call(admin, 'PUT', `/api/v1/users/${player.userId}/role`, { role: 'oracle' }),
    );
    expect(JSON.parse(role.entry.body)).toMatchObject({
      actor: { id: admin.userId, role: 'admin' },
      object: { type: 'user', id: player.userId },
      before: { role: 'player' },
      after: { role: 'oracle' },
    });
    await call(admin, 'PUT', `/api/v1/users/${player.userId}/role`, { role: 'player' });

    // What a failed action leaves: nothing (a studio may not freeze another's asset).
    const before = (await rows()).length;
    const refused = await call(rival, 'POST', `/api/v1/assets/${nft}/freeze`);
    expect(refused.status).toBe(403);
    expect((await rows()).length).toBe(before);
  });

  it("records an admin's suspension, resumption, reassignment and unregistration of a chain contract", async () => {
    // Registration reads the chain (test/integration/chain/); the row is made here as it would leave it.
    const address = '0x00000000000000000000000000000000000a0d17';
    const em = orm.em.fork();
    em.create(ChainContract, {
      chainId: 31337,
      address,
      standard: 'erc721',
      collection: em.getReference(Collection, collection),
      fromBlock: 0,
      nextBlock: 0,
      projectedBlock: null,
      status: 'active',
      suspendedReason: null,
      suspendedAt: null,
      name: null,
      symbol: null,
      decimals: null,
      createdBy: studio.userId,
      createdAt: new Date(),
    });
    await em.flush();
    const actor = { userId: admin.userId, role: 'admin' as const };
    const ref = { chainId: 31337, address };
    const origin = {
      actor: { kind: 'user' as const, id: admin.userId, role: 'admin' },
      credential: { kind: 'token' as const, clientId: 'test' },
      address: '127.0.0.1',
      requestId: 'chain-admin',
    };
    const asResponse = (work: () => Promise<unknown>) => async (): Promise<Response> => {
      try {
        await withAuditOrigin(origin, work);
        return { status: 200, body: null, text: '' };
      } catch (error) {
        return { status: 500, body: null, text: String(error) };
      }
    };
    const status = async () => (await orm.em.fork().findOneOrFail(ChainContract, { address })).status;
    const suspended = await audited(
      'chainContract.suspended',
      asResponse(() => adminSuspend(orm, actor, ref, 'audit test')),
      async () => expect(await status()).toBe('active'),
    );
    expect(JSON.parse(suspended.entry.body)).toMatchObject({
      actor: { id: admin.userId },
      object: {
        type: 'chainContract',
        id: `31337:${address}`,
        ownerId: studio.userId,
        collectionId: collection,
      },
      after: { status: 'suspended', reason: 'audit test' },
    });
    await audited(
      'chainContract.resumed',
      asResponse(() => adminResume(orm, actor, ref)),
      async () => expect(await status()).toBe('suspended'),
    );
    const other = `audit-other-${kind}`;
    expect((await call(studio, 'POST', '/api/v1/collections', { id: other, name: 'Other' })).status).toBe(
      201,
    );
    await audited(
      'chainContract.reassigned',
      asResponse(() => reassignContract(orm, actor, { ...ref, collectionId: other })),
      async () =>
        expect((await orm.em.fork().findOneOrFail(ChainContract, { address })).collection.id).toBe(
          collection,
        ),
    );
    await audited(
      'chainContract.unregistered',
      asResponse(() => adminUnregister(orm, actor, ref)),
      async () => expect(await status()).toBe('active'),
    );
  });

  it('covered every action kind but those needing a chain node or the command line', () => {
    // A contract's registration (test/integration/chain/api.test.ts) needs an EVM node; the command's
    // (test/integration/admin-command.test.ts) a child process: each is checked there.
    const elsewhere = Object.keys(AUDIT_ACTIONS).filter(
      (action) => action === 'chainContract.registered' || action === 'user.created',
    );
    expect(Object.keys(AUDIT_ACTIONS).filter((action) => !covered.has(action))).toEqual(elsewhere);
  });

  it('keeps no secret in any entry', async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(8);
    const everything = JSON.stringify(await sql('select * from audit_entry'));
    for (const secret of secrets)
      expect(everything.includes(secret), 'a secret in the audit trail').toBe(false);
    // Nor their digests (the claim codes' hashes, the keys' and secrets' digests).
    const digests = await sql<{ h: string }>(
      'select key_hash as h from api_key union all select secret_hash as h from client_secret union all select code_hash as h from store_offer where code_hash is not null',
    );
    expect(digests.length).toBeGreaterThan(3);
    for (const { h } of digests) expect(everything.includes(h), 'a digest in the audit trail').toBe(false);
  });

  it('chains every entry without forking under concurrent appends, and verifies', async () => {
    // Twenty appends at once, ORM and ledger side: the chain holds (one tip, no two entries sharing a seq).
    await Promise.all([
      ...Array.from({ length: 10 }, (_, i) =>
        call(studio, 'POST', `/api/v1/collections/${collection}/mint/batch`, {
          items: [{ to: studio.wallet, nft: { name: `Concurrent ${i}`, metadata: METADATA } }],
        }).then((r) => expect(r.status, r.text).toBe(201)),
      ),
      ...Array.from({ length: 10 }, (_, i) =>
        call(rival, 'POST', '/api/v1/api-keys', { name: `concurrent ${i}` }, true).then((r) => {
          expect(r.status, r.text).toBe(201);
          secrets.push(r.body.key);
        }),
      ),
    ]);
    const verified = await verifyAudit(orm);
    expect(verified.problems).toEqual([]);
    const all = await rows();
    expect(all.map((row) => row.seq)).toEqual(all.map((_, i) => i + 1));
    expect(verified.tip.seq).toBe(all.length);
  });

  it('finds a removed, an altered and reordered entries', async () => {
    const all = await rows();
    expect(all.length).toBeGreaterThan(10);
    const [a, b] = [all[3], all[4]];

    await sql(
      `update audit_entry set body = replace(body, '"${a.action}"', '"asset.minted"') where seq = ${a.seq}`,
    );
    expect((await verifyAudit(orm)).problems.join('\n')).toMatch(new RegExp(`entry ${a.seq}: .*altered`));
    await sql(`update audit_entry set body = '${a.body.replaceAll("'", "''")}' where seq = ${a.seq}`);
    expect((await verifyAudit(orm)).problems).toEqual([]);

    await sql(`update audit_entry set object_id = 'someone-else' where seq = ${a.seq}`);
    expect((await verifyAudit(orm)).problems.join('\n')).toMatch(
      `entry ${a.seq}: its columns do not match its body`,
    );
    await sql(`update audit_entry set object_id = '${a.object_id}' where seq = ${a.seq}`);

    // Reordered: the two entries swap places (their seq numbers).
    await sql(`update audit_entry set seq = -1 where seq = ${a.seq}`);
    await sql(`update audit_entry set seq = ${a.seq} where seq = ${b.seq}`);
    await sql(`update audit_entry set seq = ${b.seq} where seq = -1`);
    expect((await verifyAudit(orm)).problems.join('\n')).toMatch(
      `entry ${a.seq}: its prev_hash is not the hash of the entry before it`,
    );
    await sql(`update audit_entry set seq = -1 where seq = ${a.seq}`);
    await sql(`update audit_entry set seq = ${a.seq} where seq = ${b.seq}`);
    await sql(`update audit_entry set seq = ${b.seq} where seq = -1`);
    expect((await verifyAudit(orm)).problems).toEqual([]);

    // The last entry removed: the tip still names it.
    const last = all[all.length - 1];
    await sql(`delete from audit_entry where seq = ${last.seq}`);
    expect((await verifyAudit(orm)).problems).toEqual([
      `entries ${last.seq}..${last.seq} are missing (the tip is ${last.seq})`,
    ]);

    // A middle one removed, found by the operators' commands too (each run once).
    await sql(`delete from audit_entry where seq = ${b.seq}`);
    const config = t.app.config;
    const env = {
      DATA_DIR: config.dataDir,
      SQLITE_PATH: config.sqlitePath,
      SECRET_KEY: TEST_SECRET_KEY,
      ...(config.databaseUrl ? { DATABASE_URL: config.databaseUrl } : {}),
    };
    const verify = await runScript('src/cli/audit-verify.ts', [], env);
    expect(verify.code, verify.stdout + verify.stderr).toBe(1);
    expect(verify.stderr).toContain(`entries ${b.seq}..${b.seq} are missing`);
    const check = await runScript('src/cli/db-check.ts', [], env);
    expect(check.code, check.stdout + check.stderr).toBe(1);
    expect(check.stderr).toContain(`audit trail: entries ${b.seq}..${b.seq} are missing`);
  });

  it('prunes by retention in batches, keeping a checkpoint that still verifies', async () => {
    // Start from a sound chain again (the previous case removed entries): a fresh database's trail.
    await sql('delete from audit_entry');
    await sql(
      `update audit_tip set seq = 0, hash = '${'0'.repeat(64)}', pruned_seq = 0, pruned_hash = '${'0'.repeat(64)}'`,
    );
    const em = orm.em.fork();
    for (let i = 0; i < 7; i++)
      await em.transactional((tx) =>
        recordAudit(
          tx,
          auditDraft(
            'collection.created',
            { type: 'collection', id: `c${i}` },
            {},
            new Date(Date.UTC(2020, 0, 1 + i)),
          ),
        ),
      );
    expect(await pruneAudit(orm, new Date(Date.UTC(2020, 0, 6)), 2)).toBe(5);
    const verified = await verifyAudit(orm);
    expect(verified.problems).toEqual([]);
    expect(verified.entries).toBe(2);
    expect(verified.tip).toMatchObject({ seq: 7, prunedSeq: 5 });
    // Appends after pruning chain on; a removal just after the checkpoint is still found.
    await em.transactional((tx) =>
      recordAudit(tx, auditDraft('collection.created', { type: 'collection', id: 'c7' })),
    );
    expect((await verifyAudit(orm)).problems).toEqual([]);
    await sql('delete from audit_entry where seq = 6');
    expect((await verifyAudit(orm)).problems).toEqual([
      'entries 6..6 are missing',
      'entry 7: its prev_hash is not the hash of the entry before it',
    ]);
  });
});

it("the contract's AuditAction lists exactly the action kinds of src/domain/audit.ts", () => {
  const schemas = (loadOpenApiDocument() as { components: { schemas: Record<string, { enum: string[] }> } })
    .components.schemas;
  expect([...schemas.AuditAction.enum].sort()).toEqual(Object.keys(AUDIT_ACTIONS).sort());
});

describe.each(DB_KINDS)('GET /api/v1/audit-log on %s', (kind) => {
  let t: TestApp;
  let admin: HttpUser;
  let studio: HttpUser;
  let rival: HttpUser;
  let player: HttpUser;
  const collection = `log-${kind}`;

  const list = (user: HttpUser, query = '') =>
    t.http('GET', `/api/v1/audit-log${query}`, { headers: user.headers });

  beforeAll(async () => {
    t = await startTestApp(kind, { RATE_LIMIT_REQUESTS: '100000', RATE_LIMIT_USER_REQUESTS: '100000' });
    [admin, studio, rival, player] = await Promise.all([
      httpUser(t, 'admin'),
      httpUser(t, 'studio'),
      httpUser(t, 'studio'),
      httpUser(t, 'player'),
    ]);
    const made = await t.http('POST', '/api/v1/collections', {
      body: { id: collection, name: 'Log' },
      headers: studio.headers,
    });
    expect(made.status, made.text).toBe(201);
    for (let i = 0; i < 3; i++) {
      const minted = await t.http('POST', `/api/v1/collections/${collection}/mint/batch`, {
        body: { items: [{ to: player.wallet, nft: { name: `Logged ${i}`, metadata: METADATA } }] },
        headers: studio.headers,
      });
      expect(minted.status, minted.text).toBe(201);
    }
    const role = await t.http('PUT', `/api/v1/users/${player.userId}/role`, {
      body: { role: 'oracle' },
      headers: admin.headers,
    });
    expect(role.status, role.text).toBe(200);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers an admin every entry, a studio its own objects only, a player 403', async () => {
    const all = await list(admin, '?limit=100');
    expect(all.status, all.text).toBe(200);
    const actions = all.body.data.map((entry: { action: string }) => entry.action);
    expect(actions).toContain('user.roleChanged');
    expect(actions.filter((action: string) => action === 'asset.minted')).toHaveLength(3);

    const own = await list(studio, '?limit=100');
    expect(own.status, own.text).toBe(200);
    expect(own.body.data.length).toBeGreaterThanOrEqual(5); // its key, its collection, its three mints
    for (const entry of own.body.data) expect(entry.object.ownerId).toBe(studio.userId);
    expect(own.body.data.map((entry: { action: string }) => entry.action)).not.toContain('user.roleChanged');

    const other = await list(rival, `?limit=100&objectType=asset`);
    expect(other.status, other.text).toBe(200);
    expect(other.body.data).toEqual([]);
    const others = await list(rival, '?limit=100');
    for (const entry of others.body.data) expect(entry.object.ownerId).toBe(rival.userId);

    const refused = await list(player);
    expect(refused.status, refused.text).toBe(403);
  });

  it('filters by actor, object, action and time, in cursor pages newest first', async () => {
    const minted = await list(admin, `?action=asset.minted&actor=${studio.userId}&limit=2`);
    expect(minted.status, minted.text).toBe(200);
    expect(minted.body.data).toHaveLength(2);
    expect(minted.body.next_cursor).not.toBeNull();
    const rest = await list(
      admin,
      `?action=asset.minted&actor=${studio.userId}&limit=2&cursor=${minted.body.next_cursor}`,
    );
    expect(rest.body.data).toHaveLength(1);
    expect(rest.body.next_cursor).toBeNull();
    const seqs = [...minted.body.data, ...rest.body.data].map((entry: { seq: number }) => entry.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => b - a));

    const one = minted.body.data[0];
    const byObject = await list(admin, `?objectType=asset&objectId=${one.object.id}`);
    expect(byObject.body.data.map((entry: { seq: number }) => entry.seq)).toEqual([one.seq]);

    const at = Date.parse(one.at);
    const window = await list(
      admin,
      `?from=${new Date(at).toISOString()}&to=${new Date(at + 1).toISOString()}&action=asset.minted`,
    );
    expect(window.body.data.map((entry: { seq: number }) => entry.seq)).toContain(one.seq);
    const later = await list(admin, `?from=${new Date(at + 60_000).toISOString()}`);
    expect(later.body.data).toEqual([]);

    const wrong = await list(admin, '?action=asset.stolen');
    expect(wrong.status).toBe(400);
    const foreign = await list(admin, '?cursor=eyJsIjoiY29sbGVjdGlvbnMiLCJrIjoiYSJ9');
    expect(foreign.status).toBe(400);
  });
});
