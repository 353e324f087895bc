// The on-chain walkthrough of docs/guides/on-chain-assets.md, against a local Hardhat 3 node and the OpenZeppelin 4.9.6
// presets (the same the tests deploy; no Solidity compiler):
//   node scripts/chain-demo.ts node                         a local node on 127.0.0.1:8545, or on the port
//                                                           of EVM_RPC_URL (foreground)
//   node scripts/chain-demo.ts deploy erc721|erc20|erc1155  deploys a preset; prints address and block
//   node scripts/chain-demo.ts mint <contract> <to> [amount|tokenId]   mints (ERC-721: next token id)
//   node scripts/chain-demo.ts transfer <contract> <to> <tokenId|amount> [fromAccount]
//   node scripts/chain-demo.ts mine [blocks]                mines empty blocks (confirmations)
//   node scripts/chain-demo.ts address <index>              a development account's address
//   node scripts/chain-demo.ts watch <API> <wallet>         prints the wallet's /ws events (TOKEN, KEY)
//   node scripts/chain-demo.ts link <API> [index]           links a development account (default 0, the
//                                                           deployer, so the presets' admin) to the user
//                                                           of TOKEN and KEY with SIWE: registering a
//                                                           contract needs a wallet that controls it
// EVM_RPC_URL overrides the node's URL. Transactions come from the node's development accounts
// (the well-known test mnemonic): never point this at a real chain.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  type Abi,
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  type Hex,
  http,
} from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import WebSocket from 'ws';

const ROOT = path.resolve(import.meta.dirname, '..');
const URL_ = process.env.EVM_RPC_URL ?? 'http://127.0.0.1:8545';
const MNEMONIC = 'test test test test test test test test test test test junk';
const PRESETS = {
  erc20: 'ERC20PresetMinterPauser',
  erc721: 'ERC721PresetMinterPauserAutoId',
  erc1155: 'ERC1155PresetMinterPauser',
} as const;
type Standard = keyof typeof PRESETS;

function preset(standard: Standard): { abi: Abi; bytecode: Hex } {
  const file = path.join(
    ROOT,
    'node_modules/@openzeppelin/contracts/build/contracts',
    `${PRESETS[standard]}.json`,
  );
  const json = JSON.parse(readFileSync(file, 'utf8')) as { abi: Abi; bytecode: Hex };
  return { abi: json.abi, bytecode: json.bytecode };
}

const chain = defineChain({
  id: 31337,
  name: 'hardhat',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [URL_] } },
});
const publicClient = createPublicClient({ chain, transport: http(URL_), pollingInterval: 100 });
const wallet = (index = 0) =>
  createWalletClient({
    chain,
    transport: http(URL_),
    account: mnemonicToAccount(MNEMONIC, { addressIndex: index }),
  });

/** The standard of a deployed preset, from ERC-165 (ERC-20 answers none). */
async function standardOf(address: Address): Promise<Standard> {
  const abi = preset('erc721').abi;
  const supports = (id: Hex) =>
    publicClient
      .readContract({ address, abi, functionName: 'supportsInterface', args: [id] })
      .catch(() => false) as Promise<boolean>;
  if (await supports('0x80ac58cd')) return 'erc721';
  if (await supports('0xd9b67a26')) return 'erc1155';
  return 'erc20';
}

async function write(address: Address, standard: Standard, functionName: string, args: unknown[], from = 0) {
  const client = wallet(from);
  const hash = await client.writeContract({
    address,
    abi: preset(standard).abi,
    functionName,
    args,
    account: client.account,
    chain,
  });
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  return receipt.blockNumber;
}

