// The REST event log (`GET /api/v1/events`): pages after an id, in id order, for pollers and for the
// events client's catch-up. Ids only grow and no event is skipped or repeated between pages.
import type { components, operations } from '../../../generated/openapi/types.ts';
import { sleep } from './backoff.ts';
import { unwrap } from './problem.ts';
import type { GatsClient } from './rest.ts';

/** An event envelope `{ id, type, occurredAt, data }`, the same over REST, WebSocket and webhooks. */
export type GatsEvent = components['schemas']['Event'];
export type EventType = components['schemas']['EventType'];
type ListEventsQuery = NonNullable<operations['listEvents']['parameters']['query']>;
/** The filters of a subscription or of the event log (combined with AND). */
export type EventFilters = Pick<ListEventsQuery, 'walletId' | 'assetId' | 'collection'> & {
  /** Kinds of event (default every kind). */
  events?: EventType[];
};

export interface ReadEventsOptions extends EventFilters {
  /** Events after this id (exclusive); default from the oldest retained event. */
  after?: string;
  /** Page size (1 to 1000; default 1000). */
  limit?: number;
  signal?: AbortSignal;
}

/**
 * Every event after `after` up to the newest committed one, page by page. A 410
 * `/problems/resync-required` (events after `after` removed by retention) is thrown as a GatsProblemError.
 */
export async function* readEvents(
  client: GatsClient,
  options: ReadEventsOptions = {},
): AsyncGenerator<GatsEvent> {
  let after = options.after;
  for (;;) {
    const page = await unwrap(
      client.GET('/api/v1/events', {
        params: {
          query: {
            after,
            types: options.events,
            walletId: options.walletId,
            assetId: options.assetId,
            collection: options.collection,
            limit: options.limit ?? 1000,
          },
        },
        signal: options.signal,
      }),
    );
    for (const event of page.data) yield event;
    if (page.data.length > 0) after = page.data[page.data.length - 1].id;
    if (page.next_cursor === null) return;
    after = page.next_cursor;
  }
}

export interface PollEventsOptions extends ReadEventsOptions {
  /** Wait between polls once caught up (default 2 s). */
  intervalMs?: number;
}

/**
 * Polls the event log for ever (until `signal` aborts): every event after `after`, once and in
 * order, then each new one as it is committed. Errors (network, 5xx after the REST retries, a 410)
 * are thrown; resume with `after` set to the id of the last event handled.
 */
export async function* pollEvents(
  client: GatsClient,
  options: PollEventsOptions = {},
): AsyncGenerator<GatsEvent> {
  let after = options.after;
  for (;;) {
    for await (const event of readEvents(client, { ...options, after })) {
      after = event.id;
      yield event;
    }
    try {
      await sleep(options.intervalMs ?? 2000, options.signal);
    } catch {
      return;
    }
  }
}
