// The JSON-RPC side of one chain: a viem public client with a per-request time limit, a request
// rate cap, and the adaptive eth_getLogs block range.
import type { Address, Hex, PublicClient } from 'viem';
import { decodeFunctionResult, encodeFunctionData } from 'viem/utils';
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
  /** viem's client, made at the first request: its module graph (~400 modules) is loaded only by an
   * instance that indexes a chain, not at every start or command. */
  private clientMade: Promise<PublicClient> | undefined;
  private readonly limiter: RateLimiter;
  /** The block range the next eth_getLogs asks for: halved on a refusal, doubled back on success. */
  range: number;

  readonly endpoint: ChainEndpoint;
  private readonly settings: ChainSettings;

  constructor(endpoint: ChainEndpoint, settings: ChainSettings) {
    this.endpoint = endpoint;
    this.settings = settings;
    this.limiter = new RateLimiter(settings.rpcRate);
    this.range = settings.maxBlockRange;
  }

  private client(): Promise<PublicClient> {
    this.clientMade ??= import('viem').then(({ createPublicClient, http, webSocket }) => {
      const { rpcUrl } = this.endpoint;
      const options = { timeout: this.settings.rpcTimeoutMs, retryCount: 0 };
      const transport = /^wss?:/.test(rpcUrl) ? webSocket(rpcUrl, options) : http(rpcUrl, options);
      return createPublicClient({ transport }) as PublicClient;
    });
    return this.clientMade;
  }

  private async request<T>(method: string, params: unknown[]): Promise<T> {
    await this.limiter.take();
    const client = await this.client();
    return (await client.request({ method, params } as never)) as T;
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
    if (!this.clientMade) return;
    const transport = (await this.clientMade).transport as {
      getRpcClient?: () => Promise<{ close(): void }>;
    };
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
