// The token metadata fetcher (issue 20): a new ERC-721 or ERC-1155 token's `tokenURI(id)` / `uri(id)`
// (ERC-1155's `{id}` replaced by the id as 64 lowercase hex digits) is read from the contract, then the
// document it names: `data:application/json` inline, `ipfs://` through the configured HTTPS gateway,
// `https://` (plain `http` only on loopback when allowed) through the SSRF rules of src/net/ (no
// private or loopback addresses unless configured; the connection pinned to the checked address),
// with a time limit, a size limit and 3 tries (1 s and 4 s apart) for a 5xx.
//
// It never holds indexing up: the indexer enqueues tokens on their mint and goes on; fetches run in
// the background. No contract or host holds up another (finding 30.8, src/chain/metadata-queue.ts):
// tokens are resolved round robin per contract, documents read round robin per host, at most 2 at
// a time per host, and a host that lets a request time out is benched (30 s, doubling up to 15 min)
// while its other tokens wait, persisted. Nothing is dropped (src/chain/metadata-state.ts): a token
// is written pending before it is queued, and whatever a full queue, a stop, a crash or a failure
// that may pass leaves is swept in again later. The result is kept in chain_asset (metadata, status, error); the
// projection creates the token's ledger asset with it (through the ledger store) when the fetch ended
// before the mint's confirmation, as it does with the default confirmations; a fetch that ends after
// the asset exists writes into it as a new metadata version (`assetUpdated`).
import type { Address } from 'viem';
import { getAddress, parseAbi } from 'viem/utils';
import type { ChainMetadataSettings } from '../config/index.ts';
import { ChainContract } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { applyFetchedMetadata } from '../domain/ledger/asset-updates.ts';
import type { LedgerDatabase } from '../domain/ledger/store/index.ts';
import { GuardedGetError, guardedGet } from '../net/guarded-get.ts';
import type { Logger } from '../observability/logger.ts';
import { FairQueue, HostGate } from './metadata-queue.ts';
import {
  CLAIM_MS,
  claimDue,
  jobKey,
  type MetadataJob,
  type MetadataOutcome,
  markPending,
  recordOutcome,
  release,
} from './metadata-state.ts';
import { type ChainRpc, callView } from './rpc.ts';

const URI_ABI = parseAbi([
  'function tokenURI(uint256 tokenId) view returns (string)',
  'function uri(uint256 id) view returns (string)',
]);
const TRIES = 3;
const BACKOFF_MS = [1000, 4000];

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

export interface MetadataFetcherOptions {
  /** How often due tokens (pending, unclaimed, or failed and due again) are looked for. */
  sweepMs?: number;
  /** The first delay before a failure that may pass is tried again (then 4 times longer each time). */
  retryBaseMs?: number;
  /** The first bench of a host that let a request time out (doubled while it goes on, at most 15 min). */
  hostBenchMs?: number;
  /** Tokens held in memory; more are written pending and swept when there is room. */
  memoryLimit?: number;
}

const RESOLVE_CONCURRENCY = 4;
const FETCH_CONCURRENCY = 8;
const PER_HOST = 2;

/** A token whose document is to be read from `url`. */
interface DocumentJob {
  job: MetadataJob;
  assetId: string;
  url: string;
  creator: string;
}

export class MetadataFetcher {
  /** Tokens to resolve (tokenURI), fair per contract. */
  private readonly tokens = new FairQueue<number, MetadataJob>();
  /** Documents to read, fair per host. */
  private readonly documents = new FairQueue<string, DocumentJob>();
  private readonly hosts: HostGate;
  /** `contractId|tokenId` of every token held (queued or in progress). */
  private readonly held = new Set<string>();
  private resolving = 0;
  private fetching = 0;
  private inFlight = 0;
  private stopped = false;
  private readonly idle: (() => void)[] = [];
  private readonly timer: NodeJS.Timeout;
  private readonly database: LedgerDatabase;
  private readonly orm: Orm;
  private readonly rpc: ChainRpc;
  private readonly settings: ChainMetadataSettings;
  private readonly logger: Logger;
  private readonly options: Required<MetadataFetcherOptions>;

