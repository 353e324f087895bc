import { describe, expect, it } from 'vitest';
import type { PublishedEvent } from '../../../src/events/filter.ts';
import { RecentEvents } from '../../../src/webhooks/recent-events.ts';

const W = '0x00000000000000000000000000000000000000a1';

function event(id: number, type: PublishedEvent['type'] = 'newTransfer'): PublishedEvent {
  return {
    id,
    type,
    assetId: 'gold',
    collectionId: null,
    wallets: [W],
    json: `{"id":"${id}","type":"${type}","occurredAt":"2026-11-28T10:00:00.000Z","data":{}}`,
  };
}

const transfers = { types: new Set(['newTransfer'] as const) };
const ids = (answer: { events: { id: number }[] }) => answer.events.map((e) => e.id);

describe('the relay recent events kept for the webhook fast path', () => {
  it('covers every position from just before the first hand-over on', () => {
    const recent = new RecentEvents();
    expect(recent.covers(0)).toBe(false);
    expect(recent.add([])).toEqual([]);
    const added = recent.add([event(5), event(6)]);
    expect(added.map((e) => [e.id, e.source, e.occurredAt])).toEqual([
      [5, 'relay', Date.parse('2026-11-28T10:00:00.000Z')],
      [6, 'relay', Date.parse('2026-11-28T10:00:00.000Z')],
    ]);
    expect(recent.covers(3)).toBe(false);
    expect(recent.covers(4)).toBe(true);
    expect(recent.lastId).toBe(6);
  });

  it('answers the wanted events after a position, up to a limit, with how far the answer reaches', () => {
    const recent = new RecentEvents();
    recent.add([event(1), event(2, 'priceUpdate'), event(3), event(4), event(5, 'priceUpdate')]);
    expect(recent.matching(1, transfers)).toMatchObject({ upTo: 5 });
    expect(ids(recent.matching(1, transfers))).toEqual([3, 4]);
    expect(ids(recent.matching(0, transfers, 2))).toEqual([1, 3]);
    expect(recent.matching(0, transfers, 2).upTo).toBe(3);
    expect(recent.matching(5, transfers)).toEqual({ events: [], upTo: 5 });
  });

  it('keeps at most twice 5000 events, trimmed to the newest 5000, and starts afresh if ids go back', () => {
    const recent = new RecentEvents();
    recent.add(Array.from({ length: 10_000 }, (_, i) => event(i + 1)));
    expect(recent.covers(0)).toBe(true);
    recent.add([event(10_001)]);
    expect(recent.covers(5000)).toBe(false);
    expect(recent.covers(5001)).toBe(true);
    expect(ids(recent.matching(5001, transfers, 1))).toEqual([5002]);
    recent.add([event(7)]);
    expect(recent.covers(6)).toBe(true);
    expect(recent.covers(5)).toBe(false);
    expect(recent.lastId).toBe(7);
  });
});
