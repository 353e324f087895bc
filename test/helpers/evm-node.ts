// A real local EVM node for tests: Hardhat 3's node (EDR engine) on a free loopback port, plus viem
// clients and deployers for the OpenZeppelin 4.9.6 compiled presets (ERC-20, ERC-721, ERC-1155).
//
// Hardhat refuses to run from a config outside the project that installs it ("non-local
// installation"), so the one-line ESM config is written to a fresh folder under
// node_modules/.cache/, where module resolution finds this project's hardhat.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import {
  type Abi,
  type Address,
  type Chain,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  getAddress,
  type Hex,
  http,
  type PublicClient,
  type TestClient,
  type WalletClient,
} from 'viem';
import { mnemonicToAccount } from 'viem/accounts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Hardhat's default chain id. */
export const HARDHAT_CHAIN_ID = 31337;

/** The CAIP-19 id of a token of a contract on the local node (no `tokenId` for an ERC-20). */
export const caip = (standard: string, address: string, tokenId?: string) =>
  `eip155:${HARDHAT_CHAIN_ID}/${standard}:${getAddress(address)}${tokenId === undefined ? '' : `/${tokenId}`}`;

/** Hardhat's development mnemonic (public; its accounts are funded when the node starts). */
export const DEV_MNEMONIC = 'test test test test test test test test test test test junk';

/** A development account, able to sign messages (SIWE) as well as transactions. */
export const devAccount = (index: number) => mnemonicToAccount(DEV_MNEMONIC, { addressIndex: index });

export interface EvmNode {
  url: string;
  port: number;
  chain: Chain;
  publicClient: PublicClient;
  testClient: TestClient;
  /** A wallet client per development account (index 0 deploys by default). */
  wallet(index?: number): WalletClient & { account: { address: Address } };
  address(index: number): Address;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(2_000),
  });
  const body = (await response.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(body.error.message);
  return body.result;
}

/** Starts a Hardhat node on a free port and waits until it answers `eth_chainId`. */
export async function startEvmNode(options: { timeoutMs?: number } = {}): Promise<EvmNode> {
  const port = await freePort();
  const dir = path.join(ROOT, 'node_modules', '.cache', `evm-node-${process.pid}-${port}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n');
  writeFileSync(path.join(dir, 'hardhat.config.js'), 'export default {};\n');
  const cli = path.join(ROOT, 'node_modules', 'hardhat', 'dist', 'src', 'cli.js');
  const child: ChildProcess = spawn(
    process.execPath,
    [cli, 'node', '--hostname', '127.0.0.1', '--port', String(port)],
    {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true', DO_NOT_TRACK: '1' },
    },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    if (output.length < 20_000) output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    if (output.length < 20_000) output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.timeoutMs ?? 45_000);
  for (;;) {
    if (child.exitCode !== null) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`hardhat node exited (${child.exitCode}):\n${output}`);
    }
    try {
      await rpc(url, 'eth_chainId');
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`hardhat node did not answer on ${url} in time:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }
  const chain = defineChain({
    id: HARDHAT_CHAIN_ID,
    name: 'hardhat',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  });
  const transport = http(url);
  const publicClient = createPublicClient({
    chain,
    transport,
    cacheTime: 0,
    pollingInterval: 50,
  }) as PublicClient;
  const testClient = createTestClient({ chain, mode: 'hardhat', transport }) as TestClient;
  const wallets = new Map<number, WalletClient & { account: { address: Address } }>();
  const wallet = (index = 0) => {
    let client = wallets.get(index);
    if (!client) {
      const account = devAccount(index);
      client = createWalletClient({ chain, transport, account }) as WalletClient & {
        account: { address: Address };
      };
      wallets.set(index, client);
    }
    return client;
  };
  return {
    url,
    port,
    chain,
    publicClient,
    testClient,
    wallet,
    address: (index) => wallet(index).account.address,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---- OpenZeppelin 4.9.6 presets (ABI + bytecode shipped in the npm package) ----

interface Artifact {
  abi: Abi;
  bytecode: Hex;
}

function preset(name: string): Artifact {
  const file = path.join(
    ROOT,
    'node_modules',
    '@openzeppelin',
    'contracts',
    'build',
    'contracts',
    `${name}.json`,
  );
  const json = JSON.parse(readFileSync(file, 'utf8')) as Artifact;
  return { abi: json.abi, bytecode: json.bytecode };
}

export const ERC20_PRESET = preset('ERC20PresetMinterPauser');
export const ERC721_PRESET = preset('ERC721PresetMinterPauserAutoId');
export const ERC1155_PRESET = preset('ERC1155PresetMinterPauser');
/** An Ownable contract (OpenZeppelin's ProxyAdmin): `owner()` is its deployer; no token standard. */
export const OWNABLE = preset('ProxyAdmin');

/** Deploys `artifact` from development account `from` (the presets make it their DEFAULT_ADMIN_ROLE). */
export async function deploy(node: EvmNode, artifact: Artifact, args: unknown[], from = 0): Promise<Address> {
  const wallet = node.wallet(from);
  const hash = await wallet.deployContract({
    abi: artifact.abi,
    bytecode: artifact.bytecode,
    args,
    account: wallet.account as never,
    chain: node.chain,
  });
  const receipt = await node.publicClient.waitForTransactionReceipt({ hash });
  if (!receipt.contractAddress) throw new Error('deployment produced no contract address');
  return receipt.contractAddress;
}

export function deployErc20(node: EvmNode, name = 'Gold', symbol = 'GLD'): Promise<Address> {
  return deploy(node, ERC20_PRESET, [name, symbol]);
}

export function deployErc721(
  node: EvmNode,
  name = 'Swords',
  symbol = 'SWD',
  baseUri = 'https://meta.example/',
): Promise<Address> {
  return deploy(node, ERC721_PRESET, [name, symbol, baseUri]);
}

export function deployErc1155(node: EvmNode, uri = 'https://meta.example/{id}.json'): Promise<Address> {
  return deploy(node, ERC1155_PRESET, [uri]);
}

/** Sends a contract call from a development account and waits for its receipt; returns the block number. */
export async function send(
  node: EvmNode,
  artifact: Artifact,
  address: Address,
  functionName: string,
  args: unknown[],
  from = 0,
): Promise<bigint> {
  const wallet = node.wallet(from);
  const hash = await wallet.writeContract({
    address,
    abi: artifact.abi,
    functionName,
    args,
    account: wallet.account as never,
    chain: node.chain,
  });
  const receipt = await node.publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success') throw new Error(`${functionName} reverted`);
  return receipt.blockNumber;
}
