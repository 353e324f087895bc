// The token metadata fetcher (src/chain/metadata.ts) against a real local node and a local HTTP
// server (loopback allowed by configuration, as a deployment would allow a private network): an
// ERC-721's tokenURI and an ERC-1155's uri with `{id}` are read in the background, a 5xx is retried,
// an oversized or refused document fails without holding indexing up, and the asset the projection
// creates afterwards carries what was fetched. The pure parts (URI forms, the document's mapping)
// are checked without a node.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerContract } from '../../../src/chain/contracts.ts';
import { ChainIndexer } from '../../../src/chain/indexer.ts';
import {
  assetMetadataOf,
  MetadataFetcher,
  MetadataRefused,
  metadataSource,
  substituteId,
} from '../../../src/chain/metadata.ts';
import { ChainRpc } from '../../../src/chain/rpc.ts';
import type { ChainMetadataSettings, ChainSettings } from '../../../src/config/index.ts';
import { ChainAsset, ChainContract, Collection, OutboxEvent } from '../../../src/db/entities/index.ts';
import { chainAssetId } from '../../../src/domain/ledger/chain-assets.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  deployErc721,
  deployErc1155,
  ERC721_PRESET,
  ERC1155_PRESET,
  type EvmNode,
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

describe('token URIs and documents', () => {
  it('substitutes {id} as 64 hex digits and reads data:, ipfs:// and https URIs', () => {
    expect(substituteId('https://m.example/{id}.json', '255')).toBe(
      `https://m.example/${'0'.repeat(62)}ff.json`,
    );
    expect(metadataSource('ipfs://bafyabc/1.json', 'https://gw.example')).toEqual({
      url: 'https://gw.example/ipfs/bafyabc/1.json',
    });
    expect(metadataSource('ipfs://ipfs/bafyabc', 'https://gw.example')).toEqual({
      url: 'https://gw.example/ipfs/bafyabc',
    });
    const inline = Buffer.from(JSON.stringify({ name: 'Inline' })).toString('base64');
    expect(metadataSource(`data:application/json;base64,${inline}`, 'https://gw.example')).toEqual({
      inline: { name: 'Inline' },
    });
    expect(() => metadataSource('file:///etc/passwd', 'https://gw.example')).toThrow(MetadataRefused);
    expect(() => metadataSource('data:text/html,<b>x</b>', 'https://gw.example')).toThrow(MetadataRefused);
  });

  it('30.11: refuses dot segments in ipfs:// URIs, plain or percent-encoded', () => {
    for (const uri of [
      'ipfs://QmX/../../api/v0/config',
      'ipfs://QmX/./a/../../b',
      'ipfs://QmX/%2e%2e/%2E%2E/api/v0/config',
      'ipfs://QmX/..%2f..%2fapi',
      'ipfs://QmX/a\\..\\..\\api',
      'ipfs://../api/v0/config',
      'ipfs://QmX/%zz',
    ]) {
      expect(() => metadataSource(uri, 'https://gw.example'), uri).toThrow(MetadataRefused);
    }
    expect(metadataSource('ipfs://QmX/a..b/1.json', 'https://gw.example')).toEqual({
      url: 'https://gw.example/ipfs/QmX/a..b/1.json',
    });
  });

  it('keeps only what the asset contract allows', () => {
    expect(
      assetMetadataOf(
        {
          name: ' Blade ',
          image: 'javascript:alert(1)',
          attributes: [{ trait_type: 'power', value: 9 }, { trait_type: '', value: 1 }, { value: 2 }, 'x'],
        },
        'Swords',
      ),
    ).toEqual({ name: 'Blade', attributes: [{ trait_type: 'power', value: 9 }], creator: 'Swords' });
  });
});

