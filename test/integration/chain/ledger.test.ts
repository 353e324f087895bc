// On-chain tokens in the ledger's reads and events (issue 20), on the real app (both databases) with
// a real local EVM node: confirmed transfers of ERC-721, ERC-20 and ERC-1155 contracts appear in
// GET /wallets/{id}/assets, GET /assets/{id} (with `source`), /api/v1/transfers and on /ws, every
// answer and message checked against the contract; the ledger refuses to move them (409); and the
// projection survives a crash between its ledger write and its cursor (a replay, nothing twice).
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confirmUpTo, LeaseLost } from '../../../src/chain/apply.ts';
import { ChainIndexer } from '../../../src/chain/indexer.ts';
import { projectConfirmed } from '../../../src/chain/projection.ts';
import { ChainContract } from '../../../src/db/entities/index.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { chainAssetId } from '../../../src/domain/ledger/chain-assets.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import {
  caip,
  deployErc20,
  deployErc721,
  deployErc1155,
  devAccount,
  ERC20_PRESET,
  ERC721_PRESET,
  ERC1155_PRESET,
  type EvmNode,
  HARDHAT_CHAIN_ID,
  send,
  startEvmNode,
} from '../../helpers/evm-node.ts';
import { type HttpUser, httpUser, linkWalletHttp } from '../../helpers/ledger-fixtures.ts';
import { connect } from '../../helpers/ws.ts';

let node: EvmNode;
beforeAll(async () => {
  node = await startEvmNode();
});
afterAll(async () => {
  await node?.stop();
});

