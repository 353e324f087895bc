// The webhook sender's thread: signs and sends the requests the dispatcher hands it (sender.ts) and
// answers each outcome. The HTTP client's work (connections, headers, TLS, the HMAC) is most of a
// delivery's CPU; here it runs off the event loop that serves the API and fans events out to
// WebSockets, so a burst of webhooks does not delay them.
// Two kinds of work, in one ordered stream of commands (a message carries the commands of one turn
// of the dispatcher's loop, in the order they were given):
// - a series (`series`): one subscription's messages, sent one after the other (in order), stopping
//   at the first that fails, each outcome answered as it comes. The slow path (retries, replays) and
//   the catch-up from the outbox use it.
// - a stream (`start` ... `stop`): the fast path of a subscription that is up to date. The dispatcher
//   posts each batch of the relay's events here once (`events`), for every streaming subscription;
//   this thread matches each stream's filter, derives the delivery id, signs and sends the stream's
//   events in id order, one request at a time, the next as soon as the previous answer arrives (no
//   round trip through the dispatcher's event loop), and reports what was delivered in batches
//   (every REPORT_MS), with how far the subscription is done (its cursor may move there once the
//   rows are written). The first failure ends the stream at once (reported, with the failed event):
//   the dispatcher records it and takes the subscription through the slow path. A `stop` ends the
//   stream after the request in flight; either way `stopped` is the stream's last report, and
//   nothing of it is sent after.
// Answers go together, one message per turn of this thread's loop (a series' answers, a stream's
// end), or every REPORT_MS (a stream's deliveries, which only the database write waits for).
import { parentPort } from 'node:worker_threads';
import type { Webhook } from 'standardwebhooks';
import type { EventType } from '../db/entities/OutboxEvent.ts';
import { type EventFilter, matches, type PublishedEvent } from '../events/filter.ts';
import { clock } from './clock.ts';
import { deliveryId, deliveryTime } from './delivery-id.ts';
import { createPools, type Outcome, type Prepared, prepareTarget, sendPrepared, signers } from './sender.ts';
import type { TargetPolicy } from './targets.ts';

type SendOptions = TargetPolicy & { timeoutMs: number; userAgent: string };

export interface SendTask {
  n: number;
  url: string;
  messages: { id: string; body: string }[];
  secrets: string[];
  options: SendOptions;
}

/** One message's outcome, and when this thread began its request and had the outcome. */
export interface Sent {
  outcome: Outcome;
  /** ms, clock.ts: comparable across threads and with Date.now(). */
  startedAt: number;
  doneAt: number;
}

export interface SendDone {
  n: number;
  sent: Sent;
  /** The series' last answer: every message was sent, or this one failed. */
  last: boolean;
}

/** An event as a stream needs it (the relay's, copied once per batch for every stream). */
export interface StreamEvent
  extends Pick<PublishedEvent, 'id' | 'type' | 'assetId' | 'collectionId' | 'wallets' | 'json'> {
  occurredAt: number;
  /** When the dispatcher had it (ms, clock.ts). */
  heldAt: number;
  /** When this thread had it (set here, once for every stream). */
  at?: number;
  /** The time part of its delivery ids (set here, once for every stream). */
  time?: string;
}

export interface StreamStart {
  /** The subscription's id (the delivery ids derive from it). */
  id: string;
  /** This stream of the subscription (a later one never takes an earlier one's reports). */
  gen: number;
  url: string;
  secrets: string[];
  filter: { types: EventType[]; wallet?: string; assetId?: string; collection?: string };
  options: SendOptions;
  /** The events after the subscription's position that the dispatcher had when it started the stream. */
  events: StreamEvent[];
  /** How far `events` reach: later events come with `events` commands. */
  upTo: number;
}

