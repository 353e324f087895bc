// The registration API over HTTP, on the real app (both databases) with a real local EVM node:
// POST/GET /api/v1/collections/{collection_id}/contracts, every answer checked against the contract,
// and the app's own indexer (started from CHAINS) indexing what was registered.
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainHolding } from '../../../src/db/entities/index.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import {
  deploy,
  deployErc721,
  devAccount,
  ERC721_PRESET,
  type EvmNode,
  HARDHAT_CHAIN_ID,
  OWNABLE,
  send,
  startEvmNode,
} from '../../helpers/evm-node.ts';
import { type HttpUser, httpUser, linkWalletHttp } from '../../helpers/ledger-fixtures.ts';

let node: EvmNode;
beforeAll(async () => {
  node = await startEvmNode();
});
afterAll(async () => {
  await node?.stop();
});

describe.each(DB_KINDS)('on-chain contract registration API on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let player: HttpUser;
  beforeAll(async () => {
    t = await startTestApp(kind, {
      CHAINS: `${HARDHAT_CHAIN_ID}=${node.url}`,
      CHAIN_CONFIRMATIONS: '2',
      CHAIN_POLL_MS: '50',
      CHAIN_RPC_RATE: '1000',
    });
    studio = await httpUser(t, 'studio');
    // The studio controls the contracts it registers: the deployer (their DEFAULT_ADMIN_ROLE) is its wallet.
    await linkWalletHttp(t, studio, devAccount(0));
    player = await httpUser(t, 'player');
    const created = await t.http('POST', '/api/v1/collections', {
      body: { id: `chain-${kind}`, name: 'On-chain game' },
      headers: studio.headers,
    });
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('registers an ERC-721 contract, lists it, and indexes its mints', async () => {
    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const address = await deployErc721(node);
    const path = `/api/v1/collections/chain-${kind}/contracts`;
    const body = { chainId: HARDHAT_CHAIN_ID, address: address.toLowerCase(), standard: 'erc721', fromBlock };

    const forbidden = await t.http('POST', path, { body, headers: player.headers });
    expect(forbidden.status).toBe(403);
    const missing = await t.http('POST', '/api/v1/collections/no-such-game/contracts', {
      body,
      headers: studio.headers,
    });
    expect(missing.status).toBe(404);
    const bad = await t.http('POST', path, {
      body: { ...body, standard: 'erc777' },
      headers: studio.headers,
    });
    expect(bad.status).toBe(400);
    const mismatch = await t.http('POST', path, {
      body: { ...body, standard: 'erc1155' },
      headers: studio.headers,
    });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.type).toBe('/problems/contract-standard-mismatch');

    const created = await t.http('POST', path, { body, headers: studio.headers });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      chainId: HARDHAT_CHAIN_ID,
      address: getAddress(address),
      standard: 'erc721',
      collection: `chain-${kind}`,
      fromBlock,
      symbol: 'SWD',
      caip19: `eip155:${HARDHAT_CHAIN_ID}/erc721:${getAddress(address)}`,
    });
    const again = await t.http('POST', path, { body, headers: studio.headers });
    expect(again.status).toBe(409);
    expect(again.body.type).toBe('/problems/contract-exists');
    // Issue 37: the registration is in the audit trail, once: the refused attempts (403, 404, 400,
    // 422, and the 409 whose insert rolled back with its entry) left none.
    const objectId = `${HARDHAT_CHAIN_ID}:${address.toLowerCase()}`;
    const audit = await t.http(
      'GET',
      `/api/v1/audit-log?action=chainContract.registered&objectId=${objectId}`,
      {
        headers: studio.headers,
      },
    );
    expect(audit.status, audit.text).toBe(200);
    expect(audit.body.data).toHaveLength(1);
    expect(audit.body.data[0]).toMatchObject({
      action: 'chainContract.registered',
      actor: { kind: 'user', id: studio.userId },
      object: { type: 'chainContract', id: objectId, ownerId: studio.userId, collectionId: `chain-${kind}` },
      after: { address: getAddress(address), standard: 'erc721' },
    });
    const listed = await t.http('GET', path, { headers: player.headers });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([created.body]);

    // The app's own indexer picks the contract up and follows the head.
    await send(node, ERC721_PRESET, address, 'mint', [node.address(4)]);
    const deadline = Date.now() + 10_000;
    const holder = node.address(4).toLowerCase();
    for (;;) {
      const rows = await t.app.orm.em
        .fork()
        .find(ChainHolding, { address: holder, contract: { address: address.toLowerCase() } });
      if (rows.length === 1) break;
      if (Date.now() > deadline) throw new Error('the app did not index the mint');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  it('30.3: a studio registers only a contract it controls; an admin registers without proof and reassigns', async () => {
    // A rival studio, with its own collection and linked wallet, tries to claim the studio's contract first.
    const rival = await httpUser(t, 'studio');
    await linkWalletHttp(t, rival, devAccount(1));
    const rivalPath = `/api/v1/collections/rival-${kind}/contracts`;
    const ownPath = `/api/v1/collections/chain-${kind}/contracts`;
    expect(
      (
        await t.http('POST', '/api/v1/collections', {
          body: { id: `rival-${kind}`, name: 'Rival game' },
          headers: rival.headers,
        })
      ).status,
    ).toBe(201);
    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const swords = await deployErc721(node, 'Claimed', 'CLM'); // DEFAULT_ADMIN_ROLE: account 0, the studio's
    const body = { chainId: HARDHAT_CHAIN_ID, address: swords, standard: 'erc721', fromBlock };
    const squat = await t.http('POST', rivalPath, { body, headers: rival.headers });
    expect([squat.status, squat.body.type]).toEqual([403, '/problems/contract-not-controlled']);
    expect((await t.http('GET', rivalPath, { headers: rival.headers })).body.data).toEqual([]);
    const own = await t.http('POST', ownPath, { body, headers: studio.headers });
    expect(own.status, own.text).toBe(201);

    // Ownable: owner() is account 1, the rival's wallet. The rival passes the proof (and meets the
    // standard check: a ProxyAdmin is no ERC-721); the studio does not.
    const owned = await deploy(node, OWNABLE, [], 1);
    const ownedBody = { ...body, address: owned };
    const notMine = await t.http('POST', ownPath, { body: ownedBody, headers: studio.headers });
    expect([notMine.status, notMine.body.type]).toEqual([403, '/problems/contract-not-controlled']);
    const mine = await t.http('POST', rivalPath, { body: ownedBody, headers: rival.headers });
    expect([mine.status, mine.body.type]).toEqual([422, '/problems/contract-standard-mismatch']);

    // An admin registers without proof (into the wrong collection here), then moves it.
    const admin = await httpUser(t, 'admin');
    const shields = await deployErc721(node, 'Shields', 'SHD');
    const placed = await t.http('POST', rivalPath, {
      body: { ...body, address: shields },
      headers: admin.headers,
    });
    expect([placed.status, placed.body.collection]).toEqual([201, `rival-${kind}`]);
    const reassign = `/api/v1/chains/${HARDHAT_CHAIN_ID}/contracts/${shields}/reassign`;
    const target = { collectionId: `chain-${kind}` };
    for (const user of [rival, studio, player]) {
      const refused = await t.http('POST', reassign, { body: target, headers: user.headers });
      expect([refused.status, refused.body.type]).toEqual([403, '/problems/role-not-allowed']);
    }
    const noCollection = await t.http('POST', reassign, {
      body: { collectionId: 'no-such-game' },
      headers: admin.headers,
    });
    expect(noCollection.status).toBe(404);
    const noContract = await t.http(
      'POST',
      `/api/v1/chains/${HARDHAT_CHAIN_ID}/contracts/${owned}/reassign`,
      {
        body: target,
        headers: admin.headers,
      },
    );
    expect(noContract.status).toBe(404);
    // A wrong EIP-55 checksum: the first letter's case flipped.
    const flipped = getAddress(shields).replace(/[a-fA-F]/, (c) =>
      c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase(),
    );
    const badChecksum = await t.http(
      'POST',
      `/api/v1/chains/${HARDHAT_CHAIN_ID}/contracts/${flipped}/reassign`,
      {
        body: target,
        headers: admin.headers,
      },
    );
    expect(badChecksum.status).toBe(400);
    const moved = await t.http('POST', reassign, { body: target, headers: admin.headers });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body).toMatchObject({ address: getAddress(shields), collection: `chain-${kind}` });
    expect((await t.http('GET', rivalPath, { headers: player.headers })).body.data).toEqual([]);
    const listed = await t.http('GET', ownPath, { headers: player.headers });
    expect(listed.body.data.map((row: { address: string }) => row.address)).toContain(getAddress(shields));
  });

  it('reports per chain the head, indexed block and lag in /readyz and /metrics', async () => {
    const head = Number(await node.publicClient.getBlockNumber());
    let chain:
      | { chainId: number; state: string; head: number; indexedBlock: number; lag: number }
      | undefined;
    const deadline = Date.now() + 10_000;
    for (;;) {
      const ready = await t.http('GET', '/readyz');
      expect(ready.status).toBe(200);
      chain = ready.body.chains?.[0];
      if (chain?.state === 'following' && chain.indexedBlock >= head) break;
      if (Date.now() > deadline) throw new Error(`not caught up: ${JSON.stringify(chain)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(chain).toMatchObject({ chainId: HARDHAT_CHAIN_ID });
    expect(chain?.lag).toBe((chain?.head ?? 0) - (chain?.indexedBlock ?? 0));
    const metrics = await t.http('GET', '/metrics');
    expect(metrics.status).toBe(200);
    const value = (name: string) =>
      Number(new RegExp(`^${name}\\{chain_id="${HARDHAT_CHAIN_ID}"\\} (\\d+)$`, 'm').exec(metrics.text)?.[1]);
    expect(value('chain_indexed_block')).toBeGreaterThanOrEqual(head);
    expect(value('chain_head_block')).toBeGreaterThanOrEqual(value('chain_indexed_block'));
    expect(value('chain_indexer_active')).toBe(1);
    expect(value('chain_indexer_paused')).toBe(0);
  });
});
