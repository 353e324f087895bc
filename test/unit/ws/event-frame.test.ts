// Live events are written to sockets as frames the gateway builds itself (src/ws/frames.ts): each
// must be exactly the frame ws would send, for every payload length class of RFC 6455 (7-bit,
// 16-bit and 64-bit lengths), and read back by ws's own parser as the same text message.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { PublishedEvent } from '../../../src/events/filter.ts';
import { eventFrame } from '../../../src/ws/frames.ts';

/** ws's frame parser (exported by the package at run time; its type definitions omit it). */
const { Receiver } = createRequire(import.meta.url)('ws') as {
  Receiver: new (options: {
    isServer: boolean;
  }) => {
    on(event: 'message', listener: (data: Buffer, isBinary: boolean) => void): void;
    write(chunk: Buffer): void;
  };
};

function event(size: number): PublishedEvent {
  const envelope = {
    id: '7',
    type: 'priceUpdate',
    occurredAt: '2026-11-22T09:30:00.000Z',
    data: { note: 'é'.repeat(size) },
  };
  return {
    id: 7,
    type: 'priceUpdate',
    assetId: 'a',
    collectionId: null,
    wallets: [],
    json: JSON.stringify(envelope),
  };
}

/** Parses `frame` with ws's receiver (as a client would) and returns the messages it yields. */
function parse(frame: Buffer): { text: string; isBinary: boolean }[] {
  const messages: { text: string; isBinary: boolean }[] = [];
  const receiver = new Receiver({ isServer: false });
  receiver.on('message', (data: Buffer, isBinary: boolean) =>
    messages.push({ text: String(data), isBinary }),
  );
  receiver.write(frame);
  return messages;
}

describe('event frames', () => {
  for (const size of [0, 20, 60, 30_000, 40_000]) {
    it(`frames a message with ${size} two-byte characters as one unmasked text frame`, () => {
      const published = event(size);
      const frame = eventFrame(published, 'sub_000000000001');
      const expected = `{"subscriptionIds":["sub_000000000001"],${published.json.slice(1)}`;
      expect(parse(frame)).toEqual([{ text: expected, isBinary: false }]);
      expect(JSON.parse(expected).subscriptionIds).toEqual(['sub_000000000001']);
    });
  }

  it('builds each distinct message once per event and reuses it', () => {
    const published = event(10);
    const one = eventFrame(published, 'sub_000000000001');
    expect(eventFrame(published, 'sub_000000000001')).toBe(one);
    const two = eventFrame(published, 'sub_000000000001","sub_000000000002');
    expect(two).not.toBe(one);
    expect(JSON.parse(parse(two)[0].text).subscriptionIds).toEqual(['sub_000000000001', 'sub_000000000002']);
  });
});