  constructor(
    database: LedgerDatabase,
    rpc: ChainRpc,
    settings: ChainMetadataSettings,
    logger: Logger,
    options: MetadataFetcherOptions = {},
  ) {
    this.database = database;
    this.orm = database.orm;
    this.rpc = rpc;
    this.settings = settings;
    this.logger = logger;
    this.options = { sweepMs: 5000, retryBaseMs: 30_000, hostBenchMs: 30_000, memoryLimit: 1000, ...options };
    this.hosts = new HostGate({
      perHost: PER_HOST,
      benchMs: this.options.hostBenchMs,
      maxBenchMs: 15 * 60_000,
    });
    this.timer = setInterval(() => this.sweep(), this.options.sweepMs);
    this.timer.unref();
  }

  /**
   * Writes the tokens pending (persisted first: nothing is lost to a full queue, a stop or a crash)
   * and queues those there is room for; the rest are swept in later.
   */
  enqueue(jobs: { contractId: number; tokenId: string }[]): void {
    const fresh = jobs.filter((job) => !this.held.has(jobKey(job)));
    if (this.stopped || fresh.length === 0) return;
    const room = Math.max(0, this.options.memoryLimit - this.held.size);
    const now = fresh.slice(0, room);
    const later = fresh.slice(room);
    for (const job of now) this.held.add(jobKey(job));
    this.track(
      (async () => {
        const queued = await markPending(this.orm, now, new Date(Date.now() + CLAIM_MS));
        const kept = new Set(queued.map(jobKey));
        for (const job of now) if (!kept.has(jobKey(job))) this.held.delete(jobKey(job));
        this.queue(queued);
        await markPending(this.orm, later, null);
      })(),
    );
  }

