// The crash test's writers: concurrent clients sending transfers, mints and price posts, each request
// with its own Idempotency-Key. A request that gets no answer (connection reset by the kill, refused
// while the service is down, timed out) or a 5xx is sent again with the SAME key and body until it
// gets a 2xx or a 4xx, as a careful client would; every outcome is recorded for the verification.
import { randomUUID } from 'node:crypto';
import type { Session } from '../../lib/api.ts';
import type { CrashableService } from './crashable-service.ts';
import { formatUnits, type Ledger } from './ledger-setup.ts';

export type WriteKind = 'transfer' | 'mint' | 'price';

export interface WriteRequest {
  seq: number;
  kind: WriteKind;
  idempotencyKey: string;
  path: string;
  body: Record<string, string>;
  session: Session;
  /** Times the request was sent. */
  attempts: number;
  /** Sends that got no answer at all. */
  unanswered: number;
  /** 5xx answers (each was retried). */
  serverErrors: number[];
  /** The final answer's status; undefined if none came before the give-up deadline. */
  status?: number;
  /** The transfer id of a 2xx transfer or mint. */
  transferId?: string;
  /** The final answer carried `Idempotent-Replayed: true`. */
  replayed: boolean;
}

export interface WriterOptions {
  clients: number;
  /** A send without an answer after this long counts as unanswered. */
  requestTimeoutMs: number;
  /** A request still unanswered after this long is given up (and reported as a failure). */
  giveUpMs: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)];
const between = (low: number, high: number) => BigInt(low + Math.floor(Math.random() * (high - low + 1)));

/** 80% transfers between players, 15% mints by the studio, 5% price posts by the oracle. */
function nextRequest(seq: number, ledger: Ledger): WriteRequest {
  const roll = Math.random();
  const currency = pick(ledger.currencies);
  const base = {
    seq,
    idempotencyKey: randomUUID(),
    attempts: 0,
    unanswered: 0,
    serverErrors: [],
    replayed: false,
  };
  if (roll < 0.8) {
    const from = pick(ledger.players);
    const others = ledger.players.filter((player) => player !== from);
    return {
      ...base,
      kind: 'transfer',
      path: '/api/v1/transfer',
      session: from,
      body: {
        assetId: currency,
        from: from.wallet,
        to: pick(others).wallet,
        amount: formatUnits(between(1, 500)),
      },
    };
  }
  if (roll < 0.95) {
    return {
      ...base,
      kind: 'mint',
      path: `/api/v1/currencies/${currency}/mint`,
      session: ledger.studio,
      body: { to: pick(ledger.players).wallet, amount: formatUnits(between(1, 10_000)) },
    };
  }
  // A price unique to this request, so each priceUpdate event names the request it came from.
  return {
    ...base,
    kind: 'price',
    path: `/api/v1/price/${currency}`,
    session: ledger.oracle,
    body: { price: `${seq}.25`, currency: 'USD', source: 'chaos-oracle' },
  };
}

export interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: an answer of any keyed POST, read by its caller
  body: ({ id?: string } & Record<string, any>) | undefined;
  replayed: boolean;
}

/** What one keyed POST sends: the path, the caller, its Idempotency-Key and its body. */
export type KeyedPost = Pick<WriteRequest, 'path' | 'session' | 'idempotencyKey'> & { body?: unknown };

/** One send; null when no complete answer came (reset, refused, timed out, cut body). */
export async function sendOnce(
  baseUrl: string,
  request: KeyedPost,
  timeoutMs: number,
): Promise<Answer | null> {
  try {
    const response = await fetch(baseUrl + request.path, {
      method: 'POST',
      headers: {
        ...request.session.headers,
        'content-type': 'application/json',
        'idempotency-key': request.idempotencyKey,
      },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text ? (JSON.parse(text) as Answer['body']) : undefined,
      replayed: response.headers.get('idempotent-replayed') === 'true',
    };
  } catch {
    return null;
  }
}

export class Writers {
  readonly requests: WriteRequest[] = [];
  private stopping = false;
  private readonly service: CrashableService;
  private readonly ledger: Ledger;
  private readonly options: WriterOptions;

  constructor(service: CrashableService, ledger: Ledger, options: WriterOptions) {
    this.service = service;
    this.ledger = ledger;
    this.options = options;
  }

  /** Runs the clients until `stop()`; resolves once every started request has its final outcome. */
  async run(): Promise<void> {
    await Promise.all(Array.from({ length: this.options.clients }, () => this.client()));
  }

  stop(): void {
    this.stopping = true;
  }

  private async client(): Promise<void> {
    for (;;) {
      await this.service.whenUp();
      if (this.stopping) return;
      const request = nextRequest(this.requests.length + 1, this.ledger);
      this.requests.push(request);
      await this.deliver(request);
    }
  }

  private async deliver(request: WriteRequest): Promise<void> {
    const giveUpAt = Date.now() + this.options.giveUpMs;
    let backoffMs = 100;
    for (;;) {
      if (request.attempts > 0) {
        await sleep(backoffMs);
        backoffMs = Math.min(backoffMs * 2, 1000);
        await this.service.whenUp();
      }
      request.attempts++;
      const answer = await sendOnce(this.service.baseUrl, request, this.options.requestTimeoutMs);
      if (answer !== null && answer.status < 500) {
        request.status = answer.status;
        request.replayed = answer.replayed;
        if (answer.status < 300 && request.kind !== 'price') request.transferId = answer.body?.id;
        return;
      }
      if (answer === null) request.unanswered++;
      else request.serverErrors.push(answer.status);
      if (Date.now() > giveUpAt) return;
    }
  }
}