let node: EvmNode;
let server: Server;
let base: string;
const hits = new Map<string, number>();
beforeAll(async () => {
  node = await startEvmNode();
  server = createServer((req, res) => {
    const path = req.url ?? '';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path === '/swords/0') {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          name: 'Blade of Dawn',
          image: 'https://cdn.example/blade.png',
          attributes: [{ trait_type: 'power', value: 9 }],
        }),
      );
    } else if (path === '/swords/1') {
      // One failure first: the fetcher tries again.
      if ((hits.get(path) ?? 0) % 2 === 1) {
        res.statusCode = 503;
        res.end('busy');
        return;
      }
      res.end(JSON.stringify({ name: 'Second blade', image: 'ipfs://bafyblade/2.png', attributes: [] }));
    } else if (path === '/swords/2') {
      res.end(JSON.stringify({ name: 'x'.repeat(10_000) })); // over the size limit
    } else if (path.startsWith('/many/')) {
      res.end(JSON.stringify({ name: 'One of many', attributes: [] }));
    } else if (path === '/api/v0/config' || path === '/ipfs/QmGame/items/1.json') {
      // An IPFS gateway's own API beside the content it serves: only the latter may be reached.
      res.end(JSON.stringify({ name: path === '/api/v0/config' ? 'Gateway config' : 'Gateway item' }));
    } else if (path === `/items/${BigInt(7).toString(16).padStart(64, '0')}.json`) {
      res.end(JSON.stringify({ name: 'Potion', image: 'https://cdn.example/potion.png', attributes: [] }));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await node?.stop();
  await new Promise((resolve) => server?.close(resolve));
});

const metadataSettings = (overrides: Partial<ChainMetadataSettings> = {}): ChainMetadataSettings => ({
  ipfsGateway: 'https://gw.example',
  allowLoopback: true,
  allowedNetworks: [],
  timeoutMs: 2000,
  maxBytes: 4096,
  ...overrides,
});