export type SendCommand =
  | { kind: 'series'; task: SendTask }
  | { kind: 'events'; events: StreamEvent[] }
  | { kind: 'start'; stream: StreamStart }
  | { kind: 'secrets'; id: string; gen: number; secrets: string[] }
  | { kind: 'stop'; id: string; gen: number }
  /**
   * Report now, once the request in flight of each stream of `ids` (every stream without `ids`) has
   * its outcome; `n` comes back in `synced`.
   */
  | { kind: 'sync'; n: number; ids?: string[] }
  | { kind: 'close' };

/** A stream's deliveries since its last report, and where it stands. */
export interface StreamReport {
  id: string;
  gen: number;
  /**
   * Per successful delivery, in order, DELIVERY_FIELDS (send-thread.ts) numbers: event id, occurredAt, heldAt, when
   * this thread had it, startedAt, doneAt (ms, clock.ts), HTTP status.
   */
  numbers: number[];
  /** Per successful delivery: its id (`webhook-id`) and the event's type. */
  ids: string[];
  types: EventType[];
  /** Every event it wants up to here was delivered (or is in `failed`). */
  confirmed: number;
  /** The request that failed (the stream ended with it). */
  failed?: {
    eventId: number;
    type: EventType;
    occurredAt: number;
    deliveryId: string;
    sent: Sent;
  };
  /** The stream's last report. */
  stopped: boolean;
}

export interface SendReport {
  done: SendDone[];
  streams: StreamReport[];
  /** The syncs answered (every delivery made before each is in this report or an earlier one). */
  synced: number[];
}

/** A stream's deliveries are reported this often (the database writes them every FLUSH_MS anyway). */
const REPORT_MS = 10;
/** A stream resolves and checks its target again after this many requests, or this long. */
const PREPARE_EVERY = 64;
const PREPARE_MS = 1000;
/** A stream this far behind (a slow receiver) ends (stopped) and catches up from the outbox instead. */
const MAX_QUEUED = 20_000;

const port = parentPort;
if (!port) throw new Error('send-worker runs as a worker thread');
const pools = createPools();
/** One signer per secret (decoded once); secrets change only with rotations. */
const signing = new Map<string, Webhook>();

function signerOf(secret: string): Webhook {
  let signer = signing.get(secret);
  if (!signer) {
    if (signing.size >= 10_000) signing.clear();
    [signer] = signers([secret]);
    signing.set(secret, signer);
  }
  return signer;
}

async function series(task: SendTask, answer: (done: SendDone) => void): Promise<void> {
  const secrets = task.secrets.map(signerOf);
  const options = { ...task.options, pools };
  // The target is resolved and checked once per series (a few requests in a row), not per request.
  let target: Prepared | Outcome;
  try {
    target = await prepareTarget(task.url, options);
  } catch (error) {
    target = { ok: false, statusCode: null, error: (error as Error).message };
  }
  for (const [i, { id, body }] of task.messages.entries()) {
    const startedAt = clock();
    let outcome: Outcome;
    try {
      outcome = 'pool' in target ? await sendPrepared(target, { id, body, secrets }, options) : target;
    } catch (error) {
      outcome = { ok: false, statusCode: null, error: (error as Error).message };
    }
    const last = !outcome.ok || i === task.messages.length - 1;
    answer({ n: task.n, sent: { outcome, startedAt, doneAt: clock() }, last });
    if (last) return;
  }
}

interface Stream {
  id: string;
  gen: number;
  url: string;
  secrets: Webhook[];
  filter: EventFilter;
  options: SendOptions & { pools: typeof pools };
  /** Its events to send, in id order, from `head` (each with `at` set). */
  queue: StreamEvent[];
  head: number;
  /** The last event id this stream has seen (every event up to it is queued, sent or not wanted). */
  seen: number;
  running: boolean;
  /** The request in flight, if any. */
  inflight: Promise<unknown> | null;
  stopping: boolean;
  target: Prepared | null;
  preparedAt: number;
  preparedUses: number;
  report: StreamReport;
  /** Something to report (deliveries, a move of `confirmed`, its end). */
  dirty: boolean;
}

const streams = new Map<string, Stream>();

