// What the economy's HTTP tests (test/integration/economy/) call the running app with: a write as a
// user (with an Idempotency-Key when given), a read that bypasses the read cache, and the newest
// event id (to read the events a step wrote after it).
import { expect } from 'vitest';
import type { TestApp } from './app.ts';
import type { HttpUser } from './ledger-fixtures.ts';

export function economyHttp(t: () => TestApp, reader: () => HttpUser) {
  const call = (user: HttpUser, method: string, path: string, body?: unknown, key?: string) =>
    t().http(method, path, {
      body,
      headers: { ...user.headers, ...(key ? { 'idempotency-key': key } : {}) },
    });
  const read = async (path: string) => {
    const got = await t().http('GET', path, {
      headers: { ...reader().headers, 'cache-control': 'no-cache' },
    });
    expect(got.status, got.text).toBe(200);
    return got.body;
  };
  const lastEventId = async () => {
    let after = '0';
    for (;;) {
      const page = await read(`/api/v1/events?after=${after}&limit=100`);
      if (page.data.length === 0) return after;
      after = page.data[page.data.length - 1].id;
    }
  };
  return { call, read, lastEventId };
}
