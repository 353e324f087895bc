// Chain indexer benchmark: node scripts/bench/chain.ts [--transfers 100000] [--db sqlite|postgres]
//   [--range 2000] [--lag 50] [--poll 100] [--backfill 0] [--record]
// Starts a Hardhat 3 node on loopback, deploys the OpenZeppelin 4.9.6 ERC-20 preset, mines
// `--transfers` mints (automine off, 1,000 transactions per block, sent as batched JSON-RPC from the
// node's unlocked development account) and 12 blocks on top (all confirmed), then backfills them with
// the real indexer (src/chain/) into a fresh database, projecting them into the ledger (assets,
// holdings, transfers, outbox events), and prints logs/s.
// Then head-following lag (`--lag` samples, 0 to skip): the service (`node src/server.ts`, its own
// indexer polling every `--poll` ms, 2 confirmations) on another fresh database, a /ws client
// subscribed to newTransfer, and per sample one mint mined in a block with the 2 confirming blocks
// mined right after it: the time from the confirming block mined to the event on the socket (the
// lag on top of the confirmation wait), p50/p99/max. With `--backfill N` (security issue 30.4), the
// service first registers the backfill phase's token from its deployment, then N empty blocks are
// mined (hardhat_mine) before the lag token is deployed: the samples run while the service backfills
// those N blocks and the token's mints beside the head-following lag token. With `--record`, the
// figures replace this scenario's record in docs/benchmarks/results.json (as `npm run bench` does).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { encodeDeployData, encodeFunctionData, type Hex } from 'viem';
import WebSocket from 'ws';
import { ChainIndexer } from '../../src/chain/indexer.ts';
import { openDatabase } from '../../src/db/database.ts';
import { ChainContract, ChainTransfer, Collection, Transfer, User } from '../../src/db/entities/index.ts';
import { migrate } from '../../src/db/orm.ts';
import { createScratchDatabase } from '../../src/db/scratch-database.ts';
import { ledgerDatabase } from '../../src/domain/ledger/store/index.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { call, createCollection, createUser } from '../lib/api.ts';
import { Histogram } from '../lib/histogram.ts';
import { startService } from '../lib/service.ts';
import { type Measured, markScenarioStart, record, saveRecorded } from './lib/record.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const { values } = parseArgs({
  options: {
    transfers: { type: 'string', default: '100000' },
    db: { type: 'string', default: 'sqlite' },
    range: { type: 'string', default: '2000' },
    lag: { type: 'string', default: '50' },
    poll: { type: 'string', default: '100' },
    backfill: { type: 'string', default: '0' },
    record: { type: 'boolean', default: false },
  },
});
const TRANSFERS = Number(values.transfers);
const PER_BLOCK = 1000;
const kind = values.db === 'postgres' ? 'postgresql' : 'sqlite';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function rpc(url: string, calls: { method: string; params: unknown[] }[]): Promise<unknown[]> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map((call, id) => ({ jsonrpc: '2.0', id, ...call }))),
  });
  const answers = (await response.json()) as { id: number; result?: unknown; error?: { message: string } }[];
  return answers
    .sort((a, b) => a.id - b.id)
    .map((answer) => {
      if (answer.error) throw new Error(answer.error.message);
      return answer.result;
    });
}

