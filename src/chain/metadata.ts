// The token metadata fetcher (issue 20): a new ERC-721 or ERC-1155 token's `tokenURI(id)` / `uri(id)`
// (ERC-1155's `{id}` replaced by the id as 64 lowercase hex digits) is read from the contract, then the
// document it names: `data:application/json` inline, `ipfs://` through the configured HTTPS gateway,
// `https://` (plain `http` only on loopback when allowed) through the SSRF rules of src/net/ (no
// private or loopback addresses unless configured; the connection pinned to the checked address),
// with a time limit, a size limit and 3 tries (1 s and 4 s apart) for what may pass (time-outs, 5xx).
//
// It never holds indexing up: the indexer enqueues tokens on their mint and goes on; a few fetches
// run at a time in the background. The result is kept in chain_asset (metadata, status, error); the
// projection creates the token's ledger asset with it (through the ledger store) when the fetch ended
// before the mint's confirmation, as it does with the default confirmations; a fetch that ends after
// the asset exists writes into it as a new metadata version (`assetUpdated`).
import { type Address, getAddress, parseAbi } from 'viem';
import type { ChainMetadataSettings } from '../config/index.ts';
import { ChainAsset, ChainContract } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { applyFetchedMetadata } from '../domain/ledger/asset-updates.ts';
import { chainAssetId } from '../domain/ledger/chain-assets.ts';
import { caip19Of } from '../domain/ledger/chain-projection.ts';
import { GuardedGetError, guardedGet } from '../net/guarded-get.ts';
import type { Logger } from '../observability/logger.ts';
import { type ChainRpc, callView } from './rpc.ts';

const URI_ABI = parseAbi([
  'function tokenURI(uint256 tokenId) view returns (string)',
  'function uri(uint256 id) view returns (string)',
]);
const TRIES = 3;
const BACKOFF_MS = [1000, 4000];
const CONCURRENCY = 2;
const QUEUE_LIMIT = 10_000;

export class MetadataRefused extends Error {
  override name = 'MetadataRefused';
}

/** ERC-1155's `{id}`: the id as 64 lowercase hex digits, no 0x. */
export function substituteId(uri: string, tokenId: string): string {
  return uri.replaceAll('{id}', BigInt(tokenId).toString(16).padStart(64, '0'));
}