function newReport(id: string, gen: number, confirmed: number): StreamReport {
  return { id, gen, numbers: [], ids: [], types: [], confirmed, stopped: false };
}

function confirmedOf(stream: Stream): number {
  return stream.head < stream.queue.length ? stream.queue[stream.head].id - 1 : stream.seen;
}

function offer(stream: Stream, events: readonly StreamEvent[]): void {
  for (const event of events) {
    if (event.id <= stream.seen) continue;
    stream.seen = event.id;
    if (matches(event, stream.filter)) stream.queue.push(event);
  }
  // Reported even when nothing is sent: the subscription is done with the events it does not want.
  stream.dirty = true;
  schedule(false);
  if (stream.queue.length - stream.head > MAX_QUEUED) {
    // Too far behind to keep in memory: the dispatcher catches up from the outbox.
    stream.stopping = true;
    if (!stream.running) end(stream);
    return;
  }
  if (!stream.running) void run(stream);
}

/** Sends the stream's queued events in order, one at a time, until none is left, one fails, or it stops. */
async function run(stream: Stream): Promise<void> {
  stream.running = true;
  try {
    while (!stream.stopping && stream.head < stream.queue.length) {
      const event = stream.queue[stream.head];
      const at = event.at ?? 0;
      event.time ??= deliveryTime(event.occurredAt);
      const id = deliveryId(stream.id, event.id, event.occurredAt, event.time);
      const startedAt = clock();
      let outcome: Outcome;
      try {
        if (
          !stream.target ||
          stream.preparedUses >= PREPARE_EVERY ||
          startedAt - stream.preparedAt >= PREPARE_MS
        ) {
          // Resolved and checked again at delivery time (a name may now point elsewhere).
          stream.target = null;
          const prepared = await prepareTarget(stream.url, stream.options);
          if ('pool' in prepared) {
            stream.target = prepared;
            stream.preparedAt = startedAt;
            stream.preparedUses = 0;
          }
          outcome = 'pool' in prepared ? { ok: true, statusCode: null, error: null } : prepared;
        } else outcome = { ok: true, statusCode: null, error: null };
        if (stream.target && outcome.ok) {
          stream.preparedUses++;
          const request = sendPrepared(
            stream.target,
            { id, body: event.json, secrets: stream.secrets },
            stream.options,
          );
          stream.inflight = request;
          outcome = await request;
        }
      } catch (error) {
        outcome = { ok: false, statusCode: null, error: (error as Error).message };
      }
      stream.inflight = null;
      const doneAt = clock();
      const report = stream.report;
      if (!outcome.ok) {
        report.failed = {
          eventId: event.id,
          type: event.type,
          occurredAt: event.occurredAt,
          deliveryId: id,
          sent: { outcome, startedAt, doneAt },
        };
        stream.target = null;
        end(stream);
        return;
      }
      stream.head++;
      report.numbers.push(
        event.id,
        event.occurredAt,
        event.heldAt,
        at,
        startedAt,
        doneAt,
        outcome.statusCode ?? 0,
      );
      report.ids.push(id);
      report.types.push(event.type);
      stream.dirty = true;
      schedule(false);
      if (stream.head >= 1024 && stream.head * 2 >= stream.queue.length) {
        stream.queue = stream.queue.slice(stream.head);
        stream.head = 0;
      }
    }
  } finally {
    stream.running = false;
  }
  if (stream.stopping && streams.get(stream.id) === stream) end(stream);
}

/** The stream's last report: what it delivered, how far, and `stopped`. */
function end(stream: Stream): void {
  if (streams.get(stream.id) !== stream) return;
  streams.delete(stream.id);
  stream.report.stopped = true;
  stream.dirty = true;
  ended.push(stream);
  schedule(true);
}

