// The JSON-RPC side of one chain: a viem public client with a per-request time limit, a request
// rate cap, and the adaptive eth_getLogs block range.
import {
  type Address,
  createPublicClient,
  decodeFunctionResult,
  encodeFunctionData,
  type Hex,
  http,
  type PublicClient,
  webSocket,
} from 'viem';
import type { ChainEndpoint, ChainSettings } from '../config/index.ts';
import { type RpcLog, TOPICS } from './logs.ts';

/**
 * A token bucket: `rate` requests per second, bursts of up to `rate`. Hand-written (ten lines): the
 * limiter libraries on npm are either Redis-backed or timer-per-call; this one only awaits a delay.
 */
export class RateLimiter {
  private tokens: number;
  private last = performance.now();
  private readonly rate: number;
  constructor(rate: number) {
    this.rate = rate;
    this.tokens = rate;
  }
  async take(): Promise<void> {
    for (;;) {
      const now = performance.now();
      this.tokens = Math.min(this.rate, this.tokens + ((now - this.last) / 1000) * this.rate);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.ceil(((1 - this.tokens) / this.rate) * 1000)));
    }
  }
}

export interface BlockHeader {
  number: bigint;
  hash: Hex;
  parentHash: Hex;
}

/** An answer that says the range (or result) was too large for the node. */
export function isRangeTooLarge(error: unknown): boolean {
  const text = `${(error as Error)?.message ?? ''} ${(error as { details?: string })?.details ?? ''}`;
  if ((error as Error)?.name === 'ResponseBodyTooLargeError') return true; // viem's 10 MB answer cap
  return /block range|range too|too many|too large|limit exceeded|exceeds|exceeded the size|response size|returned more than/i.test(
    text,
  );
}

/** A request that ran out of time (viem's TimeoutError). */
export function isTimeout(error: unknown): boolean {
  return (
    (error as Error)?.name === 'TimeoutError' ||
    /took too long|timed? ?out/i.test((error as Error)?.message ?? '')
  );
}

export class ChainRpc {
  readonly client: PublicClient;
  private readonly limiter: RateLimiter;
  /** The block range the next eth_getLogs asks for: halved on a refusal, doubled back on success. */
  range: number;

  readonly endpoint: ChainEndpoint;
  private readonly settings: ChainSettings;

  constructor(endpoint: ChainEndpoint, settings: ChainSettings) {
    this.endpoint = endpoint;
    this.settings = settings;
    const transport = /^wss?:/.test(endpoint.rpcUrl)
      ? webSocket(endpoint.rpcUrl, { timeout: settings.rpcTimeoutMs, retryCount: 0 })
      : http(endpoint.rpcUrl, { timeout: settings.rpcTimeoutMs, retryCount: 0 });
    this.client = createPublicClient({ transport }) as PublicClient;
    this.limiter = new RateLimiter(settings.rpcRate);
    this.range = settings.maxBlockRange;
  }

  private async request<T>(method: string, params: unknown[]): Promise<T> {
    await this.limiter.take();
    return (await this.client.request({ method, params } as never)) as T;
  }

  async chainId(): Promise<number> {
    return Number(BigInt(await this.request<Hex>('eth_chainId', [])));
  }

  async blockNumber(): Promise<bigint> {
    return BigInt(await this.request<Hex>('eth_blockNumber', []));
  }

  async block(number: bigint): Promise<BlockHeader | null> {
    const block = await this.request<{ number: Hex; hash: Hex; parentHash: Hex } | null>(
      'eth_getBlockByNumber',
      [`0x${number.toString(16)}`, false],
    );
    return block ? { number: BigInt(block.number), hash: block.hash, parentHash: block.parentHash } : null;
  }

  /** The transfer logs of `addresses` in blocks `from`..`to` (one eth_getLogs). */
  async logsExact(addresses: Address[], from: bigint, to: bigint): Promise<RpcLog[]> {
    return this.request<RpcLog[]>('eth_getLogs', [
      {
        address: addresses,
        fromBlock: `0x${from.toString(16)}`,
        toBlock: `0x${to.toString(16)}`,
        topics: [TOPICS],
      },
    ]);
  }

  /** CHAIN_MAX_BACKFILL_BLOCKS: the deepest backfill a non-admin may register (src/chain/from-block.ts). */
  get maxBackfillBlocks(): number {
    return this.settings.maxBackfillBlocks ?? Number.POSITIVE_INFINITY;
  }

  /** After a refusal for size or a time-out: half the range, at least one block. */
  shrink(): void {
    this.range = Math.max(1, Math.floor(this.range / 2));
  }

  /** After a success: double the range back, up to CHAIN_MAX_BLOCK_RANGE. */
  grow(): void {
    this.range = Math.min(this.settings.maxBlockRange, this.range * 2);
  }

  async call(to: Address, data: Hex, block?: bigint): Promise<Hex> {
    return this.request<Hex>('eth_call', [
      { to, data },
      block === undefined ? 'latest' : `0x${block.toString(16)}`,
    ]);
  }

  async code(address: Address, block?: bigint): Promise<Hex> {
    return this.request<Hex>('eth_getCode', [
      address,
      block === undefined ? 'latest' : `0x${block.toString(16)}`,
    ]);
  }

  async close(): Promise<void> {
    const transport = this.client.transport as { getRpcClient?: () => Promise<{ close(): void }> };
    if (transport.getRpcClient) (await transport.getRpcClient()).close();
  }
}

/** A view call answered by the contract, or undefined when it reverts or answers nothing decodable. */
export async function callView<T>(
  rpc: ChainRpc,
  to: Address,
  abi: readonly unknown[],
  functionName: string,
  args: unknown[] = [],
): Promise<T | undefined> {
  try {
    const data = encodeFunctionData({ abi: abi as never, functionName, args } as never);
    const result: Hex = await rpc.call(to, data);
    if (result === '0x') return undefined;
    return decodeFunctionResult({ abi: abi as never, functionName, data: result } as never) as T;
  } catch (error) {
    // The node away is not an answer: only a revert (or undecodable data) means "not this function".
    if (
      isTimeout(error) ||
      /HttpRequestError|WebSocketRequestError|SocketClosedError/.test((error as Error)?.name ?? '')
    ) {
      throw error;
    }
    return undefined;
  }
}
