// The id-keyed lists (listings, offers, auctions, sales, trades, trade refusals, recipes, store
// offers, loot boxes, collections) page through pageById (src/domain/ledger/cursor.ts): newest or
// oldest first, filters kept across pages, every row once, a cursor of another list refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TradeRefusal } from '../../../src/db/entities/TradeRefusal.ts';
import { ValidationError } from '../../../src/domain/errors.ts';
import { type IdOrder, pageById } from '../../../src/domain/ledger/cursor.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import { type LedgerFixture, openLedger } from '../../helpers/ledger-fixtures.ts';

describe.each(DB_KINDS)('pageById on %s', (kind) => {
  let fixture: LedgerFixture;
  // Ids sort as their numbers do; two users refuse; only `usr_a`'s rows are listed.
  const ids = Array.from({ length: 7 }, (_, i) => `trf_${String(i).padStart(28, '0')}`);

  beforeAll(async () => {
    fixture = await openLedger(kind);
    const em = fixture.orm.em.fork();
    for (const [i, id] of ids.entries()) {
      em.create(TradeRefusal, {
        id,
        refuserUserId: i % 3 === 2 ? 'usr_b' : 'usr_a',
        refusedUserId: `usr_${i}`,
        createdAt: new Date(),
      });
    }
    await em.flush();
  });
  afterAll(async () => {
    await fixture?.close();
  });

  async function walk(order: IdOrder, limit: number): Promise<string[][]> {
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const result = await pageById(fixture.orm.em.fork(), TradeRefusal, [{ refuserUserId: 'usr_a' }], {
        list: 'trade-refusals',
        order,
        limit,
        cursor,
      });
      pages.push(result.data.map((row) => row.id));
      cursor = result.next_cursor ?? undefined;
    } while (cursor !== undefined);
    return pages;
  }

  it('pages newest first and oldest first, each matching row once, the filter kept on every page', async () => {
    const mine = ids.filter((_, i) => i % 3 !== 2);
    expect(await walk('newest', 2)).toEqual([[mine[4], mine[3]], [mine[2], mine[1]], [mine[0]]]);
    expect(await walk('oldest', 3)).toEqual([mine.slice(0, 3), mine.slice(3, 5)]);
  });

  it("refuses another list's cursor with a validation error", async () => {
    const first = await pageById(fixture.orm.em.fork(), TradeRefusal, [], {
      list: 'trade-refusals',
      order: 'newest',
      limit: 1,
      cursor: undefined,
    });
    const request = {
      list: 'recipes',
      order: 'oldest' as const,
      limit: 1,
      cursor: first.next_cursor ?? undefined,
    };
    await expect(pageById(fixture.orm.em.fork(), TradeRefusal, [], request)).rejects.toBeInstanceOf(
      ValidationError,
    );
  });
});
