import { EVENT_TYPES } from '../../db/entities/OutboxEvent.ts';
import { GoneError } from '../../domain/errors.ts';
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { EventFilter } from '../../events/filter.ts';
import { prunedSince, retainedEvents } from '../../events/retention.ts';
import { type EventStore, toEnvelope } from '../../events/store.ts';
import type { OutboxTail } from '../../events/tail.ts';
import type { TicketStore } from '../../events/tickets.ts';
import { caller, type HandlerMap, respond, typedHandlers } from '../handler.ts';

export interface EventsHandlerDeps {
  store: EventStore;
  tail: OutboxTail;
  tickets: TicketStore;
  publicUrl: string;
}

export function eventsHandlers(deps: EventsHandlerDeps): HandlerMap {
  const wsBase = deps.publicUrl.replace(/^http/, 'ws');
  return typedHandlers<'listEvents' | 'createWebSocketTicket'>({
    async listEvents(request, ctx) {
      const { query } = request;
      const limit = query.limit ?? 100;
      const filter: EventFilter = {
        types: new Set(query.types ?? EVENT_TYPES),
        wallet: query.walletId === undefined ? undefined : parseAddress(query.walletId, '/query/walletId'),
        assetId: query.assetId,
        collection: query.collection,
      };
      const retained = await retainedEvents(deps.store);
      const oldestEventId = retained.oldest === null ? null : String(retained.oldest);
      const after = query.after === undefined ? Math.max(retained.prunedThrough, 0) : Number(query.after);
      const pruned = prunedSince(after, retained);
      if (pruned) {
        throw new GoneError(
          `${pruned}; reload current state, then continue from oldestEventId.`,
          '/problems/resync-required',
          { oldestEventId },
        );
      }
      // Up to what the relay has settled: past it, an earlier id may still be committing
      // (PostgreSQL), and a client continuing from a later id would never see it.
      await deps.tail.flush();
      const rows = await deps.store.after(
        after,
        limit,
        filter,
        deps.tail.lastId,
        deps.tail.newestPriceUpdate,
      );
      respond(ctx, 'listEvents', 200, {
        data: rows.map(toEnvelope),
        next_cursor: rows.length === limit ? String(rows[rows.length - 1].id) : null,
        oldestEventId,
        newestEventId: deps.tail.lastId > 0 ? String(deps.tail.lastId) : null,
      });
    },
    async createWebSocketTicket(request, ctx) {
      const { ticket, expiresAt } = await deps.tickets.issue(caller(request));
      respond(ctx, 'createWebSocketTicket', 201, {
        ticket,
        expiresAt: expiresAt.toISOString(),
        url: `${wsBase}/ws?ticket=${ticket}`,
      });
    },
  });
}
