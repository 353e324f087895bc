// The advisory events of on-chain transfers before confirmation (issue 20, src/chain/announce.ts), on
// the real app (both databases) with a real local EVM node and an indexer driven step by step:
// `chainTransferPending` before `newTransfer` (holdings move only with the latter; the pending event
// on /ws, /assets/subscribe, a webhook, the REST catch-up and a replay); a reorg that removes a
// pending transfer (`chainTransferRemoved`), one that replaces it (removed, then pending on the new
// branch) and one that moves its transaction to another block (the same transfer pending again);
// each event exactly once across a crash between the chain tables' commit and the events plan (and
// between the plan and its mark); none with CHAIN_CONFIRMATIONS=0. Every answer and WebSocket
// message is checked against the contract.
import { encodeFunctionData, getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { announcePending } from '../../../src/chain/announce.ts';
import { LeaseLost } from '../../../src/chain/apply.ts';
import { ChainIndexer } from '../../../src/chain/indexer.ts';
import type { ChainSettings } from '../../../src/config/index.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { chainAssetId } from '../../../src/domain/ledger/chain-assets.ts';
import { DB_KINDS, startTestApp, type TestApp } from '../../helpers/app.ts';
import {
  caip,
  deployErc20,
  deployErc721,
  devAccount,
  ERC20_PRESET,
  ERC721_PRESET,
  type EvmNode,
  HARDHAT_CHAIN_ID,
  send,
  startEvmNode,
} from '../../helpers/evm-node.ts';
import { type HttpUser, httpUser, linkWalletHttp } from '../../helpers/ledger-fixtures.ts';
import { connect, type ServerMessage, type TestSocket } from '../../helpers/ws.ts';
import { startReceiver, verified } from '../webhooks/receiver.ts';

const CONFIRMATIONS = 2;
const ZERO = '0x0000000000000000000000000000000000000000';
/** One token of an 18-decimal ERC-20, in base units. */
const UNIT = 10n ** 18n;

let node: EvmNode;
beforeAll(async () => {
  node = await startEvmNode();
});
afterAll(async () => {
  await node?.stop();
});

const settings: ChainSettings = {
  chains: [],
  rpcRate: 1000,
  maxBlockRange: 500,
  pollMs: 20,
  rpcTimeoutMs: 2000,
  indexer: true,
};

describe.each(DB_KINDS)('pending and removed on-chain transfer events on %s', (kind) => {
  let t: TestApp;
  let orm: Orm;
  let studio: HttpUser;
  const collection = `pending-${kind}`;
  beforeAll(async () => {
    // No indexer of its own: each test drives one step by step.
    t = await startTestApp(kind, {
      CHAINS: `${HARDHAT_CHAIN_ID}=${node.url}`,
      CHAIN_CONFIRMATIONS: String(CONFIRMATIONS),
      CHAIN_INDEXER: 'off',
      WEBHOOK_ALLOW_LOOPBACK: 'true',
    });
    orm = t.app.orm as unknown as Orm;
    studio = await httpUser(t, 'studio');
    // The studio controls the contracts it registers: the deployer (their DEFAULT_ADMIN_ROLE) is its wallet.
    await linkWalletHttp(t, studio, devAccount(0));
    const created = await t.http('POST', '/api/v1/collections', {
      body: { id: collection, name: 'Pending game' },
      headers: studio.headers,
    });
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
  });

  function indexer(holder: string, confirmations = CONFIRMATIONS): ChainIndexer {
    return new ChainIndexer(
      t.app.database,
      { chainId: HARDHAT_CHAIN_ID, rpcUrl: node.url, confirmations },
      settings,
      t.app.logger,
      { holder },
    );
  }

  async function drain(chain: ChainIndexer): Promise<void> {
    for (let i = 0; i < 100; i++) if ((await chain.step()) !== 'progress') return;
    throw new Error('indexer did not catch up');
  }

  async function deploy(standard: 'erc20' | 'erc721'): Promise<`0x${string}`> {
    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const address = standard === 'erc20' ? await deployErc20(node) : await deployErc721(node);
    const registered = await t.http('POST', `/api/v1/collections/${collection}/contracts`, {
      body: { chainId: HARDHAT_CHAIN_ID, address, standard, fromBlock },
      headers: studio.headers,
    });
    expect(registered.status).toBe(201);
    return address;
  }

  /** The retained events of `assetId`, of the given types, through the REST catch-up. */
  async function eventsOf(
    assetId: string,
    types: string[] = ['chainTransferPending', 'chainTransferRemoved', 'newTransfer'],
  ) {
    const page = await t.http(
      'GET',
      `/api/v1/events?assetId=${assetId}&types=${types.join(',')}&limit=1000`,
      {
        headers: studio.headers,
      },
    );
    expect(page.status).toBe(200);
    return page.body.data as { id: string; type: string; data: Record<string, any> }[];
  }

  async function balances(wallet: string): Promise<Record<string, string>> {
    const page = await t.http('GET', `/wallets/${wallet}/assets`, { headers: studio.headers });
    expect(page.status).toBe(200);
    return Object.fromEntries(
      page.body.data.map((entry: { asset: { id: string }; balance: string }) => [
        entry.asset.id,
        entry.balance,
      ]),
    );
  }

  async function subscribe(
    path: '/ws' | '/assets/subscribe',
    message: Record<string, unknown>,
  ): Promise<TestSocket> {
    const socket = await connect(`${t.baseUrl.replace('http', 'ws')}${path}`, studio.headers);
    socket.send({ type: 'subscribe', ...message });
    const subscribed = await socket.next((m) => m.type === 'subscribed' || m.type === 'error');
    expect(subscribed.type).toBe('subscribed');
    return socket;
  }

  it('announces a mint pending before its newTransfer, and holdings move only at confirmation', async () => {
    const alice = node.address(5);
    const sword = await deploy('erc721');
    const swordId = chainAssetId(caip('erc721', sword, '0'));
    const ws = await subscribe('/ws', { walletId: alice });
    const assetSocket = await subscribe('/assets/subscribe', { walletId: alice, assetId: swordId });
    const receiver = await startReceiver();
    const webhook = await t.http('POST', '/api/v1/webhooks', {
      body: { url: receiver.url, eventTypes: ['chainTransferPending'], filter: { walletId: alice } },
      headers: studio.headers,
    });
    expect(webhook.status, webhook.text).toBe(201);
    const chain = indexer('pending-test');
    try {
      const minted = await send(node, ERC721_PRESET, sword, 'mint', [alice]);
      await drain(chain);

      const pending = await ws.next((m) => m.data?.assetId === swordId);
      const block = await node.publicClient.getBlock({ blockNumber: minted });
      expect(pending).toMatchObject({
        type: 'chainTransferPending',
        data: {
          assetId: swordId,
          collection,
          chainId: HARDHAT_CHAIN_ID,
          standard: 'erc721',
          contract: getAddress(sword),
          tokenId: '0',
          caip19: caip('erc721', sword, '0'),
          from: ZERO,
          to: alice,
          amount: '1',
          blockNumber: Number(minted),
          blockHash: block.hash,
          logIndex: 0,
          batchIndex: 0,
          confirmations: 0,
          confirmationsRequired: CONFIRMATIONS,
        },
      });
      expect((await assetSocket.next((m) => m.type === 'chainTransferPending')).id).toBe(pending.id);
      // The same event by webhook (signed), by the REST catch-up with a wallet filter, and replayed.
      const [request] = await receiver.waitFor(1);
      const { subscriptionIds: _, ...envelope } = pending;
      expect(verified(webhook.body.secret, request as never)).toEqual(envelope);
      // Listed once the attempt is recorded (just after the request is answered).
      for (let i = 0; ; i++) {
        const deliveries = await t.http('GET', `/api/v1/webhooks/${webhook.body.id}/deliveries`, {
          headers: studio.headers,
        });
        const listed = deliveries.body.data.map(
          (d: { eventId: string; eventType: string; status: string }) => [d.eventId, d.eventType, d.status],
        );
        if (listed.length > 0 && listed[0][2] !== 'pending') {
          expect(listed).toEqual([[pending.id, 'chainTransferPending', 'succeeded']]);
          break;
        }
        if (i > 100) throw new Error(`webhook delivery not recorded: ${JSON.stringify(listed)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const byWallet = await t.http('GET', `/api/v1/events?walletId=${alice}&types=chainTransferPending`, {
        headers: studio.headers,
      });
      expect(byWallet.body.data.map((e: { id: string }) => e.id)).toContain(pending.id);
      const resumed = await subscribe('/ws', {
        walletId: alice,
        events: ['chainTransferPending'],
        lastEventId: String(BigInt(pending.id) - 1n),
      });
      expect((await resumed.next((m) => m.type === 'chainTransferPending')).id).toBe(pending.id);
      await resumed.next((m) => m.type === 'replayed');
      resumed.close();
      // Advisory only: no asset, no holding, no transfer in the ledger yet.
      expect(await balances(alice)).toEqual({});
      expect((await t.http('GET', `/assets/${swordId}`, { headers: studio.headers })).status).toBe(404);

      // One block on top: still pending, announced once.
      await node.testClient.mine({ blocks: 1 });
      await drain(chain);
      expect(await balances(alice)).toEqual({});
      await node.testClient.mine({ blocks: 1 });
      await drain(chain);
      const confirmed = await ws.next((m) => m.type === 'newTransfer' && m.data.assetId === swordId);
      expect(confirmed.data.id).toBe(pending.data.transferId);
      expect(BigInt(confirmed.id)).toBeGreaterThan(BigInt(pending.id));
      expect(await balances(alice)).toEqual({ [swordId]: '1' });
      expect((await eventsOf(swordId)).map((e) => e.type)).toEqual(['chainTransferPending', 'newTransfer']);
      // A subscriber that asked for ledger changes only never sees the advisory event.
      const history = await eventsOf(swordId, ['newNFT', 'newTransfer', 'priceUpdate']);
      expect(history.map((e) => e.type)).toEqual(['newNFT', 'newTransfer']);
      ws.close();
      assetSocket.close();
    } finally {
      await chain.stop();
      await receiver.close();
    }
  });

  it('publishes chainTransferRemoved for a pending transfer a reorg drops, and removed then pending for one it replaces', async () => {
    const [B, C, D] = [node.address(1), node.address(2), node.address(3)];
    const gold = await deploy('erc20');
    const goldId = chainAssetId(caip('erc20', gold));
    await send(node, ERC20_PRESET, gold, 'mint', [B, 100n * UNIT]);
    await node.testClient.mine({ blocks: CONFIRMATIONS });
    const ws = await subscribe('/ws', {
      assetId: goldId,
      events: ['chainTransferPending', 'chainTransferRemoved', 'newTransfer'],
    });
    const chain = indexer('reorg-test');
    try {
      await drain(chain);
      expect(await balances(B)).toEqual({ [goldId]: '100' });
      expect((await eventsOf(goldId)).map((e) => e.type)).toEqual(['newTransfer']); // read confirmed: no pending

      // Removed: B -> C is mined and announced, then the chain goes back and mines empty blocks instead.
      const snapshot = await node.testClient.snapshot();
      const dropped = await send(node, ERC20_PRESET, gold, 'transfer', [C, 40n * UNIT], 1);
      await drain(chain);
      const pending = await ws.next((m) => m.type === 'chainTransferPending');
      expect(pending.data).toMatchObject({ from: B, to: C, amount: '40', blockNumber: Number(dropped) });
      await node.testClient.revert({ id: snapshot });
      await node.testClient.mine({ blocks: 3 });
      await drain(chain);
      const removed = await ws.next((m) => m.type === 'chainTransferRemoved');
      const { confirmations: _, confirmationsRequired: __, ...identity } = pending.data;
      expect(removed.data).toEqual({ ...identity, reason: 'reorg', forkBlock: Number(dropped) - 1 });
      expect(await balances(C)).toEqual({});
      expect(await balances(B)).toEqual({ [goldId]: '100' });

      // Replaced: B -> C in block N is announced, then a branch where B -> D is in block N instead.
      const snapshot2 = await node.testClient.snapshot();
      const first = await send(node, ERC20_PRESET, gold, 'transfer', [C, 25n * UNIT], 1);
      await drain(chain);
      const toC = await ws.next((m) => m.type === 'chainTransferPending');
      expect(toC.data).toMatchObject({ to: C, amount: '25' });
      await node.testClient.revert({ id: snapshot2 });
      const second = await send(node, ERC20_PRESET, gold, 'transfer', [D, 30n * UNIT], 1);
      expect(second).toBe(first);
      await node.testClient.mine({ blocks: 1 });
      await drain(chain);
      const removedC = await ws.next((m) => m.type === 'chainTransferRemoved');
      const toD = await ws.next((m) => m.type === 'chainTransferPending');
      expect(removedC.data).toMatchObject({ transferId: toC.data.transferId, to: C, reason: 'reorg' });
      expect(toD.data).toMatchObject({ to: D, amount: '30', blockNumber: Number(second) });
      expect(toD.data.blockHash).not.toBe(toC.data.blockHash);
      expect(BigInt(toD.id)).toBeGreaterThan(BigInt(removedC.id));

      await node.testClient.mine({ blocks: CONFIRMATIONS });
      await drain(chain);
      const final = await ws.next((m) => m.type === 'newTransfer' && m.data.to === D);
      expect(final.data.id).toBe(toD.data.transferId);
      expect(await balances(D)).toEqual({ [goldId]: '30' });
      expect(await balances(C)).toEqual({});
      // The whole story, once each, in order.
      expect((await eventsOf(goldId)).map((e) => [e.type, e.data.to])).toEqual([
        ['newTransfer', B],
        ['chainTransferPending', C],
        ['chainTransferRemoved', C],
        ['chainTransferPending', C],
        ['chainTransferRemoved', C],
        ['chainTransferPending', D],
        ['newTransfer', D],
      ]);
      const received = ws.messages.filter((m: ServerMessage) => 'subscriptionIds' in m);
      expect(received.map((m) => m.id)).toEqual((await eventsOf(goldId)).map((e) => e.id));
      ws.close();
    } finally {
      await chain.stop();
    }
  });

  it('announces the same transfer pending again when a reorg moves its transaction to another block', async () => {
    const [B, C] = [node.address(1), node.address(2)];
    const gold = await deploy('erc20');
    const goldId = chainAssetId(caip('erc20', gold));
    await send(node, ERC20_PRESET, gold, 'mint', [B, 10n * UNIT]);
    await node.testClient.mine({ blocks: CONFIRMATIONS });
    const chain = indexer('moved-test');
    try {
      await drain(chain);
      // One signed transaction, mined in block N, then (after the reorg) in block N + 1.
      const wallet = node.wallet(1);
      const request = await wallet.prepareTransactionRequest({
        account: wallet.account as never,
        chain: node.chain,
        to: gold,
        data: encodeFunctionData({ abi: ERC20_PRESET.abi, functionName: 'transfer', args: [C, 4n * UNIT] }),
      });
      const raw = await wallet.signTransaction(request as never);
      const snapshot = await node.testClient.snapshot();
      const hash = await node.publicClient.sendRawTransaction({ serializedTransaction: raw });
      const first = await node.publicClient.waitForTransactionReceipt({ hash });
      await drain(chain);
      await node.testClient.revert({ id: snapshot });
      await node.testClient.mine({ blocks: 1 });
      await node.publicClient.sendRawTransaction({ serializedTransaction: raw });
      const second = await node.publicClient.waitForTransactionReceipt({ hash });
      expect(second.blockNumber).toBe(first.blockNumber + 1n);
      await drain(chain);
      await node.testClient.mine({ blocks: CONFIRMATIONS });
      await drain(chain);

      const story = (await eventsOf(goldId)).slice(1); // after the mint's newTransfer
      expect(story.map((e) => [e.type, e.data.blockNumber ?? null, e.data.blockHash ?? null])).toEqual([
        ['chainTransferPending', Number(first.blockNumber), first.blockHash],
        ['chainTransferRemoved', Number(first.blockNumber), first.blockHash],
        ['chainTransferPending', Number(second.blockNumber), second.blockHash],
        ['newTransfer', null, null],
      ]);
      // One transfer throughout: the same ids, and the ledger moved once.
      const ids = story.map((e) => (e.type === 'newTransfer' ? e.data.id : e.data.transferId));
      expect(new Set(ids).size).toBe(1);
      expect(await balances(C)).toEqual({ [goldId]: '4' });
    } finally {
      await chain.stop();
    }
  });

  it('publishes each pending and removed event once across a crash before or after its events plan', async () => {
    const carol = node.address(7);
    const silver = await deploy('erc20');
    const silverId = chainAssetId(caip('erc20', silver));
    const holder = 'crash-test';
    const chain = indexer(holder);
    try {
      await drain(chain);
      // A crash after the chain tables' commit, before the events plan: the plan fails once.
      const store = t.app.database.store;
      const crash = vi.spyOn(store, 'apply').mockRejectedValueOnce(new Error('crash before the events plan'));
      const snapshot = await node.testClient.snapshot();
      await send(node, ERC20_PRESET, silver, 'mint', [carol, 5n]);
      await expect(drain(chain)).rejects.toThrow('crash before the events plan');
      crash.mockRestore();
      expect(await eventsOf(silverId)).toEqual([]);
      // The restart's first step publishes it.
      await drain(chain);
      expect((await eventsOf(silverId)).map((e) => e.type)).toEqual(['chainTransferPending']);

      // A crash after the events plan, before its mark (here: the lease lost in between).
      await send(node, ERC20_PRESET, silver, 'mint', [carol, 6n]);
      await chain.stop();
      const restarted = indexer(holder);
      // The rows read, then an announcement that dies after its plan committed.
      const crashAfter = vi
        .spyOn(store, 'apply')
        .mockRejectedValueOnce(new Error('crash before the events plan'));
      await expect(drain(restarted)).rejects.toThrow('crash before the events plan');
      crashAfter.mockRestore();
      await expect(
        announcePending(t.app.database, {
          chainId: HARDHAT_CHAIN_ID,
          holder: 'intruder',
          head: await node.publicClient.getBlockNumber(),
          confirmations: CONFIRMATIONS,
        }),
      ).rejects.toThrow(LeaseLost);
      expect((await eventsOf(silverId)).map((e) => [e.type, e.data.amount])).toEqual([
        ['chainTransferPending', '0.000000000000000005'],
        ['chainTransferPending', '0.000000000000000006'],
      ]);
      // The next step builds the same key: the store replays, only the mark is done.
      await drain(restarted);
      expect(await eventsOf(silverId)).toHaveLength(2);
      const records = await orm.em
        .fork()
        .getConnection()
        .execute(
          "select id from idempotency_record where id like 'chain-pending:%' or id like 'chain-removed:%'",
        );
      expect(records).toEqual([]);

      // A crash after the rollback's commit, before the removed events plan.
      await node.testClient.revert({ id: snapshot });
      await node.testClient.mine({ blocks: 3 });
      const crashRemoved = vi
        .spyOn(store, 'apply')
        .mockRejectedValueOnce(new Error('crash before the removed events plan'));
      await expect(drain(restarted)).rejects.toThrow('crash before the removed events plan');
      crashRemoved.mockRestore();
      await drain(restarted);
      expect((await eventsOf(silverId)).map((e) => [e.type, e.data.amount])).toEqual([
        ['chainTransferPending', '0.000000000000000005'],
        ['chainTransferPending', '0.000000000000000006'],
        ['chainTransferRemoved', '0.000000000000000005'],
        ['chainTransferRemoved', '0.000000000000000006'],
      ]);
      await drain(restarted);
      expect(await eventsOf(silverId)).toHaveLength(4);
      expect(await balances(carol)).toEqual({});
      await restarted.stop();
    } finally {
      await chain.stop();
    }
  });

  it('publishes no pending event with CHAIN_CONFIRMATIONS=0: a transfer is confirmed when read', async () => {
    const dave = node.address(8);
    const copper = await deploy('erc20');
    const copperId = chainAssetId(caip('erc20', copper));
    const chain = indexer('zero-confirmations', 0);
    try {
      await send(node, ERC20_PRESET, copper, 'mint', [dave, 7n]);
      await drain(chain);
      expect((await eventsOf(copperId)).map((e) => e.type)).toEqual(['newTransfer']);
      expect(await balances(dave)).toEqual({ [copperId]: '0.000000000000000007' });
    } finally {
      await chain.stop();
    }
  });
});