describe.each(DB_KINDS)('chain metadata fetcher on %s', (kind) => {
  let fixture: LedgerFixture;
  let studio: TestUser;
  let collection: string;
  let rpcs: Map<number, ChainRpc>;
  const endpoint = () => ({ chainId: HARDHAT_CHAIN_ID, rpcUrl: node.url, confirmations: 2 });
  const settings = (metadata: ChainMetadataSettings): ChainSettings => ({
    chains: [],
    rpcRate: 1000,
    maxBlockRange: 500,
    pollMs: 20,
    rpcTimeoutMs: 2000,
    indexer: true,
    metadata,
  });

  beforeAll(async () => {
    fixture = await openLedger(kind);
    studio = await createUser(fixture, 'studio');
    // The studio controls the contracts it registers: the deployer (their DEFAULT_ADMIN_ROLE) is its wallet.
    await linkWallet(fixture, studio.userId, node.address(0));
    collection = `meta-${randomBytes(3).toString('hex')}`;
    const em = fixture.orm.em.fork();
    em.create(Collection, { id: collection, name: 'Meta game', owner: studio.userId, createdAt: new Date() });
    await em.flush();
    rpcs = new Map([[HARDHAT_CHAIN_ID, new ChainRpc(endpoint(), settings(metadataSettings()))]]);
  });
  afterAll(async () => {
    for (const rpc of rpcs?.values() ?? []) await rpc.close();
    await fixture?.close();
  });

  async function drain(indexer: ChainIndexer): Promise<void> {
    for (let i = 0; i < 100 && (await indexer.step()) === 'progress'; i++);
  }

  it('fetches tokenURI and uri({id}) in the background; the created assets carry the metadata', async () => {
    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const swords = await deployErc721(node, 'Swords', 'SWD', `${base}/swords/`);
    const items = await deployErc1155(node, `${base}/items/{id}.json`);
    for (const [address, standard] of [
      [swords, 'erc721'],
      [items, 'erc1155'],
    ] as const) {
      await registerContract(fixture.database, rpcs, studio, {
        collectionId: collection,
        chainId: HARDHAT_CHAIN_ID,
        address,
        standard,
        fromBlock,
      });
    }
    const owner = node.address(8);
    const retriedBefore = hits.get('/swords/1') ?? 0;
    for (let i = 0; i < 3; i++) await send(node, ERC721_PRESET, swords, 'mint', [owner]);
    await send(node, ERC1155_PRESET, items, 'mint', [owner, 7n, 2n, '0x']);
    // Read while unconfirmed (50 confirmations): the fetches start, indexing goes on without them.
    const reader = new ChainIndexer(
      fixture.database,
      { ...endpoint(), confirmations: 50 },
      settings(metadataSettings()),
      createLogger('silent'),
    );
    await drain(reader);
    await reader.metadata?.settled();
    await reader.stop();
    const indexer = new ChainIndexer(
      fixture.database,
      endpoint(),
      settings(metadataSettings()),
      createLogger('silent'),
      {
        tokenImage: 'https://placeholder.example/token.svg',
      },
    );
    try {
      const id = (standard: string, address: string, token: string) =>
        chainAssetId(`eip155:${HARDHAT_CHAIN_ID}/${standard}:${getAddress(address)}/${token}`);
      const rows = new Map(
        (await fixture.orm.em.fork().find(ChainAsset, {})).map((row) => [row.assetId, row] as const),
      );
      expect(rows.get(id('erc721', swords, '0'))).toMatchObject({ metadataStatus: 'fetched' });
      expect(rows.get(id('erc721', swords, '1'))).toMatchObject({ metadataStatus: 'fetched' });
      expect(hits.get('/swords/1')).toBe(retriedBefore + 2); // a 503, then the answer
      expect(rows.get(id('erc721', swords, '2'))).toMatchObject({ metadataStatus: 'failed', metadata: null });
      expect(rows.get(id('erc721', swords, '2'))?.metadataError).toMatch(/over 4096/);
      expect(rows.get(id('erc1155', items, '7'))).toMatchObject({ metadataStatus: 'fetched' });

      // Confirmed: the projection creates the assets with what was fetched.
      await node.testClient.mine({ blocks: 2 });
      await drain(indexer);
      const assets = fixture.ledger.assets;
      const blade = await assets.get(id('erc721', swords, '0'));
      expect(blade).toMatchObject({
        name: 'Blade of Dawn',
        metadata: { image: 'https://cdn.example/blade.png', attributes: [{ trait_type: 'power', value: 9 }] },
        owner,
      });
      expect((await assets.get(id('erc721', swords, '1'))).metadata.image).toBe('ipfs://bafyblade/2.png');
      const plain = await assets.get(id('erc721', swords, '2'));
      expect(plain).toMatchObject({
        name: 'Swords #2',
        metadata: { image: 'https://placeholder.example/token.svg' },
      });
      expect((await assets.get(id('erc1155', items, '7'))).name).toBe('Potion');
    } finally {
      await indexer.stop();
    }
  });

  it('refuses a loopback metadata host unless configured, and indexing goes on', async () => {
    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const swords = await deployErc721(node, 'Closed', 'CLS', `${base}/swords/`);
    await registerContract(fixture.database, rpcs, studio, {
      collectionId: collection,
      chainId: HARDHAT_CHAIN_ID,
      address: swords,
      standard: 'erc721',
      fromBlock,
    });
    await send(node, ERC721_PRESET, swords, 'mint', [node.address(9)]);
    await node.testClient.mine({ blocks: 2 });
    const before = hits.get('/swords/0') ?? 0;
    const indexer = new ChainIndexer(
      fixture.database,
      endpoint(),
      settings(metadataSettings({ allowLoopback: false })),
      createLogger('silent'),
    );
    try {
      await drain(indexer);
      await indexer.metadata?.settled();
      const assetId = chainAssetId(`eip155:${HARDHAT_CHAIN_ID}/erc721:${getAddress(swords)}/0`);
      const row = await fixture.orm.em.fork().findOneOrFail(ChainAsset, { assetId });
      expect(row.metadataStatus).toBe('failed');
      expect(row.metadataError).toMatch(/https|loopback|private/);
      expect(hits.get('/swords/0') ?? 0).toBe(before); // never asked
      expect((await fixture.ledger.assets.get(assetId)).owner).toBe(node.address(9)); // indexed all the same
    } finally {
      await indexer.stop();
    }
  });

  it('writes a fetch that ends after the asset exists into it: a new version, an assetUpdated event', async () => {
    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const late = await deployErc721(node, 'Late swords', 'LSW', `${base}/swords/`);
    await registerContract(fixture.database, rpcs, studio, {
      collectionId: collection,
      chainId: HARDHAT_CHAIN_ID,
      address: late,
      standard: 'erc721',
      fromBlock,
    });
    await send(node, ERC721_PRESET, late, 'mint', [node.address(7)]);
    // Indexed and projected with no fetcher: the asset is created with the placeholder.
    const indexer = new ChainIndexer(
      fixture.database,
      { ...endpoint(), confirmations: 0 },
      { ...settings(metadataSettings()), metadata: undefined },
      createLogger('silent'),
      { tokenImage: 'https://placeholder.example/token.svg' },
    );
    const assetId = chainAssetId(`eip155:${HARDHAT_CHAIN_ID}/erc721:${getAddress(late)}/0`);
    try {
      await drain(indexer);
      expect(await fixture.ledger.assets.get(assetId)).toMatchObject({
        name: 'Late swords #0',
        metadataVersion: 0,
      });
    } finally {
      await indexer.stop();
    }
    const fetcher = new MetadataFetcher(
      fixture.database,
      rpcs.get(HARDHAT_CHAIN_ID) as ChainRpc,
      metadataSettings(),
      createLogger('silent'),
    );
    const contract = await fixture.orm.em
      .fork()
      .findOneOrFail(ChainContract, { chainId: HARDHAT_CHAIN_ID, address: late.toLowerCase() });
    fetcher.enqueue([{ contractId: Number(contract.id), tokenId: '0' }]);
    await fetcher.settled();
    await fetcher.stop();
    const updated = await fixture.ledger.assets.get(assetId);
    expect(updated).toMatchObject({
      name: 'Blade of Dawn',
      metadataVersion: 1,
      metadata: { image: 'https://cdn.example/blade.png', attributes: [{ trait_type: 'power', value: 9 }] },
    });
    const history = await fixture.ledger.assetUpdates.history(assetId, { limit: 10 });
    expect(history.data.map((version) => [version.version, version.changedBy])).toEqual([
      [1, null],
      [0, studio.userId],
    ]);
    const events = await fixture.orm.em.fork().find(OutboxEvent, { assetId, type: 'assetUpdated' });
    expect(events).toHaveLength(1);
  });
  it('30.11: reads ipfs:// through the gateway only under /ipfs/: a dot-segment URI fails, the gateway API is never asked', async () => {
    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const escaping = await deployErc1155(node, 'ipfs://QmGame/../../api/v0/config');
    const plain = await deployErc1155(node, 'ipfs://QmGame/items/1.json');
    for (const address of [escaping, plain]) {
      await registerContract(fixture.database, rpcs, studio, {
        collectionId: collection,
        chainId: HARDHAT_CHAIN_ID,
        address,
        standard: 'erc1155',
        fromBlock,
      });
    }
    await send(node, ERC1155_PRESET, escaping, 'mint', [node.address(6), 1n, 1n, '0x']);
    await send(node, ERC1155_PRESET, plain, 'mint', [node.address(6), 1n, 1n, '0x']);
    const indexer = new ChainIndexer(
      fixture.database,
      { ...endpoint(), confirmations: 50 },
      settings(metadataSettings({ ipfsGateway: base })),
      createLogger('silent'),
    );
    try {
      await drain(indexer);
      await indexer.metadata?.settled();
      const row = (address: string) =>
        fixture.orm.em.fork().findOneOrFail(ChainAsset, {
          assetId: chainAssetId(`eip155:${HARDHAT_CHAIN_ID}/erc1155:${getAddress(address)}/1`),
        });
      expect(await row(plain)).toMatchObject({
        metadataStatus: 'fetched',
        metadata: { name: 'Gateway item' },
      });
      const refused = await row(escaping);
      expect(refused).toMatchObject({ metadataStatus: 'failed', metadata: null });
      expect(refused.metadataError).toMatch(/malformed ipfs URI/);
      expect(hits.get('/api/v0/config') ?? 0).toBe(0);
    } finally {
      await indexer.stop();
    }
  });
  /** Polls `done` every 50 ms until it holds, or throws after `ms`. */
  async function until(what: string, done: () => Promise<boolean>, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function contractId(address: string): Promise<number> {
    const row = await fixture.orm.em
      .fork()
      .findOneOrFail(ChainContract, { chainId: HARDHAT_CHAIN_ID, address: address.toLowerCase() });
    return Number(row.id);
  }

  const statuses = async (id: number) =>
    (await fixture.orm.em.fork().find(ChainAsset, { contract: id })).map((row) => row.metadataStatus);

  it('30.8: a tarpit metadata host holds up no other contract; its tokens stay pending and are fetched once it answers', async () => {
    // The tarpit accepts connections and never answers, until it is opened.
    let open = false;
    let connected = 0;
    let mostAtOnce = 0;
    const tarpit = createServer((req, res) => {
      if (open) {
        res.end(JSON.stringify({ name: `Slow ${req.url}`, attributes: [] }));
        return;
      }
      connected += 1;
      mostAtOnce = Math.max(mostAtOnce, connected);
      req.socket.on('close', () => (connected -= 1));
    });
    await new Promise<void>((resolve) => tarpit.listen(0, '127.0.0.1', resolve));
    const tarpitBase = `http://127.0.0.1:${(tarpit.address() as AddressInfo).port}`;
    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const slow = await deployErc1155(node, `${tarpitBase}/{id}.json`);
    const quick = await deployErc721(node, 'Quick swords', 'QSW', `${base}/swords/`);
    for (const [address, standard] of [
      [slow, 'erc1155'],
      [quick, 'erc721'],
    ] as const) {
      await registerContract(fixture.database, rpcs, studio, {
        collectionId: collection,
        chainId: HARDHAT_CHAIN_ID,
        address,
        standard,
        fromBlock,
      });
    }
    const ids = Array.from({ length: 40 }, (_, i) => BigInt(i + 1));
    await send(node, ERC1155_PRESET, slow, 'mintBatch', [node.address(5), ids, ids.map(() => 1n), '0x']);
    await send(node, ERC721_PRESET, quick, 'mint', [node.address(5)]);
    const [slowId, quickId] = [await contractId(slow), await contractId(quick)];
    const fetcher = new MetadataFetcher(
      fixture.database,
      rpcs.get(HARDHAT_CHAIN_ID) as ChainRpc,
      metadataSettings({ timeoutMs: 1000 }),
      createLogger('silent'),
      { sweepMs: 100, retryBaseMs: 100, hostBenchMs: 300 },
    );
    try {
      // As the indexer does: the 40-token batch first, then another contract's mint.
      fetcher.enqueue(ids.map((id) => ({ contractId: slowId, tokenId: String(id) })));
      fetcher.enqueue([{ contractId: quickId, tokenId: '0' }]);
      await until('the other contract fetched', async () => (await statuses(quickId))[0] === 'fetched', 5000);
      // Every tarpit token is kept, pending or failed with a time to try again: none dropped.
      const kept = await fixture.orm.em.fork().find(ChainAsset, { contract: slowId });
      expect(kept).toHaveLength(40);
      for (const row of kept) {
        expect(['pending', 'failed']).toContain(row.metadataStatus);
        expect(row.metadataRetryAt).not.toBeNull();
      }
      expect(mostAtOnce).toBeLessThanOrEqual(2); // per-host slots
      open = true;
      await until(
        'the tarpit tokens fetched once it answers',
        async () => (await statuses(slowId)).every((status) => status === 'fetched'),
        20_000,
      );
    } finally {
      await fetcher.stop();
      tarpit.closeAllConnections();
      await new Promise((resolve) => tarpit.close(resolve));
    }
  });

  it('30.8: nothing is dropped: tokens over the memory limit and those a stopped fetcher held are fetched by the next', async () => {
    const fromBlock = Number(await node.publicClient.getBlockNumber()) + 1;
    const many = await deployErc1155(node, `${base}/many/{id}.json`);
    await registerContract(fixture.database, rpcs, studio, {
      collectionId: collection,
      chainId: HARDHAT_CHAIN_ID,
      address: many,
      standard: 'erc1155',
      fromBlock,
    });
    const ids = Array.from({ length: 12 }, (_, i) => BigInt(i + 1));
    await send(node, ERC1155_PRESET, many, 'mintBatch', [node.address(5), ids, ids.map(() => 1n), '0x']);
    const id = await contractId(many);
    const rpc = rpcs.get(HARDHAT_CHAIN_ID) as ChainRpc;
    const first = new MetadataFetcher(fixture.database, rpc, metadataSettings(), createLogger('silent'), {
      memoryLimit: 3,
      sweepMs: 60_000,
    });
    first.enqueue(ids.map((token) => ({ contractId: id, tokenId: String(token) })));
    await first.stop(); // a shutdown (or crash) with tokens queued
    const second = new MetadataFetcher(fixture.database, rpc, metadataSettings(), createLogger('silent'), {
      sweepMs: 100,
    });
    try {
      await until(
        'every token fetched',
        async () => {
          const all = await statuses(id);
          return all.length === 12 && all.every((status) => status === 'fetched');
        },
        15_000,
      );
    } finally {
      await second.stop();
    }
  });
});
