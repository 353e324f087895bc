// Paginated reads of the public API that the verification needs: events, transfers, owners.
import { call, type Session } from '../../lib/api.ts';

export interface EventEnvelope {
  id: string;
  type: string;
  data: Record<string, string>;
}

export interface EventQuery {
  types?: string[];
  walletId?: string;
  assetId?: string;
  collection?: string;
}

/** Every committed event after `after` matching `query`, ascending (GET /api/v1/events pages). */
export async function eventsAfter(
  baseUrl: string,
  session: Session,
  after: bigint,
  query: EventQuery = {},
): Promise<EventEnvelope[]> {
  const events: EventEnvelope[] = [];
  let cursor: string | null = String(after);
  while (cursor !== null) {
    const params = new URLSearchParams({ after: cursor, limit: '1000' });
    if (query.types) params.set('types', query.types.join(','));
    if (query.walletId) params.set('walletId', query.walletId);
    if (query.assetId) params.set('assetId', query.assetId);
    if (query.collection) params.set('collection', query.collection);
    const page: { data: EventEnvelope[]; next_cursor: string | null } = await call(
      baseUrl,
      'GET',
      `/api/v1/events?${params}`,
      { session },
    );
    events.push(...page.data);
    cursor = page.next_cursor;
  }
  return events;
}

/** The id of the newest committed event (0 when there is none). */
export async function newestEventId(baseUrl: string, session: Session): Promise<bigint> {
  const events = await eventsAfter(baseUrl, session, 0n);
  return events.length === 0 ? 0n : BigInt(events[events.length - 1].id);
}

/** Follows `next_cursor` through a `{ data, next_cursor }` list. */
export async function allPages<T>(baseUrl: string, session: Session, path: string): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const page: { data: T[]; next_cursor: string | null } = await call(
      baseUrl,
      'GET',
      `${path}${separator}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { session },
    );
    items.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return items;
}