  /** Resolves once nothing is queued or in progress (tests). */
  async settled(): Promise<void> {
    if (this.isIdle()) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  /** Stops taking work; tokens queued and not started are handed back, due at once. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    await this.handBack([...this.tokens.clear(), ...this.documents.clear().map((doc) => doc.job)]);
  }

  private async handBack(jobs: MetadataJob[]): Promise<void> {
    for (const job of jobs) this.drop(job);
    try {
      await release(
        this.orm,
        jobs.map((job) => job.assetId),
      );
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, 'chain metadata: queued tokens not handed back');
    }
  }

  private isIdle(): boolean {
    return this.inFlight === 0 && this.tokens.size === 0 && this.documents.size === 0;
  }

  private track(work: Promise<unknown>): void {
    this.inFlight += 1;
    void work
      .catch((error) => this.logger.warn({ err: (error as Error).message }, 'chain metadata: not stored'))
      .finally(() => {
        this.inFlight -= 1;
        this.pump();
        if (this.isIdle()) for (const wake of this.idle.splice(0)) wake();
      });
  }

  private queue(jobs: MetadataJob[]): void {
    if (this.stopped) {
      void this.handBack(jobs);
      return;
    }
    for (const job of jobs) {
      this.held.add(jobKey(job));
      this.tokens.push(job.contractId, job);
    }
    this.pump();
  }

  /** Claims due tokens from the database when there is room (of any instance's leftovers too). */
  private sweep(): void {
    const room = this.options.memoryLimit - this.held.size;
    if (this.stopped || room <= 0) return;
    this.track(
      claimDue(this.orm, this.rpc.endpoint.chainId, room, this.held).then((jobs) => this.queue(jobs)),
    );
  }

  private pump(): void {
    if (this.stopped) return;
    while (this.resolving < RESOLVE_CONCURRENCY && this.tokens.size > 0) {
      const job = this.tokens.shift() as MetadataJob;
      this.resolving += 1;
      this.track(this.resolve(job).finally(() => (this.resolving -= 1)));
    }
    const now = Date.now();
    while (this.fetching < FETCH_CONCURRENCY) {
      const next = this.documents.shift((host) => this.hosts.free(host, now));
      if (!next) break;
      this.fetching += 1;
      this.track(this.readDocument(next).finally(() => (this.fetching -= 1)));
    }
  }

  /** Step 1: the token's URI from its contract; inline documents end here, others wait for their host. */
  private async resolve(job: MetadataJob): Promise<void> {
    const contract = await this.orm.em.fork().findOne(ChainContract, { id: job.contractId });
    if (!contract || contract.standard === 'erc20') return this.drop(job);
    const { assetId } = job;
    const creator = contract.name ?? contract.symbol ?? getAddress(contract.address);
    try {
      const fn = contract.standard === 'erc721' ? 'tokenURI' : 'uri';
      const uri = await callView<string>(this.rpc, getAddress(contract.address) as Address, URI_ABI, fn, [
        BigInt(job.tokenId),
      ]);
      if (!uri) throw new MetadataRefused(`${fn}(${job.tokenId}) does not answer`);
      const source = metadataSource(
        contract.standard === 'erc1155' ? substituteId(uri, job.tokenId) : uri,
        this.settings.ipfsGateway,
      );
      if ('inline' in source)
        return await this.finish(
          job,
          assetId,
          { kind: 'fetched', metadata: assetMetadataOf(source.inline, creator) },
          1,
        );
      const host = new URL(source.url).host;
      const benched = this.hosts.benchedUntil(host);
      if (benched !== undefined) return await this.defer(job, assetId, host, benched);
      this.documents.push(host, { job, assetId, url: source.url, creator });
    } catch (failure) {
      // The node away (or slow) may pass; a refused or unreadable URI does not.
      const retryable = !(failure instanceof MetadataRefused) && !(failure instanceof SyntaxError);
      await this.finish(job, assetId, { kind: 'failed', error: messageOf(failure), retryable }, 1);
    }
  }

  /** Step 2: the document, within the host's slots and time budget. */
  private async readDocument(doc: DocumentJob): Promise<void> {
    const host = new URL(doc.url).host;
    this.hosts.start(host);
    let timedOut = false;
    try {
      const document = await this.read(doc.url);
      await this.finish(
        doc.job,
        doc.assetId,
        { kind: 'fetched', metadata: assetMetadataOf(document, doc.creator) },
        1,
      );
    } catch (failure) {
      timedOut = failure instanceof GuardedGetError && failure.timedOut;
      const retryable = failure instanceof GuardedGetError && failure.retryable;
      await this.finish(doc.job, doc.assetId, { kind: 'failed', error: messageOf(failure), retryable }, 1);
    } finally {
      this.hosts.end(host, timedOut);
    }
    // A host benched now: its other documents wait (persisted) instead of holding slots.
    const benched = this.hosts.benchedUntil(host);
    if (benched !== undefined)
      for (const waiting of this.documents.take(host))
        await this.defer(waiting.job, waiting.assetId, host, benched);
  }

  private async defer(job: MetadataJob, assetId: string, host: string, until: number): Promise<void> {
    const error = `${host} timed out; tried again after ${new Date(until).toISOString()}`;
    await this.finish(job, assetId, { kind: 'deferred', error, until: new Date(until) }, 0);
  }

  /** Writes the outcome (and the asset's new metadata version when the asset exists already). */
  private async finish(
    job: MetadataJob,
    assetId: string,
    outcome: MetadataOutcome,
    tried: 0 | 1,
  ): Promise<void> {
    try {
      await recordOutcome(this.orm, assetId, job.attempts + tried, outcome, this.options.retryBaseMs);
      if (outcome.kind === 'failed')
        this.logger.info({ assetId, err: outcome.error }, 'chain metadata: fetch failed');
      // Fetched after the projection created the asset (with the placeholder): written into it as a
      // new metadata version, with its assetUpdated event (issue 21's living metadata).
      if (outcome.kind === 'fetched') await applyFetchedMetadata(this.database, assetId, outcome.metadata);
    } finally {
      this.drop(job);
    }
  }

  private drop(job: MetadataJob): void {
    this.held.delete(jobKey(job));
  }

  /** The document at `url`, JSON; 3 tries for an answer that may pass (5xx), none for a time-out. */
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
        const again = error instanceof GuardedGetError && error.retryable && !error.timedOut;
        if (!again || attempt >= TRIES || this.stopped) throw error;
        await new Promise((resolve) => setTimeout(resolve, BACKOFF_MS[attempt - 1]));
      }
    }
  }
}

function messageOf(failure: unknown): string {
  return ((failure as Error)?.message ?? String(failure)).slice(0, 500);
}