async function startNode(): Promise<{ url: string; child: ChildProcess; dir: string }> {
  const port = await freePort();
  const dir = path.join(ROOT, 'node_modules', '.cache', `evm-bench-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n');
  writeFileSync(path.join(dir, 'hardhat.config.js'), 'export default {};\n');
  const cli = path.join(ROOT, 'node_modules', 'hardhat', 'dist', 'src', 'cli.js');
  const child = spawn(process.execPath, [cli, 'node', '--hostname', '127.0.0.1', '--port', String(port)], {
    cwd: dir,
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      await rpc(url, [{ method: 'eth_chainId', params: [] }]);
      return { url, child, dir };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error('hardhat node did not start');
}

async function main(): Promise<void> {
  markScenarioStart();
  const node = await startNode();
  const database = await createScratchDatabase(kind, { prefix: 'gats_bench' });
  const opened = await openDatabase(database);
  const orm = opened.orm;
  try {
    const [from] = (await rpc(node.url, [{ method: 'eth_accounts', params: [] }]))[0] as string[];
    const artifact = JSON.parse(
      readFileSync(
        path.join(ROOT, 'node_modules/@openzeppelin/contracts/build/contracts/ERC20PresetMinterPauser.json'),
        'utf8',
      ),
    );
    const deployData = encodeDeployData({
      abi: artifact.abi,
      bytecode: artifact.bytecode,
      args: ['Gold', 'GLD'],
    });
    const [deployHash] = (await rpc(node.url, [
      { method: 'eth_sendTransaction', params: [{ from, data: deployData, gas: '0x500000' }] },
    ])) as Hex[];
    const [receipt] = (await rpc(node.url, [
      { method: 'eth_getTransactionReceipt', params: [deployHash] },
    ])) as {
      contractAddress: Hex;
      blockNumber: Hex;
    }[];
    const token = receipt?.contractAddress as Hex;
    const fromBlock = Number(BigInt(receipt?.blockNumber ?? '0x0'));
    await rpc(node.url, [{ method: 'evm_setAutomine', params: [false] }]);
    const started = performance.now();
    for (let sent = 0; sent < TRANSFERS; sent += PER_BLOCK) {
      const calls = [];
      for (let i = sent; i < Math.min(TRANSFERS, sent + PER_BLOCK); i++) {
        const to = `0x${(i + 1).toString(16).padStart(40, '0')}`;
        const data = encodeFunctionData({
          abi: artifact.abi,
          functionName: 'mint',
          args: [to, BigInt(i + 1)],
        });
        calls.push({ method: 'eth_sendTransaction', params: [{ from, to: token, data, gas: '0x30000' }] });
      }
      await rpc(node.url, calls);
      await rpc(node.url, [{ method: 'evm_mine', params: [] }]);
    }
    // 12 blocks on top: every mint has its confirmations, so the backfill also projects all of them.
    for (let i = 0; i < 12; i++) await rpc(node.url, [{ method: 'evm_mine', params: [] }]);
    const generateSeconds = (performance.now() - started) / 1000;
    const [headHex] = (await rpc(node.url, [{ method: 'eth_blockNumber', params: [] }])) as Hex[];
    process.stdout.write(
      `chain: ${TRANSFERS} mints in ${Number(BigInt(headHex ?? '0x0')) - fromBlock} blocks generated in ${generateSeconds.toFixed(1)} s\n`,
    );

    await migrate(orm);
    const em = orm.em.fork();
    em.create(User, {
      id: 'usr_BENCH',
      username: 'bench',
      usernameNormalized: 'bench',
      passwordHash: 'x',
      role: 'studio',
      createdAt: new Date(),
    });
    em.create(Collection, { id: 'bench', name: 'Bench', owner: 'usr_BENCH', createdAt: new Date() });
    em.create(ChainContract, {
      chainId: 31337,
      address: token.toLowerCase(),
      standard: 'erc20',
      collection: 'bench',
      fromBlock,
      nextBlock: fromBlock,
      name: 'Gold',
      symbol: 'GLD',
      decimals: 18,
      createdBy: 'usr_BENCH',
      createdAt: new Date(),
    });
    await em.flush();
    const settings = {
      chains: [],
      rpcRate: 10_000,
      maxBlockRange: Number(values.range),
      pollMs: 10,
      rpcTimeoutMs: 60_000,
      indexer: true,
    };
    const indexer = new ChainIndexer(
      ledgerDatabase(opened),
      { chainId: 31337, rpcUrl: node.url, confirmations: 12 },
      settings,
      createLogger('warn'),
    );
    const indexStart = performance.now();
    // As the indexer's own loop does: a failed step (the node dropping a connection after a huge
    // answer) is retried from the checkpoint; the errors are counted and printed.
    let errors = 0;
    for (;;) {
      try {
        if ((await indexer.step()) !== 'progress') break;
      } catch (error) {
        errors += 1;
        if (errors > 50) throw error;
      }
    }
    const seconds = (performance.now() - indexStart) / 1000;
    const rows = await orm.em.fork().count(ChainTransfer, {});
    const projected = await orm.em.fork().count(Transfer, {});
    await indexer.stop();
    process.stdout.write(
      `chain: backfill on ${values.db}: ${rows} transfer logs indexed and ${projected} projected into the ledger in ${seconds.toFixed(1)} s = ${Math.round(rows / seconds)} logs/s (range ${values.range} blocks, ended at ${indexer.rpc.range}; ${errors} failed steps retried)\n`,
    );
    if (rows !== TRANSFERS) throw new Error(`indexed ${rows} transfers, expected ${TRANSFERS}`);
    if (projected !== TRANSFERS) throw new Error(`projected ${projected} transfers, expected ${TRANSFERS}`);
    const figures: Measured['figures'] = [
      { name: 'backfill', value: Math.round(rows / seconds), unit: 'logs/s' },
    ];
    if (Number(values.lag) > 0)
      figures.push(...(await measureLag(node.url, artifact, from as Hex, { token, fromBlock })));
    record({
      benchmark: 'chain',
      scenario: `backfill of ${TRANSFERS.toLocaleString('en-US')} mints (range ${values.range}) and head-following lag (${values.lag} samples, poll ${values.poll} ms${Number(values.backfill) > 0 ? `, beside a ${values.backfill}-block backfill` : ''}), ${values.db}`,
      figures,
      targets: Number(values.lag) > 0 ? [{ figure: 'head lag p99', below: 1000, source: 'issue 20' }] : [],
    });
  } finally {
    await opened.close();
    await database.drop();
    node.child.kill('SIGTERM');
    rmSync(node.dir, { recursive: true, force: true });
  }
}

/**
 * Head-following lag: confirming block mined -> newTransfer on /ws, through the service's own indexer
 * (with `--backfill N`, while it backfills `deep` and N blocks beside).
 */
async function measureLag(
  nodeUrl: string,
  artifact: { abi: unknown[]; bytecode: Hex },
  from: Hex,
  deep: { token: Hex; fromBlock: number },
): Promise<Measured['figures']> {
  const samples = Number(values.lag);
  const backfill = Number(values.backfill);
  const mine = () => rpc(nodeUrl, [{ method: 'evm_mine', params: [] }]);
  const service = await startService(values.db === 'postgres' ? 'postgres' : 'sqlite', {
    CHAINS: `31337=${nodeUrl}`,
    CHAIN_CONFIRMATIONS: '2',
    CHAIN_POLL_MS: String(values.poll),
    CHAIN_RPC_RATE: '1000',
  });
  let socket: WebSocket | undefined;
  try {
    const studio = await createUser(service, 'studio');
    await createCollection(service, studio, 'lag');
    // An admin registers them on the studio's behalf: the deployer is the node's account, linked to
    // nobody (a studio must control a contract to register it).
    const admin = await createUser(service, 'admin');
    const register = (address: Hex, standard: string, fromBlock: number) =>
      call(service.baseUrl, 'POST', '/api/v1/collections/lag/contracts', {
        session: admin,
        body: { chainId: 31337, address, standard, fromBlock },
      });
    if (backfill > 0) {
      await register(deep.token, 'erc20', deep.fromBlock);
      await rpc(nodeUrl, [{ method: 'hardhat_mine', params: [`0x${backfill.toString(16)}`] }]);
    }
    const deployData = encodeDeployData({
      abi: artifact.abi,
      bytecode: artifact.bytecode,
      args: ['Lag', 'LAG'],
    });
    const [deployHash] = (await rpc(nodeUrl, [
      { method: 'eth_sendTransaction', params: [{ from, data: deployData, gas: '0x500000' }] },
    ])) as Hex[];
    await mine();
    const [receipt] = (await rpc(nodeUrl, [
      { method: 'eth_getTransactionReceipt', params: [deployHash] },
    ])) as {
      contractAddress: Hex;
      blockNumber: Hex;
    }[];
    const token = receipt?.contractAddress as Hex;
    await register(token, 'erc20', Number(BigInt(receipt?.blockNumber ?? '0x0')));
    socket = new WebSocket(`${service.baseUrl.replace('http', 'ws')}/ws`, { headers: studio.headers });
    const ws = socket;
    const arrivals = new Map<string, number>();
    let wake: (() => void) | null = null;
    await new Promise<void>((resolve, reject) => {
      ws.once('error', reject);
      ws.once('open', () => resolve());
    });
    ws.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; data?: { to?: string; amount?: string } };
      if (process.env.BENCH_DEBUG) process.stderr.write(`${String(data).slice(0, 300)}\n`);
      if (message.type === 'newTransfer' && message.data?.to) {
        arrivals.set(message.data.to.toLowerCase(), performance.now());
        wake?.();
      }
    });
    ws.send(JSON.stringify({ type: 'subscribe', events: ['newTransfer'] }));
    const histogram = new Histogram();
    for (let i = 0; i < samples; i++) {
      const to = `0x${(0xbeef0000 + i).toString(16).padStart(40, '0')}`;
      const data = encodeFunctionData({ abi: artifact.abi, functionName: 'mint', args: [to, 1n] });
      await rpc(nodeUrl, [
        { method: 'eth_sendTransaction', params: [{ from, to: token, data, gas: '0x30000' }] },
      ]);
      await mine(); // the mint's block
      await mine();
      await mine(); // its second confirmation: from here on the event is due
      const confirmed = performance.now();
      const deadline = confirmed + 30_000;
      while (!arrivals.has(to) && performance.now() < deadline) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 50);
        });
      }
      const arrived = arrivals.get(to);
      if (arrived === undefined) throw new Error(`no newTransfer for sample ${i} within 30 s`);
      histogram.record(arrived - confirmed);
    }
    const ready = (await call(service.baseUrl, 'GET', '/readyz', {})) as {
      chains?: { backfillingContracts?: number; lag?: number }[];
    };
    const beside =
      backfill > 0
        ? `, beside a ${backfill}-block backfill (still backfilling at the end: ${ready.chains?.[0]?.backfillingContracts} contract(s), ${ready.chains?.[0]?.lag} blocks behind)`
        : '';
    process.stdout.write(
      `chain: head-following lag on ${values.db} (CHAIN_POLL_MS ${values.poll}, 2 confirmations mined at once${beside}): ${samples} samples, confirming block mined -> /ws newTransfer p50 ${histogram.percentile(0.5).toFixed(0)} ms, p99 ${histogram.percentile(0.99).toFixed(0)} ms, max ${histogram.percentile(1).toFixed(0)} ms\n`,
    );
    return [
      { name: 'head lag p50', value: Math.round(histogram.percentile(0.5)), unit: 'ms' },
      { name: 'head lag p99', value: Math.round(histogram.percentile(0.99)), unit: 'ms' },
    ];
  } finally {
    socket?.close();
    await service.stop();
  }
}

await main();
if (values.record)
  console.log(`chain: ${await saveRecorded()} records written to docs/benchmarks/results.json`);
