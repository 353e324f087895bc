// Issue 34: Migration20261129171101_deflate_stored_answers gives the idempotency records written
// before it the form new writes have (src/db/stored-answer.ts): an answer of DEFLATE_FROM_BYTES of
// JSON or more deflated into `response_deflated`, a smaller one left as JSON; a retry replays the
// same answer after it; down inflates them back. On both databases, from the schema just before it.
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/db/database.ts';
import { migrate } from '../../../src/db/orm.ts';
import { DEFLATE_FROM_BYTES } from '../../../src/db/stored-answer.ts';
import { createIdempotency, type IdempotencyKey } from '../../../src/domain/ledger/idempotency.ts';
import { DB_KINDS, freshDatabase } from '../../helpers/db.ts';

const BEFORE = 'Migration20261129171000_drop_sqlite_foreign_key_indexes';

const LARGE = {
  id: 'op_large',
  nfts: Array.from({ length: 20 }, (_, index) => ({
    id: `nft_${index}`,
    name: `Item ${index}`,
    metadata: {
      image: 'https://cdn.example.com/item.png',
      attributes: [{ trait_type: 'level', value: index }],
    },
  })),
};
const SMALL = { id: 'tr_small', amount: '5' };

describe.each(DB_KINDS)('stored answers deflated by their migration on %s', (kind) => {
  it('deflates the large answers only, replays them unchanged, and inflates them back down', async () => {
    expect(JSON.stringify(LARGE).length).toBeGreaterThanOrEqual(DEFLATE_FROM_BYTES);
    const database = await freshDatabase(kind);
    const handle = await openDatabase(database);
    const { orm } = handle;
    try {
      await orm.migrator.up({ to: BEFORE });
      const connection = orm.em.getConnection();
      const sqlite = kind === 'sqlite';
      const now = Date.now();
      const time = (ms: number) => (sqlite ? ms : new Date(ms).toISOString());
      for (const [id, body] of [
        ['usr_1:mintBatch:large', LARGE],
        ['usr_1:createTransfer:small', SMALL],
      ] as const)
        await connection.execute(
          'insert into idempotency_record (id, request_hash, status, response_body, response_headers, created_at, expires_at) values (?, ?, ?, ?, ?, ?, ?)',
          [
            id,
            `hash-${id}`,
            201,
            JSON.stringify(body),
            JSON.stringify({ Location: '/x' }),
            time(now),
            time(now + 3_600_000),
          ],
        );
      // The migrations under test run first; later ones may follow them.
      expect((await migrate(orm)).slice(0, 2)).toEqual([
        'Migration20261129171100_idempotency_deflated',
        'Migration20261129171101_deflate_stored_answers',
      ]);
      const stored = async () =>
        Object.fromEntries(
          (
            await connection.execute<
              { id: string; response_body: unknown; response_deflated: Uint8Array | null }[]
            >('select id, response_body, response_deflated from idempotency_record order by id')
          ).map((row) => [row.id, row]),
        );
      const after = await stored();
      expect(after['usr_1:mintBatch:large'].response_body).toBeNull();
      expect(after['usr_1:mintBatch:large'].response_deflated?.length).toBeLessThan(
        JSON.stringify(LARGE).length / 3,
      );
      expect(after['usr_1:createTransfer:small'].response_deflated).toBeNull();

      const idempotency = createIdempotency(handle, 3600);
      for (const [id, body] of [
        ['usr_1:mintBatch:large', LARGE],
        ['usr_1:createTransfer:small', SMALL],
      ] as const) {
        const key: IdempotencyKey = { id, requestHash: `hash-${id}`, expiresAt: (at) => at };
        const record = await idempotency.find(key);
        expect(record).toBeDefined();
        const replay = idempotency.replay(record as NonNullable<typeof record>, key);
        expect(replay).toEqual({ status: 201, body, headers: { Location: '/x' }, replayed: true });
        // Byte for byte where the text was kept (SQLite; PostgreSQL's jsonb orders keys its own way).
        if (sqlite) expect(JSON.stringify(replay.body)).toBe(JSON.stringify(body));
      }

      await orm.migrator.down({ to: BEFORE });
      const down = await connection.execute<{ id: string; response_body: unknown }[]>(
        'select id, response_body from idempotency_record order by id',
      );
      const parse = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value);
      expect(down.map((row) => [row.id, parse(row.response_body)])).toEqual([
        ['usr_1:createTransfer:small', SMALL],
        ['usr_1:mintBatch:large', LARGE],
      ]);
    } finally {
      await handle.close();
      await database.drop();
    }
  });
});