function start(spec: StreamStart): void {
  const previous = streams.get(spec.id);
  if (previous) {
    // The dispatcher starts a subscription's stream only after the previous one's end: never here.
    previous.stopping = true;
    if (!previous.running) end(previous);
  }
  const options = { ...spec.options, pools };
  const stream: Stream = {
    id: spec.id,
    gen: spec.gen,
    url: spec.url,
    secrets: spec.secrets.map(signerOf),
    filter: {
      types: new Set(spec.filter.types),
      wallet: spec.filter.wallet,
      assetId: spec.filter.assetId,
      collection: spec.filter.collection,
    },
    options,
    queue: [],
    head: 0,
    seen: spec.upTo,
    running: false,
    inflight: null,
    stopping: false,
    target: null,
    preparedAt: 0,
    preparedUses: 0,
    report: newReport(spec.id, spec.gen, spec.upTo),
    dirty: false,
  };
  streams.set(spec.id, stream);
  const at = clock();
  for (const event of spec.events) {
    event.at = at;
    if (matches(event, stream.filter)) stream.queue.push(event);
  }
  stream.report.confirmed = confirmedOf(stream);
  if (stream.queue.length > 0) void run(stream);
}

/** Series answers not sent yet; streams that ended since the last report. */
let answers: SendDone[] = [];
let ended: Stream[] = [];
let synced: number[] = [];
let immediate: NodeJS.Immediate | null = null;
let timer: NodeJS.Timeout | null = null;

/** A report soon: `now` at the end of this turn (answers, ends), else within REPORT_MS. */
function schedule(now: boolean): void {
  if (now) {
    immediate ??= setImmediate(sendReport);
    return;
  }
  if (!immediate && !timer) timer = setTimeout(sendReport, REPORT_MS);
}

function take(stream: Stream): StreamReport {
  const report = stream.report;
  report.confirmed = report.failed ? report.failed.eventId - 1 : confirmedOf(stream);
  stream.report = newReport(stream.id, stream.gen, report.confirmed);
  stream.dirty = false;
  return report;
}

function sendReport(): void {
  if (immediate) clearImmediate(immediate);
  if (timer) clearTimeout(timer);
  immediate = null;
  timer = null;
  const reports: StreamReport[] = [];
  for (const stream of streams.values()) if (stream.dirty) reports.push(take(stream));
  for (const stream of ended) reports.push(take(stream));
  ended = [];
  const done = answers;
  answers = [];
  const syncs = synced;
  synced = [];
  if (reports.length > 0 || done.length > 0 || syncs.length > 0)
    port?.postMessage({ done, streams: reports, synced: syncs } satisfies SendReport);
}

function answer(done: SendDone): void {
  answers.push(done);
  schedule(true);
}

port.on('message', (commands: SendCommand[]) => {
  const at = clock();
  for (const command of commands) {
    switch (command.kind) {
      case 'series':
        void series(command.task, answer);
        break;
      case 'events':
        for (const event of command.events) event.at = at;
        for (const stream of streams.values()) if (!stream.stopping) offer(stream, command.events);
        break;
      case 'start':
        start(command.stream);
        break;
      case 'secrets': {
        const stream = streams.get(command.id);
        if (stream?.gen === command.gen) stream.secrets = command.secrets.map(signerOf);
        break;
      }
      case 'stop': {
        const stream = streams.get(command.id);
        if (stream?.gen !== command.gen) break;
        stream.stopping = true;
        if (!stream.running) end(stream);
        break;
      }
      case 'sync': {
        // After the requests in flight (their outcomes are reported before the answer goes): only
        // the named streams' (30.7: another subscription's slow receiver holds up no one else).
        const named = command.ids;
        const inflight = (named ? named.map((id) => streams.get(id)) : [...streams.values()])
          .map((stream) => stream?.inflight ?? null)
          .filter((request) => request !== null);
        const n = command.n;
        void Promise.allSettled(inflight).then(() =>
          setImmediate(() => {
            synced.push(n);
            schedule(true);
          }),
        );
        break;
      }
      case 'close':
        pools.close();
        port.close();
        return;
    }
  }
});
