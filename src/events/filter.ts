// Which events a reader wants: the one definition of matching, used by the REST catch-up, the
// WebSocket replay and webhook catch-up (as SQL, ./reads.ts) and live delivery (in memory, `matches`),
// so all of them agree.
import type { EventType } from '../db/entities/OutboxEvent.ts';

export interface EventFilter {
  types: ReadonlySet<EventType>;
  /** Lowercase address: events whose `from`/`to`/owner it is. Never applied to priceUpdate. */
  wallet?: string;
  assetId?: string;
  collection?: string;
}

/** What live delivery knows of an event. */
export interface PublishedEvent {
  id: number;
  type: EventType;
  assetId: string;
  collectionId: string | null;
  wallets: readonly string[];
  /** The envelope `{ id, type, occurredAt, data }` serialized once for every recipient. */
  json: string;
  /** The gateway's messages of this event, built once each, by matched subscription ids. */
  frames?: Map<string, Buffer>;
}

export function matches(event: PublishedEvent, filter: EventFilter): boolean {
  if (!filter.types.has(event.type)) return false;
  if (filter.assetId !== undefined && event.assetId !== filter.assetId) return false;
  if (filter.collection !== undefined && event.collectionId !== filter.collection) return false;
  if (filter.wallet !== undefined && event.type !== 'priceUpdate' && !event.wallets.includes(filter.wallet)) {
    return false;
  }
  return true;
}
