// The chain indexer against a real local node (Hardhat 3) on SQLite and PostgreSQL: registration
// checks, every standard (mints, transfers, burns, ERC-1155 batches), confirmations, reorgs that
// remove and replace a transfer, a crash mid-backfill, two indexers on one database, and a node that
// errors or times out. Driven step by step (`indexer.step()`) except where the loop itself is tested.

import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { type Address, getAddress, zeroAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contractView, listContracts, registerContract } from '../../../src/chain/contracts.ts';
import { ChainIndexer } from '../../../src/chain/indexer.ts';
import { ChainRpc } from '../../../src/chain/rpc.ts';
import type { ChainSettings } from '../../../src/config/index.ts';
import { ChainContract, ChainHolding, ChainTransfer, Collection } from '../../../src/db/entities/index.ts';
import type { Orm } from '../../../src/db/orm.ts';
import { AppError } from '../../../src/domain/errors.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  deployErc20,
  deployErc721,
  deployErc1155,
  ERC20_PRESET,
  ERC721_PRESET,
  ERC1155_PRESET,
  type EvmNode,
  freePort,
  HARDHAT_CHAIN_ID,
  send,
  startEvmNode,
} from '../../helpers/evm-node.ts';
import {
  createUser,
  type LedgerFixture,
  linkWallet,
  openLedger,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';

const logger = createLogger('silent');
const CONFIRMATIONS = 2;

function settings(overrides: Partial<ChainSettings> = {}): ChainSettings {
  return {
    chains: [],
    rpcRate: 1000,
    maxBlockRange: 50,
    pollMs: 20,
    rpcTimeoutMs: 2000,
    indexer: true,
    ...overrides,
  };
}

let node: EvmNode;
beforeAll(async () => {
  node = await startEvmNode();
});
afterAll(async () => {
  await node?.stop();
});

/** Steps until the indexer has nothing more to read (bounded). */
async function drain(indexer: ChainIndexer, maxSteps = 200): Promise<void> {
  for (let i = 0; i < maxSteps; i++) {
    if ((await indexer.step()) !== 'progress') return;
  }
  throw new Error('indexer did not catch up');
}

async function holdings(orm: Orm, contract: Address): Promise<Record<string, string>> {
  const rows = await orm.em.fork().find(ChainHolding, { contract: { address: contract.toLowerCase() } });
  return Object.fromEntries(rows.map((row) => [`${row.address}:${row.tokenId}`, row.balance.toString()]));
}

async function transfers(orm: Orm, contract: Address): Promise<ChainTransfer[]> {
  return orm.em
    .fork()
    .find(
      ChainTransfer,
      { contract: { address: contract.toLowerCase() } },
      { orderBy: { blockNumber: 'asc', logIndex: 'asc', batchIndex: 'asc' } },
    );
}

describe.each(DB_KINDS)('chain indexer on %s', (kind) => {
  let fixture: LedgerFixture;
  let studio: TestUser;
  let collection: string;
  let rpcs: Map<number, ChainRpc>;
  const endpoint = () => ({ chainId: HARDHAT_CHAIN_ID, rpcUrl: node.url, confirmations: CONFIRMATIONS });
  const a = (i: number) => node.address(i).toLowerCase();

  beforeAll(async () => {
    fixture = await openLedger(kind);
    studio = await createUser(fixture, 'studio');
    // The studio controls the contracts it registers: the deployer (their DEFAULT_ADMIN_ROLE) is its wallet.
    await linkWallet(fixture, studio.userId, node.address(0));
    collection = `chain-${randomBytes(3).toString('hex')}`;
    const em = fixture.orm.em.fork();
    em.create(Collection, {
      id: collection,
      name: 'Chain game',
      owner: studio.userId,
      createdAt: new Date(),
    });
    await em.flush();
    rpcs = new Map([[HARDHAT_CHAIN_ID, new ChainRpc(endpoint(), settings())]]);
  });
  afterAll(async () => {
    for (const rpc of rpcs?.values() ?? []) await rpc.close();
    await fixture?.close();
  });

  async function register(address: Address, standard: 'erc20' | 'erc721' | 'erc1155', fromBlock?: number) {
    const block = fromBlock ?? Number(await node.publicClient.getBlockNumber());
    return registerContract(fixture.database, rpcs, studio, {
      collectionId: collection,
      chainId: HARDHAT_CHAIN_ID,
      address,
      standard,
      fromBlock: block,
    });
  }

  /** A fresh indexer that only sees contracts registered from now on (earlier ones are removed). */
  async function isolated(): Promise<void> {
    const em = fixture.orm.em.fork();
    await em.nativeDelete(ChainTransfer, {});
    await em.nativeDelete(ChainHolding, {});
    await em.getConnection().execute('delete from chain_asset');
    await em.nativeDelete(ChainContract, {});
    await em.getConnection().execute('delete from chain_block');
    await em.getConnection().execute('delete from chain_lease');
  }

  it('registers contracts after checking checksum, owner, code, standard (ERC-165) and deployment block', async () => {
    await isolated();
    const deployBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const erc20 = await deployErc20(node, 'Gold', 'GLD');
    const erc721 = await deployErc721(node);
    const erc1155 = await deployErc1155(node);

    const gold = await register(erc20, 'erc20', deployBlock);
    expect(gold).toMatchObject({
      chainId: HARDHAT_CHAIN_ID,
      address: getAddress(erc20),
      standard: 'erc20',
      decimals: 18,
      symbol: 'GLD',
      name: 'Gold',
      collection,
      fromBlock: deployBlock,
    });
    expect(gold.caip19).toBe(`eip155:${HARDHAT_CHAIN_ID}/erc20:${getAddress(erc20)}`);
    expect((await register(erc721, 'erc721', deployBlock)).symbol).toBe('SWD');
    expect((await register(erc1155, 'erc1155', deployBlock)).decimals).toBeNull();
    expect((await listContracts(fixture.orm, collection)).map((c) => c.standard)).toEqual([
      'erc20',
      'erc721',
      'erc1155',
    ]);

    const problem = async (promise: Promise<unknown>) => {
      try {
        await promise;
      } catch (error) {
        expect(error).toBeInstanceOf(AppError);
        return { status: (error as AppError).status, type: (error as AppError).type };
      }
      throw new Error('expected a problem');
    };
    expect(await problem(register(erc20, 'erc20', deployBlock))).toEqual({
      status: 409,
      type: '/problems/contract-exists',
    });
    const other = await deployErc721(node);
    expect(await problem(register(other, 'erc1155', deployBlock))).toEqual({
      status: 422,
      type: '/problems/contract-standard-mismatch',
    });
    const coin = await deployErc20(node);
    expect(await problem(register(coin, 'erc721', deployBlock))).toEqual({
      status: 422,
      type: '/problems/contract-standard-mismatch',
    });
    expect(await problem(register(other, 'erc20', deployBlock))).toEqual({
      status: 422,
      type: '/problems/contract-standard-mismatch',
    });
    // A wrong EIP-55 checksum: flip the case of the first letter in the checksummed form.
    const checksummed = getAddress(coin);
    const index = checksummed.slice(2).search(/[a-fA-F]/) + 2;
    const flipped = `${checksummed.slice(0, index)}${checksummed[index] === checksummed[index]?.toUpperCase() ? checksummed[index]?.toLowerCase() : checksummed[index]?.toUpperCase()}${checksummed.slice(index + 1)}`;
    expect(await problem(register(flipped as Address, 'erc20', deployBlock))).toEqual({
      status: 400,
      type: '/problems/invalid-address-checksum',
    });
    expect(await problem(register(zeroAddress, 'erc20', deployBlock))).toEqual({
      status: 422,
      type: '/problems/contract-not-found',
    });
    // fromBlock after the deployment: earlier transfers would be missing from the holdings.
    await node.testClient.mine({ blocks: 1 });
    expect(await problem(register(coin, 'erc20', Number(await node.publicClient.getBlockNumber())))).toEqual({
      status: 400,
      type: '/problems/validation-failed',
    });
    expect(
      await problem(
        registerContract(fixture.database, rpcs, studio, {
          collectionId: collection,
          chainId: 1,
          address: coin,
          standard: 'erc20',
          fromBlock: 0,
        }),
      ),
    ).toEqual({ status: 400, type: '/problems/chain-not-configured' });
    const dead = new Map([
      [
        HARDHAT_CHAIN_ID,
        new ChainRpc(
          { chainId: HARDHAT_CHAIN_ID, rpcUrl: `http://127.0.0.1:${await freePort()}`, confirmations: 2 },
          settings({ rpcTimeoutMs: 300 }),
        ),
      ],
    ]);
    expect(
      await problem(
        registerContract(fixture.database, dead, studio, {
          collectionId: collection,
          chainId: HARDHAT_CHAIN_ID,
          address: coin,
          standard: 'erc20',
          fromBlock: 0,
        }),
      ),
    ).toEqual({ status: 503, type: '/problems/chain-unavailable' });
    const player = await createUser(fixture, 'player');
    expect(
      await problem(
        registerContract(fixture.database, rpcs, player, {
          collectionId: collection,
          chainId: HARDHAT_CHAIN_ID,
          address: coin,
          standard: 'erc20',
          fromBlock: 0,
        }),
      ),
    ).toEqual({ status: 403, type: '/problems/forbidden' });
    expect(await fixture.orm.em.fork().count(ChainContract, {})).toBe(3);
  });

  it('indexes every standard: mints, transfers, burns and ERC-1155 batches, confirmed after 2 blocks', async () => {
    await isolated();
    const from = Number(await node.publicClient.getBlockNumber()) + 1;
    const erc20 = await deployErc20(node);
    const erc721 = await deployErc721(node);
    const erc1155 = await deployErc1155(node);
    for (const [address, standard] of [
      [erc20, 'erc20'],
      [erc721, 'erc721'],
      [erc1155, 'erc1155'],
    ] as const) {
      await register(address, standard, from);
    }
    const [A, B, C] = [node.address(0), node.address(1), node.address(2)];
    await send(node, ERC20_PRESET, erc20, 'mint', [B, 1000n]);
    await send(node, ERC20_PRESET, erc20, 'transfer', [C, 300n], 1);
    await send(node, ERC20_PRESET, erc20, 'burn', [100n], 2);
    await send(node, ERC721_PRESET, erc721, 'mint', [B]); // token 0
    await send(node, ERC721_PRESET, erc721, 'mint', [B]); // token 1
    await send(node, ERC721_PRESET, erc721, 'transferFrom', [B, C, 1n], 1);
    await send(node, ERC721_PRESET, erc721, 'burn', [0n], 1);
    await send(node, ERC1155_PRESET, erc1155, 'mintBatch', [B, [1n, 2n, 3n], [10n, 20n, 30n], '0x']);
    await send(node, ERC1155_PRESET, erc1155, 'safeBatchTransferFrom', [B, C, [1n, 3n], [4n, 30n], '0x'], 1);
    await send(node, ERC1155_PRESET, erc1155, 'safeTransferFrom', [B, A, 2n, 5n, '0x'], 1);
    await send(node, ERC1155_PRESET, erc1155, 'burn', [C, 1n, 4n], 2);

    const indexer = new ChainIndexer(fixture.database, endpoint(), settings({ maxBlockRange: 4 }), logger);
    await drain(indexer);
    expect(await holdings(fixture.orm, erc20)).toEqual({ [`${a(1)}:`]: '700', [`${a(2)}:`]: '200' });
    expect(await holdings(fixture.orm, erc721)).toEqual({ [`${a(2)}:1`]: '1' });
    expect(await holdings(fixture.orm, erc1155)).toEqual({
      [`${a(1)}:1`]: '6',
      [`${a(1)}:2`]: '15',
      [`${a(0)}:2`]: '5',
      [`${a(2)}:3`]: '30',
    });
    const erc1155Transfers = await transfers(fixture.orm, erc1155);
    expect(erc1155Transfers.map((t) => [t.from, t.to, t.tokenId, t.amount.toString(), t.batchIndex])).toEqual(
      [
        [zeroAddress, a(1), '1', '10', 0],
        [zeroAddress, a(1), '2', '20', 1],
        [zeroAddress, a(1), '3', '30', 2],
        [a(1), a(2), '1', '4', 0],
        [a(1), a(2), '3', '30', 1],
        [a(1), a(0), '2', '5', 0],
        [a(2), zeroAddress, '1', '4', 0],
      ],
    );
    expect((await transfers(fixture.orm, erc721)).map((t) => [t.from, t.to, t.tokenId])).toEqual([
      [zeroAddress, a(1), '0'],
      [zeroAddress, a(1), '1'],
      [a(1), a(2), '1'],
      [a(1), zeroAddress, '0'],
    ]);
    // The last two blocks lack their confirmations; two more blocks confirm them.
    const head = await node.publicClient.getBlockNumber();
    const pending = erc1155Transfers.filter((t) => t.status === 'pending');
    expect(pending.every((t) => BigInt(t.blockNumber) > head - BigInt(CONFIRMATIONS))).toBe(true);
    expect(pending.length).toBeGreaterThan(0);
    const confirmedNow: ChainTransfer[] = [];
    const hooked = new ChainIndexer(fixture.database, endpoint(), settings(), logger, {
      hooks: { confirmed: (rows) => confirmedNow.push(...rows) },
    });
    await indexer.stop();
    await node.testClient.mine({ blocks: CONFIRMATIONS });
    await drain(hooked);
    expect(confirmedNow.map((t) => t.id).sort()).toEqual(pending.map((t) => t.id).sort());
    expect((await transfers(fixture.orm, erc1155)).every((t) => t.status === 'confirmed')).toBe(true);
    const status = hooked.status();
    expect(status).toMatchObject({ chainId: HARDHAT_CHAIN_ID, state: 'following', lag: 0n });
    await hooked.stop();
  });

  it('rolls back a reorg that removes a transfer, and one that replaces it', async () => {
    await isolated();
    const from = Number(await node.publicClient.getBlockNumber()) + 1;
    const erc20 = await deployErc20(node);
    await register(erc20, 'erc20', from);
    const [B, C, D] = [node.address(1), node.address(2), node.address(3)];
    await send(node, ERC20_PRESET, erc20, 'mint', [B, 100n]);
    await node.testClient.mine({ blocks: CONFIRMATIONS });
    const removedNow: ChainTransfer[] = [];
    const indexer = new ChainIndexer(fixture.database, endpoint(), settings(), logger, {
      hooks: { removed: (rows) => removedNow.push(...rows) },
    });
    await drain(indexer);

    // Removed: B -> C is mined and indexed, then the chain goes back and mines empty blocks instead.
    const snapshot = await node.testClient.snapshot();
    await send(node, ERC20_PRESET, erc20, 'transfer', [C, 40n], 1);
    await drain(indexer);
    expect(await holdings(fixture.orm, erc20)).toEqual({ [`${a(1)}:`]: '60', [`${a(2)}:`]: '40' });
    await node.testClient.revert({ id: snapshot });
    await node.testClient.mine({ blocks: 3 });
    await drain(indexer);
    expect(await holdings(fixture.orm, erc20)).toEqual({ [`${a(1)}:`]: '100' });
    expect((await transfers(fixture.orm, erc20)).map((t) => t.to)).toEqual([a(1)]);
    expect(removedNow.map((t) => [t.to, t.amount.toString()])).toEqual([[a(2), '40']]);
    expect(indexer.status().reorgs).toBe(1);

    // Replaced: B -> C is indexed, then a branch where B -> D happens instead, in the same block height.
    const snapshot2 = await node.testClient.snapshot();
    const first = await send(node, ERC20_PRESET, erc20, 'transfer', [C, 25n], 1);
    await drain(indexer);
    await node.testClient.revert({ id: snapshot2 });
    const second = await send(node, ERC20_PRESET, erc20, 'transfer', [D, 30n], 1);
    expect(second).toBe(first);
    await node.testClient.mine({ blocks: 1 });
    await drain(indexer);
    expect(await holdings(fixture.orm, erc20)).toEqual({ [`${a(1)}:`]: '70', [`${a(3)}:`]: '30' });
    const rows = await transfers(fixture.orm, erc20);
    expect(rows.map((t) => [t.to, t.amount.toString()])).toEqual([
      [a(1), '100'],
      [a(3), '30'],
    ]);
    const block = await node.publicClient.getBlock({ blockNumber: second });
    expect(rows[1]?.blockHash).toBe(block.hash);
    await indexer.stop();
  });

  it('resumes after a crash mid-backfill from its checkpoint: no transfer lost or counted twice', async () => {
    await isolated();
    const from = Number(await node.publicClient.getBlockNumber()) + 1;
    const erc20 = await deployErc20(node);
    await register(erc20, 'erc20', from);
    const B = node.address(1);
    for (let i = 1; i <= 12; i++) await send(node, ERC20_PRESET, erc20, 'mint', [B, BigInt(i)]);
    // One block per request and one request per step (no backfill budget beyond its first range):
    // the first indexer applies a few ranges, then "crashes" (its lease is neither released nor
    // renewed; a second instance takes over once it expires).
    const first = new ChainIndexer(fixture.database, endpoint(), settings({ maxBlockRange: 1 }), logger, {
      holder: 'crashed',
      leaseMs: 2000,
      backfillBudgetMs: 0,
    });
    for (let i = 0; i < 5; i++) await first.step();
    const partial = await transfers(fixture.orm, erc20);
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.length).toBeLessThan(12);
    const second = new ChainIndexer(fixture.database, endpoint(), settings({ maxBlockRange: 3 }), logger, {
      holder: 'successor',
      leaseMs: 2000,
    });
    expect(await second.step()).toBe('standby');
    await new Promise((resolve) => setTimeout(resolve, 2100));
    await drain(second);
    // The crashed one comes back: it has lost the lease and writes nothing.
    expect(await first.step()).toBe('standby');
    const all = await transfers(fixture.orm, erc20);
    expect(all.map((t) => t.amount.toString())).toEqual(Array.from({ length: 12 }, (_, i) => String(i + 1)));
    expect(await holdings(fixture.orm, erc20)).toEqual({ [`${a(1)}:`]: String((12 * 13) / 2) });
    await second.stop();
    await first.stop({ release: false });
  });

  it('runs one indexer per deployment: a second instance stands by and takes over when the first stops', async () => {
    await isolated();
    const one = new ChainIndexer(fixture.database, endpoint(), settings(), logger, { holder: 'one' });
    const two = new ChainIndexer(fixture.database, endpoint(), settings(), logger, { holder: 'two' });
    expect(await one.step()).not.toBe('standby');
    expect(await two.step()).toBe('standby');
    expect(two.status().state).toBe('standby');
    await one.stop(); // releases the lease
    expect(await two.step()).not.toBe('standby');
    await two.stop();
  });

  it('pauses while the node errors or times out, and resumes where it stopped', async () => {
    await isolated();
    const from = Number(await node.publicClient.getBlockNumber()) + 1;
    const erc20 = await deployErc20(node);
    await register(erc20, 'erc20', from);
    // A proxy in front of the node that answers normally, with 503, or not at all.
    let mode: 'pass' | 'error' | 'hang' = 'pass';
    const proxy: Server = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      if (mode === 'error') {
        response.writeHead(503).end('unavailable');
        return;
      }
      if (mode === 'hang') return; // never answers; the client's time-out ends it
      const upstream = await fetch(node.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      });
      response.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
    });
    const port = await freePort();
    await new Promise<void>((resolve) => proxy.listen(port, '127.0.0.1', resolve));
    const indexer = new ChainIndexer(
      fixture.database,
      { chainId: HARDHAT_CHAIN_ID, rpcUrl: `http://127.0.0.1:${port}`, confirmations: CONFIRMATIONS },
      settings({ rpcTimeoutMs: 300, pollMs: 20 }),
      logger,
    );
    const until = async (check: () => boolean | Promise<boolean>, ms = 10_000) => {
      const deadline = Date.now() + ms;
      while (!(await check())) {
        if (Date.now() > deadline)
          throw new Error(
            `timed out; status ${JSON.stringify(indexer.status(), (_, v) => (typeof v === 'bigint' ? v.toString() : v))}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    try {
      indexer.start();
      await send(node, ERC20_PRESET, erc20, 'mint', [node.address(1), 5n]);
      await until(async () => (await holdings(fixture.orm, erc20))[`${a(1)}:`] === '5');
      for (const failure of ['error', 'hang'] as const) {
        mode = failure;
        await until(() => indexer.status().state === 'paused');
        expect(indexer.status().lastError).toBeTruthy();
        await send(node, ERC20_PRESET, erc20, 'mint', [node.address(1), 5n]);
        mode = 'pass';
        const expected = failure === 'error' ? '10' : '15';
        await until(async () => (await holdings(fixture.orm, erc20))[`${a(1)}:`] === expected);
        await until(() => indexer.status().state === 'following');
      }
      expect(indexer.status().rpcErrors).toBeGreaterThanOrEqual(2);
      expect((await transfers(fixture.orm, erc20)).length).toBe(3);
    } finally {
      await indexer.stop();
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('shows a registered contract in its view with EIP-55 address', async () => {
    const rows = await fixture.orm.em.fork().find(ChainContract, {}, { populate: ['collection'] });
    for (const row of rows) expect(contractView(row).address).toBe(getAddress(row.address));
  });
});
