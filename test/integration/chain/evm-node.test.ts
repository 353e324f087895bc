// The local EVM node the chain tests run on: it starts, the OpenZeppelin presets deploy with viem,
// and a reorg made with evm_snapshot/evm_revert replaces a block (what the indexer tests rely on).
import { parseAbiItem } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deployErc20,
  deployErc721,
  deployErc1155,
  ERC20_PRESET,
  type EvmNode,
  HARDHAT_CHAIN_ID,
  send,
  startEvmNode,
} from '../../helpers/evm-node.ts';

const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

describe('local EVM node (Hardhat 3)', () => {
  let node: EvmNode;
  beforeAll(async () => {
    node = await startEvmNode();
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('answers eth_chainId and deploys every preset', async () => {
    expect(await node.publicClient.getChainId()).toBe(HARDHAT_CHAIN_ID);
    const [erc20, erc721, erc1155] = [
      await deployErc20(node),
      await deployErc721(node),
      await deployErc1155(node),
    ];
    for (const address of [erc20, erc721, erc1155]) {
      expect((await node.publicClient.getCode({ address }))?.length ?? 0).toBeGreaterThan(2);
    }
    const block = await send(node, ERC20_PRESET, erc20, 'mint', [node.address(1), 1000n]);
    const logs = await node.publicClient.getLogs({
      address: erc20,
      event: transferEvent,
      fromBlock: block,
      toBlock: block,
    });
    expect(logs).toHaveLength(1);
    expect(logs[0]?.args.value).toBe(1000n);
  });

  it('replaces a block after evm_revert (a reorg)', async () => {
    const erc20 = await deployErc20(node);
    const id = await node.testClient.snapshot();
    const block = await send(node, ERC20_PRESET, erc20, 'mint', [node.address(1), 5n]);
    const before = await node.publicClient.getBlock({ blockNumber: block });
    await node.testClient.revert({ id });
    await node.testClient.mine({ blocks: 2 });
    const after = await node.publicClient.getBlock({ blockNumber: block });
    expect(after.hash).not.toBe(before.hash);
    const logs = await node.publicClient.getLogs({
      address: erc20,
      event: transferEvent,
      fromBlock: block,
      toBlock: block,
    });
    expect(logs).toHaveLength(0);
  });
});
