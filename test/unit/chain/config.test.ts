// Chain configuration: CHAINS items and CHAIN_<id>_RPC_URL / CHAIN_<id>_CONFIRMATIONS, defaults, and
// one clear line per bad value.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/index.ts';

function errorOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('chain configuration', () => {
  it('has no chain and the documented defaults when nothing is set', () => {
    expect(loadConfig({}).chain).toEqual({
      chains: [],
      rpcRate: 10,
      maxBackfillBlocks: 100000,
      maxBlockRange: 2000,
      pollMs: 2000,
      rpcTimeoutMs: 10_000,
      indexer: true,
      metadata: {
        ipfsGateway: 'https://ipfs.io',
        allowLoopback: false,
        allowedNetworks: [],
        timeoutMs: 5000,
        maxBytes: 262_144,
      },
    });
  });

  it('turns the metadata fetcher off, or opens it to loopback and private networks', () => {
    expect(loadConfig({ CHAIN_METADATA: 'off' }).chain.metadata).toBeUndefined();
    expect(
      loadConfig({
        CHAIN_METADATA_ALLOW_LOOPBACK: 'true',
        CHAIN_METADATA_ALLOWED_NETWORKS: '10.1.0.0/16, 192.168.0.0/24',
        CHAIN_METADATA_IPFS_GATEWAY: 'https://gw.example/',
      }).chain.metadata,
    ).toMatchObject({
      ipfsGateway: 'https://gw.example',
      allowLoopback: true,
      allowedNetworks: ['10.1.0.0/16', '192.168.0.0/24'],
    });
    expect(() => loadConfig({ CHAIN_METADATA_IPFS_GATEWAY: 'ftp://gw.example' })).toThrow();
  });

  it('reads CHAINS and per-chain variables, sorted by chain id, confirmations defaulting to CHAIN_CONFIRMATIONS', () => {
    const config = loadConfig({
      CHAINS: '31337=http://127.0.0.1:8545, 1=https://eth.example/rpc',
      CHAIN_8453_RPC_URL: 'wss://base.example/ws',
      CHAIN_31337_CONFIRMATIONS: '2',
      CHAIN_CONFIRMATIONS: '20',
      CHAIN_INDEXER: 'off',
    });
    expect(config.chain.chains).toEqual([
      { chainId: 1, rpcUrl: 'https://eth.example/rpc', confirmations: 20 },
      { chainId: 8453, rpcUrl: 'wss://base.example/ws', confirmations: 20 },
      { chainId: 31337, rpcUrl: 'http://127.0.0.1:8545', confirmations: 2 },
    ]);
    expect(config.chain.indexer).toBe(false);
  });

  it('rejects bad items, one line each', () => {
    const message = errorOf({
      CHAINS: '1=ftp://x.example,abc=https://x.example,2=https://a.example,2=https://b.example',
      CHAIN_5_RPC_URL: 'not a url',
      CHAIN_7_CONFIRMATIONS: '3',
      CHAIN_2_CONFIRMATIONS: '-1',
    });
    const lines = message.split('\n');
    expect(lines).toContain('CHAINS items must be <chainId>=<http(s) or ws(s) URL>; got "1=ftp://x.example"');
    expect(lines).toContain(
      'CHAINS items must be <chainId>=<http(s) or ws(s) URL>; got "abc=https://x.example"',
    );
    expect(lines).toContain('CHAINS names chain 2 twice');
    expect(lines).toContain('CHAIN_5_RPC_URL must be an http(s) or ws(s) URL; got "not a url"');
    expect(lines).toContain('CHAIN_7_CONFIRMATIONS is set but chain 7 has no RPC URL');
    expect(lines).toContain('CHAIN_2_CONFIRMATIONS must be an integer from 0 to 10000; got "-1"');
    expect(errorOf({ CHAIN_CONFIRMATIONS: 'x' })).toMatch(
      /^CHAIN_CONFIRMATIONS must be an integer from 0 to 10000/,
    );
  });

  it('refuses two different URLs for one chain', () => {
    expect(errorOf({ CHAINS: '1=https://a.example', CHAIN_1_RPC_URL: 'https://b.example' })).toBe(
      'CHAIN_1_RPC_URL and CHAINS give chain 1 different URLs',
    );
  });
});
