// The registration API over HTTP, on the real app (both databases) with a real local EVM node:
// POST/GET /api/v1/collections/{collection_id}/contracts, every answer checked against the contract,
// and the app's own indexer (started from CHAINS) indexing what was registered.
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainHolding } from '../../../src/db/entities/index.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import {
  deployErc721,
  ERC721_PRESET,
  type EvmNode,
  HARDHAT_CHAIN_ID,
  send,
  startEvmNode,
} from '../../helpers/evm-node.ts';
import { type HttpUser, httpUser } from '../../helpers/ledger-fixtures.ts';

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