const [command, ...args] = process.argv.slice(2);
switch (command) {
  case 'node': {
    const dir = path.join(ROOT, 'node_modules', '.cache', 'evm-demo');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n');
    writeFileSync(path.join(dir, 'hardhat.config.js'), 'export default {};\n');
    const cli = path.join(ROOT, 'node_modules', 'hardhat', 'dist', 'src', 'cli.js');
    const port = new URL(URL_).port || '8545';
    const child = spawn(process.execPath, [cli, 'node', '--hostname', '127.0.0.1', '--port', port], {
      cwd: dir,
      stdio: 'inherit',
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true', DO_NOT_TRACK: '1' },
    });
    // `kill` of this process (or Ctrl-C) stops the node too, so its port is free again.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
    child.on('exit', (code) => process.exit(code ?? 0));
    break;
  }
  case 'deploy': {
    const standard = (args[0] ?? 'erc721') as Standard;
    if (!(standard in PRESETS)) throw new Error('deploy erc721|erc20|erc1155');
    const { abi, bytecode } = preset(standard);
    const constructorArgs =
      standard === 'erc20'
        ? ['Gold', 'GLD']
        : standard === 'erc721'
          ? ['Swords', 'SWD', 'https://meta.example/swords/']
          : ['https://meta.example/items/{id}.json'];
    const client = wallet(0);
    const hash = await client.deployContract({
      abi,
      bytecode,
      args: constructorArgs,
      account: client.account,
      chain,
    });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    console.log(
      JSON.stringify({ standard, address: receipt.contractAddress, fromBlock: Number(receipt.blockNumber) }),
    );
    break;
  }
  case 'mint': {
    const [contract, to, value] = args;
    if (!contract || !to) throw new Error('mint <contract> <to> [amount|tokenId]');
    const address = getAddress(contract);
    const standard = await standardOf(address);
    const block =
      standard === 'erc721'
        ? await write(address, standard, 'mint', [getAddress(to)])
        : standard === 'erc20'
          ? await write(address, standard, 'mint', [getAddress(to), BigInt(value ?? '1') * 10n ** 18n])
          : await write(address, standard, 'mint', [getAddress(to), BigInt(value ?? '1'), 5n, '0x']);
    console.log(JSON.stringify({ standard, minted: to, block: Number(block) }));
    break;
  }
  case 'transfer': {
    const [contract, to, value, fromIndex] = args;
    if (!contract || !to || !value)
      throw new Error('transfer <contract> <to> <tokenId|amount> [fromAccount]');
    const address = getAddress(contract);
    const standard = await standardOf(address);
    const from = Number(fromIndex ?? 0);
    const sender = wallet(from).account.address;
    const block =
      standard === 'erc721'
        ? await write(address, standard, 'transferFrom', [sender, getAddress(to), BigInt(value)], from)
        : standard === 'erc20'
          ? await write(address, standard, 'transfer', [getAddress(to), BigInt(value) * 10n ** 18n], from)
          : await write(
              address,
              standard,
              'safeTransferFrom',
              [sender, getAddress(to), BigInt(value), 1n, '0x'],
              from,
            );
    console.log(JSON.stringify({ standard, from: sender, to, block: Number(block) }));
    break;
  }
  case 'mine': {
    for (let i = 0; i < Number(args[0] ?? 1); i++) {
      await fetch(URL_, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'evm_mine', params: [] }),
      });
    }
    console.log(JSON.stringify({ head: Number(await publicClient.getBlockNumber()) }));
    break;
  }
  case 'watch': {
    const [api, walletId] = args;
    if (!api || !walletId || !process.env.TOKEN || !process.env.KEY)
      throw new Error('TOKEN=… KEY=… watch <API> <wallet>');
    const socket = new WebSocket(`${api.replace(/^http/, 'ws')}/ws`, {
      headers: { authorization: `Bearer ${process.env.TOKEN}`, 'x-api-key': process.env.KEY },
    });
    // The ledger's events and, before them, the advisory pending (and, after a reorg, removed) ones.
    const events = ['chainTransferPending', 'chainTransferRemoved', 'newTransfer', 'newNFT'];
    socket.on('open', () => socket.send(JSON.stringify({ type: 'subscribe', events, walletId })));
    socket.on('message', (data) => console.log(String(data)));
    break;
  }
  case 'link': {
    const [api, index] = args;
    if (!api || !process.env.TOKEN || !process.env.KEY) throw new Error('TOKEN=… KEY=… link <API> [index]');
    const account = wallet(Number(index ?? 0)).account;
    const headers = {
      authorization: `Bearer ${process.env.TOKEN}`,
      'x-api-key': process.env.KEY,
      'content-type': 'application/json',
    };
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${api}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      const answer = (await response.json()) as Record<string, unknown>;
      if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(answer)}`);
      return answer;
    };
    const challenge = await post('/api/v1/wallets/link/challenge', { address: account.address });
    const message = String(challenge.message);
    console.log(
      JSON.stringify(
        await post('/api/v1/wallets/link', { message, signature: await account.signMessage({ message }) }),
      ),
    );
    break;
  }
  case 'address':
    console.log(wallet(Number(args[0] ?? 0)).account.address);
    break;
  default:
    console.error(
      'usage: node scripts/chain-demo.ts node | deploy <standard> | mint <contract> <to> [n] | transfer <contract> <to> <n> [from] | address <i> | watch <API> <wallet> | link <API> [i]',
    );
    process.exitCode = 2;
}
