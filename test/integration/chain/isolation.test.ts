// Security issue 30, findings 1 and 4, on the real app (both databases) with a real local EVM node:
// one contract's logs that the ledger cannot hold (sums past 2^256 - 1) suspend that contract only,
// with its reason in its resource, /readyz and /metrics, and admins suspend, resume and unregister
// contracts (30.1); a deep backfill runs beside the head-following contracts, which keep being read
// every step, and registration starts at the deployment block, with a bound on studios' backfills
// (30.4).
import { type Address, getAddress, type Hex, maxUint256 } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainContract, ChainHolding, Collection } from '../../../src/db/entities/index.ts';
import { DB_KINDS, type DbKind, startTestApp, type TestApp } from '../../helpers/app.ts';
import {
  deployErc721,
  deployErc1155,
  devAccount,
  ERC721_PRESET,
  ERC1155_PRESET,
  type EvmNode,
  HARDHAT_CHAIN_ID,
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

/** The longest a head-following mint may take to be indexed while a deep backfill runs. */
const LAG_BOUND_MS = 20_000;

const TRANSFER = 'ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
/**
 * A hand-made contract (raw EVM bytecode, no compiler): every call emits an ERC-20
 * `Transfer(0x0, caller, 2^256 - 1)`, a mint no real token could make twice.
 */
const FAKE_MINTER: Hex = `0x604e80600b6000396000f3${`7f${'ff'.repeat(32)}6000523360007f${TRANSFER}60206000a300`}`;

async function deployFakeMinter(): Promise<Address> {
  const wallet = node.wallet(0);
  const hash = await wallet.sendTransaction({
    data: FAKE_MINTER,
    account: wallet.account as never,
    chain: node.chain,
  } as never);
  const receipt = await node.publicClient.waitForTransactionReceipt({ hash });
  if (!receipt.contractAddress) throw new Error('no contract deployed');
  return receipt.contractAddress;
}

async function callFakeMinter(address: Address, from: number): Promise<void> {
  const wallet = node.wallet(from);
  const hash = await wallet.sendTransaction({
    to: address,
    account: wallet.account as never,
    chain: node.chain,
  } as never);
  await node.publicClient.waitForTransactionReceipt({ hash });
}

async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const held = (t: TestApp, contract: Address, holder: Address) =>
  t.app.orm.em
    .fork()
    .findOne(ChainHolding, { address: holder.toLowerCase(), contract: { address: contract.toLowerCase() } });

function metric(text: string, name: string): number {
  return Number(new RegExp(`^${name}\\{chain_id="${HARDHAT_CHAIN_ID}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
}

interface ChainApp {
  t: TestApp;
  studio: HttpUser;
  admin: HttpUser;
}

/**
 * The app indexing the node, a studio owning `collection`, and an admin. The studio controls the
 * contracts it registers (30.3): the deployer, development account 0 (their DEFAULT_ADMIN_ROLE), is its wallet.
 */
async function chainApp(
  kind: DbKind,
  collection: string,
  env: Record<string, string> = {},
): Promise<ChainApp> {
  const t = await startTestApp(kind, {
    CHAINS: `${HARDHAT_CHAIN_ID}=${node.url}`,
    CHAIN_CONFIRMATIONS: '1',
    CHAIN_POLL_MS: '50',
    CHAIN_RPC_RATE: '1000',
    ...env,
  });
  const studio = await httpUser(t, 'studio');
  await linkWalletHttp(t, studio, devAccount(0));
  const admin = await httpUser(t, 'admin');
  const created = await t.http('POST', '/api/v1/collections', {
    body: { id: collection, name: 'On-chain game' },
    headers: studio.headers,
  });
  expect(created.status).toBe(201);
  return { t, studio, admin };
}

describe.each(DB_KINDS)('30.1: one contract isolates its own failures, on %s', (kind) => {
  let t: TestApp;
  let studio: HttpUser;
  let admin: HttpUser;
  const collection = `iso-${kind}`;
  const contracts = `/api/v1/collections/${collection}/contracts`;
  beforeAll(async () => {
    ({ t, studio, admin } = await chainApp(kind, collection));
  });
  afterAll(async () => {
    await t?.close();
  });

  it('suspends the contracts whose sums pass 2^256 - 1 and goes on indexing the others', async () => {
    const register = async (address: Address, standard: string) => {
      const response = await t.http('POST', contracts, {
        body: { chainId: HARDHAT_CHAIN_ID, address, standard, fromBlock: 0 },
        headers: studio.headers,
      });
      expect(response.status).toBe(201);
      return response.body;
    };
    const honest = await deployErc721(node);
    const preset = await deployErc1155(node);
    const fake = await deployFakeMinter();
    await register(honest, 'erc721');
    await register(preset, 'erc1155');
    // The hand-made contract answers no decimals(), so registration refuses it: registered as a
    // contract whose logs changed after registration would be (the indexer trusts no registration).
    const em = t.app.orm.em.fork();
    const deployed = Number(await node.publicClient.getBlockNumber());
    em.create(ChainContract, {
      chainId: HARDHAT_CHAIN_ID,
      address: fake.toLowerCase(),
      standard: 'erc20',
      collection: em.getReference(Collection, collection),
      fromBlock: deployed,
      nextBlock: deployed,
      decimals: 0,
      createdBy: studio.userId,
      createdAt: new Date(),
    });
    await em.flush();

    // An unmodified OpenZeppelin ERC-1155 preset mints 2^256 - 1 of one id to two addresses (its
    // supply is past what the ledger holds), and the fake contract mints 2^256 - 1 twice to one.
    await send(node, ERC1155_PRESET, preset, 'mint', [node.address(5), 1n, maxUint256, '0x']);
    await send(node, ERC1155_PRESET, preset, 'mint', [node.address(6), 1n, maxUint256, '0x']);
    await callFakeMinter(fake, 7);
    await callFakeMinter(fake, 7);
    // An honest mint after them is indexed promptly, and keeps being.
    await send(node, ERC721_PRESET, honest, 'mint', [node.address(4)]);
    await node.testClient.mine({ blocks: 2 });
    await until('the honest mint indexed', 10_000, () => held(t, honest, node.address(4)));

    const listed = await until('both contracts suspended', 10_000, async () => {
      const list = await t.http('GET', contracts, { headers: studio.headers });
      expect(list.status).toBe(200);
      const suspended = list.body.data.filter((row: { status: string }) => row.status === 'suspended');
      return suspended.length === 2 && list.body.data;
    });
    const byAddress = new Map(listed.map((row: { address: string }) => [row.address, row]));
    expect(byAddress.get(getAddress(honest))).toMatchObject({ status: 'active', suspendedReason: null });
    expect(byAddress.get(getAddress(preset))).toMatchObject({
      status: 'suspended',
      suspendedReason: expect.stringMatching(/supply .* would pass 2\^256 - 1/),
    });
    expect(byAddress.get(getAddress(fake))).toMatchObject({
      status: 'suspended',
      suspendedReason: expect.stringMatching(/balance .* would pass 2\^256 - 1/),
    });

    // The indexer's view, as of its last step.
    const chain = await until('both in /readyz', 5_000, async () => {
      const ready = await t.http('GET', '/readyz');
      expect(ready.status).toBe(200);
      return ready.body.chains[0].suspendedContracts.length === 2 && ready.body.chains[0];
    });
    expect(chain.state).not.toBe('paused');
    expect(chain.suspendedContracts.map((row: { address: string }) => row.address).sort()).toEqual(
      [getAddress(preset), getAddress(fake)].sort(),
    );
    expect(chain.suspendedContracts[0].reason).toMatch(/2\^256 - 1/);
    const metrics = await t.http('GET', '/metrics');
    expect(metric(metrics.text, 'chain_contracts_suspended')).toBe(2);
    expect(metric(metrics.text, 'chain_indexer_paused')).toBe(0);
    // Handled per contract: no step failed on them (a node time-out under load may still count).
    expect(metric(metrics.text, 'chain_data_errors_total')).toBe(0);

    // Still following: a second honest mint is indexed too.
    await send(node, ERC721_PRESET, honest, 'mint', [node.address(8)]);
    await until('the second honest mint indexed', 10_000, () => held(t, honest, node.address(8)));
  });

  it('lets admins, and only admins, suspend, resume and unregister a contract', async () => {
    const list = await t.http('GET', contracts, { headers: studio.headers });
    const honest = list.body.data.find((row: { status: string }) => row.status === 'active').address;
    const fake = list.body.data.find((row: { standard: string }) => row.standard === 'erc20').address;
    const at = (address: string) => `/api/v1/chains/${HARDHAT_CHAIN_ID}/contracts/${address}`;
    const reason = { reason: 'Investigating its transfers.' };

    for (const user of [studio, await httpUser(t, 'player')]) {
      const headers = user.headers;
      expect((await t.http('POST', `${at(honest)}/suspend`, { body: reason, headers })).status).toBe(403);
      expect((await t.http('POST', `${at(fake)}/resume`, { headers })).status).toBe(403);
      expect((await t.http('DELETE', at(fake), { headers })).status).toBe(403);
    }
    expect((await t.http('POST', `${at(honest)}/suspend`, { body: reason })).status).toBe(401);
    expect((await t.http('POST', `${at(honest)}/suspend`, { body: {}, headers: admin.headers })).status).toBe(
      400,
    );
    const unknown = at('0x000000000000000000000000000000000000dEaD');
    expect((await t.http('POST', `${unknown}/resume`, { headers: admin.headers })).status).toBe(404);

    const suspended = await t.http('POST', `${at(honest)}/suspend`, { body: reason, headers: admin.headers });
    expect(suspended.status).toBe(200);
    expect(suspended.body).toMatchObject({
      status: 'suspended',
      suspendedReason: expect.stringContaining('Investigating its transfers.'),
    });
    // Suspended: a mint is not read.
    await send(node, ERC721_PRESET, honest as Address, 'mint', [node.address(9)]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await held(t, honest as Address, node.address(9))).toBeNull();
    const resumed = await t.http('POST', `${at(honest.toLowerCase())}/resume`, { headers: admin.headers });
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ status: 'active', suspendedReason: null, suspendedAt: null });
    // Resumed from where it stopped: the mint made while suspended is read.
    await until('the mint made while suspended indexed', 10_000, () =>
      held(t, honest as Address, node.address(9)),
    );

    expect((await t.http('DELETE', at(fake), { headers: admin.headers })).status).toBe(204);
    expect((await t.http('DELETE', at(fake), { headers: admin.headers })).status).toBe(404);
    const after = await t.http('GET', contracts, { headers: studio.headers });
    expect(after.body.data.map((row: { address: string }) => row.address)).not.toContain(fake);
    expect(await held(t, fake as Address, node.address(7))).toBeNull();
    await until('the unregistered contract gone from /readyz', 5_000, async () => {
      const ready = await t.http('GET', '/readyz');
      return ready.body.chains[0].suspendedContracts.length === 1;
    });
  });
});

describe.each(DB_KINDS)(
  '30.4: a deep backfill does not hold the head-following contracts up, on %s',
  (kind) => {
    let t: TestApp;
    let studio: HttpUser;
    let admin: HttpUser;
    const collection = `backfill-${kind}`;
    const contracts = `/api/v1/collections/${collection}/contracts`;
    beforeAll(async () => {
      ({ t, studio, admin } = await chainApp(kind, collection, { CHAIN_MAX_BACKFILL_BLOCKS: '5' }));
    });
    afterAll(async () => {
      await t?.close();
    });

    it('starts at the deployment block (binary search on eth_getCode), deep backfills by admins only', async () => {
      const address = await deployErc721(node, 'Helms', 'HLM');
      const deployedAt = Number(await node.publicClient.getBlockNumber());
      // Ten real blocks on top (mints of another contract), past the bound of 5.
      const other = await deployErc721(node, 'Rings', 'RNG');
      for (let i = 0; i < 10; i++) await send(node, ERC721_PRESET, other, 'mint', [node.address(2)]);
      const body = { chainId: HARDHAT_CHAIN_ID, address, standard: 'erc721', fromBlock: 0 };
      const deep = await t.http('POST', contracts, { body, headers: studio.headers });
      // The studio controls the contract (no contract-not-controlled): refused for the backfill's depth.
      expect([deep.status, deep.body.type]).toEqual([403, '/problems/forbidden']);
      expect(deep.body.detail).toMatch(/backfill of 1[01] blocks/);
      const late = await t.http('POST', contracts, {
        body: { ...body, fromBlock: deployedAt + 1 },
        headers: admin.headers,
      });
      expect(late.status).toBe(400);
      expect(late.body.detail).toContain(`deployed in block ${deployedAt}`);
      // fromBlock 0 is raised to the deployment block.
      const approved = await t.http('POST', contracts, { body, headers: admin.headers });
      expect(approved.status).toBe(201);
      expect(approved.body.fromBlock).toBe(deployedAt);
      const shallow = await t.http('POST', contracts, {
        body: { ...body, address: await deployErc721(node, 'Boots', 'BTS') },
        headers: studio.headers,
      });
      expect(shallow.status).toBe(201);
      expect(shallow.body.fromBlock).toBe(Number(await node.publicClient.getBlockNumber()));
    });

    it('reads a head-following contract every step while a 200,000-block backfill runs', async () => {
      // An old contract, deployed and minted, then 200,000 blocks.
      const old = await deployErc721(node, 'Relics', 'RLC');
      const deployedAt = Number(await node.publicClient.getBlockNumber());
      await send(node, ERC721_PRESET, old, 'mint', [node.address(3)]);
      await node.testClient.mine({ blocks: 200_000 });
      const current = await deployErc721(node, 'Shields', 'SHD');
      const following = await t.http('POST', contracts, {
        body: { chainId: HARDHAT_CHAIN_ID, address: current, standard: 'erc721', fromBlock: 0 },
        headers: studio.headers,
      });
      expect(following.status).toBe(201);
      // The old contract from its deployment, 200,000 blocks back. Written directly: Hardhat's
      // hardhat_mine blocks are mined lazily and answer eth_getCode inside them with no code, so the
      // registration's deployment search cannot see across them (it is tested on real blocks above).
      const em = t.app.orm.em.fork();
      em.create(ChainContract, {
        chainId: HARDHAT_CHAIN_ID,
        address: old.toLowerCase(),
        standard: 'erc721',
        collection: em.getReference(Collection, collection),
        fromBlock: deployedAt,
        nextBlock: deployedAt,
        createdBy: admin.userId,
        createdAt: new Date(),
      });
      await em.flush();
      // Written behind the indexer's back: it picks the contract up at its next reading of the list.
      await until('the indexer backfilling the old contract', 10_000, async () => {
        const ready = await t.http('GET', '/readyz');
        return ready.body.chains[0].state === 'backfilling';
      });

      // While the backfill runs, each new mint on the head-following contract is indexed, and the old
      // contract is still backfilling after it: the head did not wait for the backfill (which takes
      // 60-80 s here). A mint usually takes well under a second; the bound of 20 s leaves room for the
      // whole suite beside this test on a slow machine (one took over 5 s in a CI run).
      const lags: number[] = [];
      for (let i = 0; i < 5; i++) {
        const started = Date.now();
        await send(node, ERC721_PRESET, current, 'mint', [node.address(10 + i)]);
        await until(`mint ${i} indexed`, LAG_BOUND_MS, () => held(t, current, node.address(10 + i)));
        lags.push(Date.now() - started);
        const ready = await t.http('GET', '/readyz');
        // The old contract, and the previous test's, 200,000 blocks behind since those were mined.
        expect(ready.body.chains[0].state).toBe('backfilling');
        expect(ready.body.chains[0].backfillingContracts).toBeGreaterThanOrEqual(1);
      }
      const metrics = await t.http('GET', '/metrics');
      expect(metric(metrics.text, 'chain_contracts_backfilling')).toBeGreaterThanOrEqual(1);
      expect(Math.max(...lags)).toBeLessThan(LAG_BOUND_MS);
      // The backfill gets there too: the old contract's first mint, 200,000 blocks back, and one at the head.
      await until('the backfilled mint indexed', 10_000, () => held(t, old, node.address(3)));
      await send(node, ERC721_PRESET, old, 'mint', [node.address(16)]);
      await until('the backfill caught up', 240_000, () => held(t, old, node.address(16)));
    }, 300_000);
  },
);
