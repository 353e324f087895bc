// The replay slots (src/ws/replay.ts): at most one replay per connection and a few per API key and
// per user run at once (finding 13.2); the others wait and start in the order they asked.
import { describe, expect, it } from 'vitest';
import { ReplaySlots } from '../../../src/ws/replay.ts';

const scopes = (connection: string, key: string, user: string): [string, number][] => [
  [`conn:${connection}`, 1],
  [`key:${key}`, 2],
  [`user:${user}`, 3],
];

/** Asks for a slot and records when it is granted. */
function ask(slots: ReplaySlots, granted: string[], name: string, wanted: [string, number][]) {
  return slots.acquire(wanted).then((release) => {
    granted.push(name);
    return release;
  });
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('replay slots', () => {
  it('13.2: runs one replay per connection, two per API key and three per user, the rest in order', async () => {
    const slots = new ReplaySlots();
    const granted: string[] = [];
    const a1 = ask(slots, granted, 'a1', scopes('1', 'k1', 'u'));
    const a2 = ask(slots, granted, 'a2', scopes('1', 'k1', 'u')); // same connection: waits for a1
    const b1 = ask(slots, granted, 'b1', scopes('2', 'k1', 'u'));
    const c1 = ask(slots, granted, 'c1', scopes('3', 'k1', 'u')); // third on key k1: waits
    const d1 = ask(slots, granted, 'd1', scopes('4', 'k2', 'u')); // third for user u
    const e1 = ask(slots, granted, 'e1', scopes('5', 'k2', 'u')); // fourth for user u: waits
    const other = ask(slots, granted, 'other', scopes('6', 'k3', 'v')); // another user: at once
    await settle();
    expect(granted).toEqual(['a1', 'b1', 'd1', 'other']);
    expect(slots.queued).toBe(3);

    (await a1)(); // frees connection 1, key k1 and a place for user u: a2 is first in line
    await settle();
    expect(granted).toEqual(['a1', 'b1', 'd1', 'other', 'a2']);
    (await b1)();
    await settle();
    expect(granted.at(-1)).toBe('c1');
    (await d1)();
    await settle();
    expect(granted.at(-1)).toBe('e1');
    expect(slots.queued).toBe(0);
    for (const release of await Promise.all([a2, c1, e1, other])) release();
    // Everything given back: a fresh connection of user u starts at once.
    const again: string[] = [];
    await ask(slots, again, 'f1', scopes('7', 'k1', 'u'));
    expect(again).toEqual(['f1']);
  });
});