/** Where a token URI is read from: inline JSON, or an http(s) URL (ipfs:// through the gateway). */
export function metadataSource(uri: string, gateway: string): { inline: unknown } | { url: string } {
  const trimmed = uri.trim();
  if (trimmed.startsWith('data:')) {
    const comma = trimmed.indexOf(',');
    const header = trimmed.slice(5, comma);
    if (comma < 0 || !/^application\/json/i.test(header))
      throw new MetadataRefused('a data: URI that is not JSON');
    const payload = trimmed.slice(comma + 1);
    const text = /;base64$/i.test(header)
      ? Buffer.from(payload, 'base64').toString('utf8')
      : decodeURIComponent(payload);
    return { inline: JSON.parse(text) };
  }
  if (trimmed.startsWith('ipfs://')) return { url: ipfsUrl(trimmed, gateway) };
  if (/^https?:\/\//i.test(trimmed)) return { url: trimmed };
  throw new MetadataRefused(`an unsupported token URI scheme (${trimmed.slice(0, 40)})`);
}

/**
 * `ipfs://<cid>/<path>` as `<gateway>/ipfs/<cid>/<path>`, never outside `/ipfs/<cid>/` (30.11): a
 * segment that is `.` or `..` (also percent-encoded) or that decodes to a `/` or `\` is refused; the
 * URL the gateway gets is checked again after the URL parser's normalisation.
 */
function ipfsUrl(uri: string, gateway: string): string {
  const refused = () => new MetadataRefused(`a malformed ipfs URI ${uri.slice(0, 200)}`);
  const [cid, ...segments] = uri
    .slice('ipfs://'.length)
    .replace(/^ipfs\//, '')
    .split('/');
  if (!/^[A-Za-z0-9]+$/.test(cid)) throw refused();
  for (const segment of segments) {
    if (!/^[^\s?#\\]*$/.test(segment)) throw refused();
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw refused();
    }
    if (decoded === '.' || decoded === '..' || /[/\\]/.test(decoded)) throw refused();
  }
  const url = new URL([`${gateway}/ipfs/${cid}`, ...segments].join('/'));
  const inside = url.pathname === `/ipfs/${cid}` || url.pathname.startsWith(`/ipfs/${cid}/`);
  if (!inside || url.origin !== new URL(gateway).origin) throw refused();
  return url.href;
}

const IMAGE = /^(https?|ipfs):\/\//;

/**
 * The asset metadata a document describes (the ERC-721/1155 metadata JSON): image, attributes and
 * the name/description, cut to the contract's limits; what does not fit is left out.
 */
export function assetMetadataOf(document: unknown, creator: string): Record<string, unknown> {
  const doc = (document && typeof document === 'object' ? document : {}) as Record<string, unknown>;
  const image =
    typeof doc.image === 'string' && IMAGE.test(doc.image) && doc.image.length <= 2048 ? doc.image : null;
  const attributes = (Array.isArray(doc.attributes) ? doc.attributes : [])
    .filter(
      (item): item is { trait_type: string; value: unknown } =>
        !!item &&
        typeof item === 'object' &&
        typeof (item as { trait_type?: unknown }).trait_type === 'string' &&
        ['string', 'number', 'boolean'].includes(typeof (item as { value?: unknown }).value),
    )
    .filter((item) => item.trait_type.length >= 1 && item.trait_type.length <= 100)
    .slice(0, 64)
    .map((item) => ({
      trait_type: item.trait_type,
      value: typeof item.value === 'string' ? item.value.slice(0, 500) : item.value,
    }));
  const result: Record<string, unknown> = { attributes, creator };
  if (image) result.image = image;
  if (typeof doc.name === 'string' && doc.name.trim()) result.name = doc.name.trim().slice(0, 200);
  if (typeof doc.description === 'string') result.description = doc.description.slice(0, 5000);
  return result;
}

interface Job {
  contractId: number;
  tokenId: string;
}

export class MetadataFetcher {
  private readonly queue: Job[] = [];
  private readonly queued = new Set<string>();
  private running = 0;
  private stopped = false;
  private readonly idle: (() => void)[] = [];
  private readonly orm: Orm;
  private readonly rpc: ChainRpc;
  private readonly settings: ChainMetadataSettings;
  private readonly logger: Logger;

  constructor(orm: Orm, rpc: ChainRpc, settings: ChainMetadataSettings, logger: Logger) {
    this.orm = orm;
    this.rpc = rpc;
    this.settings = settings;
    this.logger = logger;
  }

  /** Queues tokens (a full queue drops the rest: their assets keep the placeholder). */
  enqueue(jobs: Job[]): void {
    for (const job of jobs) {
      const key = `${job.contractId}|${job.tokenId}`;
      if (this.stopped || this.queued.has(key) || this.queue.length >= QUEUE_LIMIT) continue;
      this.queued.add(key);
      this.queue.push(job);
    }
    this.pump();
  }

  /** Resolves once nothing is queued or running (tests). */
  async settled(): Promise<void> {
    if (this.running === 0 && this.queue.length === 0) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
  }

  private pump(): void {
    while (this.running < CONCURRENCY && this.queue.length > 0) {
      const job = this.queue.shift() as Job;
      this.running += 1;
      void this.fetch(job)
        .catch((error) =>
          this.logger.warn({ err: (error as Error).message, ...job }, 'chain metadata: not stored'),
        )
        .finally(() => {
          this.running -= 1;
          this.queued.delete(`${job.contractId}|${job.tokenId}`);
          this.pump();
          if (this.running === 0 && this.queue.length === 0) for (const wake of this.idle.splice(0)) wake();
        });
    }
  }

  private async fetch(job: Job): Promise<void> {
    const em = this.orm.em.fork();
    const contract = await em.findOne(ChainContract, { id: job.contractId });
    if (!contract || contract.standard === 'erc20') return;
    const address = getAddress(contract.address) as Address;
    const caip19 = caip19Of({ chainId: contract.chainId, address, standard: contract.standard }, job.tokenId);
    const assetId = chainAssetId(caip19);
    let metadata: Record<string, unknown> | null = null;
    let error: string | null = null;
    try {
      const fn = contract.standard === 'erc721' ? 'tokenURI' : 'uri';
      const uri = await callView<string>(this.rpc, address, URI_ABI, fn, [BigInt(job.tokenId)]);
      if (!uri) throw new MetadataRefused(`${fn}(${job.tokenId}) does not answer`);
      const source = metadataSource(
        contract.standard === 'erc1155' ? substituteId(uri, job.tokenId) : uri,
        this.settings.ipfsGateway,
      );
      const document = 'inline' in source ? source.inline : await this.read(source.url);
      metadata = assetMetadataOf(document, contract.name ?? contract.symbol ?? address);
    } catch (failure) {
      error = ((failure as Error).message ?? String(failure)).slice(0, 500);
    }
    // An upsert: the projection may have written the row (without metadata) meanwhile.
    await em.upsert(ChainAsset, {
      assetId,
      contract: em.getReference(ChainContract, contract.id),
      tokenId: job.tokenId,
      caip19,
      metadata,
      metadataStatus: metadata ? 'fetched' : 'failed',
      metadataError: error,
    });
    if (error) this.logger.info({ assetId, err: error }, 'chain metadata: fetch failed');
    // Fetched after the projection created the asset (with the placeholder): written into it as a
    // new metadata version, with its assetUpdated event (issue 21's living metadata).
    else if (metadata) await applyFetchedMetadata(this.orm, assetId, metadata);
  }

  /** The document at `url`, JSON, with up to 3 tries for what may pass. */
  private async read(url: string): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { body } = await guardedGet(url, {
          allowLoopback: this.settings.allowLoopback,
          allowedNetworks: this.settings.allowedNetworks,
          timeoutMs: this.settings.timeoutMs,
          maxBytes: this.settings.maxBytes,
          userAgent: 'gats-chain-metadata/1',
        });
        return JSON.parse(body.toString('utf8'));
      } catch (error) {
        const retryable = error instanceof GuardedGetError && error.retryable;
        if (!retryable || attempt >= TRIES || this.stopped) throw error;
        await new Promise((resolve) => setTimeout(resolve, BACKOFF_MS[attempt - 1]));
      }
    }
  }
}