async function until<T>(probe: () => Promise<T | undefined>, what: string, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe.each(DB_KINDS)('on-chain tokens in the ledger on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let player: HttpUser;
  const collection = `onchain-${kind}`;
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
      body: { id: collection, name: 'On-chain game' },
      headers: studio.headers,
    });
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function register(address: string, standard: string, fromBlock: number) {
    const created = await t.http('POST', `/api/v1/collections/${collection}/contracts`, {
      body: { chainId: HARDHAT_CHAIN_ID, address, standard, fromBlock },
      headers: studio.headers,
    });
    expect(created.status).toBe(201);
  }

  it('shows confirmed ERC-721, ERC-20 and ERC-1155 movements in wallet, asset and transfer reads and on /ws; refuses ledger moves', async () => {
    const alice = node.address(5);
    const bob = node.address(6);
    const socket = await connect(`${t.baseUrl.replace('http', 'ws')}/ws`, player.headers);
    socket.send({ type: 'subscribe', events: ['newTransfer'], walletId: alice });
    await socket.next((message) => message.type === 'subscribed');

    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const sword = await deployErc721(node);
    const gold = await deployErc20(node, 'Gold', 'GLD');
    const items = await deployErc1155(node);
    await register(sword, 'erc721', fromBlock);
    await register(gold, 'erc20', fromBlock);
    await register(items, 'erc1155', fromBlock);

    // An ERC-20 is an asset from its registration on, with its chain source.
    const goldId = chainAssetId(caip('erc20', gold));
    const goldAsset = await t.http('GET', `/assets/${goldId}`, { headers: player.headers });
    expect(goldAsset.status).toBe(200);
    expect(goldAsset.body).toMatchObject({
      id: goldId,
      kind: 'fungible',
      collection,
      symbol: 'GLD',
      decimals: 18,
      totalSupply: '0',
      source: {
        type: 'chain',
        chainId: HARDHAT_CHAIN_ID,
        standard: 'erc20',
        contract: getAddress(gold),
        tokenId: null,
        caip19: caip('erc20', gold),
      },
    });

    await send(node, ERC721_PRESET, sword, 'mint', [alice]);
    await send(node, ERC20_PRESET, gold, 'mint', [alice, 5n * 10n ** 18n]);
    await send(node, ERC1155_PRESET, items, 'mint', [alice, 7n, 10n, '0x']);
    await send(node, ERC721_PRESET, sword, 'transferFrom', [alice, bob, 0n], 5);
    await send(node, ERC1155_PRESET, items, 'burn', [alice, 7n, 3n], 5);
    await node.testClient.mine({ blocks: 3 });

    const swordId = chainAssetId(caip('erc721', sword, '0'));
    const itemId = chainAssetId(caip('erc1155', items, '7'));
    // Every movement confirmed and projected: alice holds the gold and what is left of the items.
    const expected = { [goldId]: '5', [itemId]: '7' }; // the sword moved on to bob
    const aliceAssets = await until(async () => {
      const page = await t.http('GET', `/wallets/${alice}/assets`, { headers: player.headers });
      expect(page.status).toBe(200);
      const balances = Object.fromEntries(
        page.body.data.map((entry: { asset: { id: string }; balance: string }) => [
          entry.asset.id,
          entry.balance,
        ]),
      );
      const same = (o: Record<string, string>) => JSON.stringify(Object.entries(o).sort());
      return same(balances) === same(expected) ? page.body : undefined;
    }, "alice's on-chain holdings");
    const item = aliceAssets.data.find((entry: { asset: { id: string } }) => entry.asset.id === itemId).asset;
    expect(item.source).toEqual({
      type: 'chain',
      chainId: HARDHAT_CHAIN_ID,
      standard: 'erc1155',
      contract: getAddress(items),
      tokenId: '7',
      caip19: caip('erc1155', items, '7'),
    });
    expect(item.totalSupply).toBe('7'); // 10 minted, 3 burnt

    const swordAsset = await t.http('GET', `/assets/${swordId}`, { headers: player.headers });
    expect(swordAsset.status).toBe(200);
    expect(swordAsset.body).toMatchObject({ kind: 'nft', owner: bob, source: { tokenId: '0' } });
    const bobAssets = await t.http('GET', `/wallets/${bob}/assets`, { headers: player.headers });
    expect(bobAssets.body.data.map((entry: { asset: { id: string } }) => entry.asset.id)).toEqual([swordId]);
    const goldNow = await t.http('GET', `/assets/${goldId}`, { headers: player.headers });
    expect(goldNow.body.totalSupply).toBe('5');

    // History: alice's five movements, each once.
    const history = await t.http('GET', `/api/v1/transfers?wallet=${alice}&limit=50`, {
      headers: player.headers,
    });
    expect(history.status).toBe(200);
    const moves = history.body.data.map(
      (tr: { assetId: string; from: string; to: string; amount: string }) => [
        tr.assetId,
        tr.from,
        tr.to,
        tr.amount,
      ],
    );
    const zero = '0x0000000000000000000000000000000000000000';
    expect(moves).toEqual(
      expect.arrayContaining([
        [swordId, zero, alice, '1'],
        [goldId, zero, alice, '5'],
        [itemId, zero, alice, '10'],
        [swordId, alice, bob, '1'],
        [itemId, alice, zero, '3'],
      ]),
    );
    expect(moves).toHaveLength(5);

    // The same five as newTransfer events on /ws (validated against the AsyncAPI document).
    const events = await socket.collect(5, (message) => message.type === 'newTransfer');
    expect(events.map((event) => event.data.assetId).sort()).toEqual(
      [swordId, goldId, itemId, swordId, itemId].sort(),
    );
    socket.close();

    // The ledger never moves or mints an on-chain token.
    const move = await t.http('POST', '/api/v1/transfer', {
      body: { assetId: itemId, from: player.wallet, to: bob, amount: '1' },
      headers: player.headers,
    });
    expect(move.status).toBe(409);
    expect(move.body.type).toBe('/problems/asset-on-chain');
    const mint = await t.http('POST', `/api/v1/currencies/${goldId}/mint`, {
      body: { to: alice, amount: '1' },
      headers: studio.headers,
    });
    expect(mint.status).toBe(409);
    expect(mint.body.type).toBe('/problems/asset-on-chain');
    const after = await t.http('GET', `/assets/${goldId}`, { headers: player.headers });
    expect(after.body.totalSupply).toBe('5');
  });

  it('replays a batch applied before a crash instead of applying it twice', async () => {
    // An instance without an indexer of its own: the test drives one step by step.
    const t2 = await startTestApp(kind, {
      CHAINS: `${HARDHAT_CHAIN_ID}=${node.url}`,
      CHAIN_CONFIRMATIONS: '2',
      CHAIN_INDEXER: 'off',
    });
    try {
      const orm = t2.app.orm as unknown as Orm;
      const owner = await httpUser(t2, 'studio');
      await linkWalletHttp(t2, owner, devAccount(0));
      const created = await t2.http('POST', '/api/v1/collections', {
        body: { id: 'crash-game', name: 'Crash game' },
        headers: owner.headers,
      });
      expect(created.status).toBe(201);
      const carol = node.address(7);
      const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
      const silver = await deployErc20(node, 'Silver', 'SLV');
      const registered = await t2.http('POST', '/api/v1/collections/crash-game/contracts', {
        body: { chainId: HARDHAT_CHAIN_ID, address: silver, standard: 'erc20', fromBlock },
        headers: owner.headers,
      });
      expect(registered.status).toBe(201);
      const minted = await send(node, ERC20_PRESET, silver, 'mint', [carol, 4n * 10n ** 18n]);
      const holder = 'crash-test';
      const indexer = new ChainIndexer(
        t2.app.database,
        { chainId: HARDHAT_CHAIN_ID, rpcUrl: node.url, confirmations: 2 },
        { chains: [], rpcRate: 1000, maxBlockRange: 500, pollMs: 20, rpcTimeoutMs: 2000, indexer: true },
        t2.app.logger,
        { holder },
      );
      // Read up to the mint's block (not confirmed yet, so nothing is projected), then confirm it.
      for (let i = 0; i < 50 && (await indexer.step()) === 'progress'; i++);
      const silverId = chainAssetId(caip('erc20', silver));
      const balance = async () => {
        const page = await t2.http('GET', `/wallets/${carol}/assets`, { headers: owner.headers });
        expect(page.status).toBe(200);
        return page.body.data.map((entry: { asset: { id: string }; balance: string }) => [
          entry.asset.id,
          entry.balance,
        ]);
      };
      expect(await balance()).toEqual([]);
      await confirmUpTo(orm, HARDHAT_CHAIN_ID, holder, minted);
      // A projection that dies after the ledger commit, before its cursor moves (it lost the lease).
      await expect(
        projectConfirmed(t2.app.database, {
          chainId: HARDHAT_CHAIN_ID,
          holder: 'intruder',
          image: 'https://x.test/i.svg',
        }),
      ).rejects.toThrow(LeaseLost);
      expect(await balance()).toEqual([[silverId, '4']]);
      const contract = await orm.em.fork().findOneOrFail(ChainContract, { address: silver.toLowerCase() });
      expect(contract.projectedBlock).toBeNull();

      // The indexer's next step builds the same batch: the store answers replay, the cursor moves.
      await indexer.step();
      const moved = await orm.em.fork().findOneOrFail(ChainContract, { id: contract.id });
      expect(moved.projectedBlock).toBe(Number(minted));
      expect(await balance()).toEqual([[silverId, '4']]);
      const history = await t2.http('GET', `/api/v1/transfers?wallet=${carol}`, { headers: owner.headers });
      expect(history.body.data).toHaveLength(1);
      const records = await orm.em
        .fork()
        .getConnection()
        .execute("select id from idempotency_record where id like 'chain-projection:%'");
      expect(records).toEqual([]);
      await indexer.stop();
    } finally {
      await t2.close();
    }
  });
});
