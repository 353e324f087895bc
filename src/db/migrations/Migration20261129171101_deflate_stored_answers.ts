// Written by hand (issue 34: bytes per holding): the stored answers of existing idempotency records
// take the form new writes give them (src/db/stored-answer.ts): from
// DEFLATE_FROM_BYTES of JSON up, deflated into `response_deflated`, `response_body` null. The JSON
// deflated is the one a replay answered before (SQLite: the stored text; PostgreSQL: the jsonb as
// read), so a retry answers the same after the migration. Down inflates them back. Records expire
// (IDEMPOTENCY_TTL_SECONDS, a day by default), so the table holds at most that long's keyed writes;
// read in batches of BATCH by id.
import { inflateRawSync } from 'node:zlib';
import { Migration } from '@mikro-orm/migrations';
import { databaseKindOf } from '../platform.ts';
import { DEFLATE_FROM_BYTES, storedAnswer } from '../stored-answer.ts';

const BATCH = 500;

export class Migration20261129171101_deflate_stored_answers extends Migration {
  override async up(): Promise<void> {
    const sqlite = databaseKindOf(this.driver.getPlatform()) === 'sqlite';
    const size = sqlite ? 'length(response_body)' : 'octet_length(response_body::text)';
    let after = '';
    for (;;) {
      const rows = await this.execute(
        `select id, response_body from idempotency_record where id > ? and response_body is not null ` +
          `and ${size} >= ? order by id limit ${BATCH}`,
        [after, DEFLATE_FROM_BYTES],
      );
      for (const row of rows) {
        const body = sqlite ? JSON.parse(String(row.response_body)) : row.response_body;
        const answer = storedAnswer(body);
        if (!answer.deflated) continue; // under the threshold once written as JSON.stringify writes it
        await this.execute(
          'update idempotency_record set response_body = null, response_deflated = ? where id = ?',
          [answer.deflated, row.id],
        );
      }
      if (rows.length < BATCH) return;
      after = String(rows[rows.length - 1].id);
    }
  }

  override async down(): Promise<void> {
    const sqlite = databaseKindOf(this.driver.getPlatform()) === 'sqlite';
    for (;;) {
      const rows = await this.execute(
        `select id, response_deflated from idempotency_record where response_deflated is not null limit ${BATCH}`,
      );
      for (const row of rows) {
        const json = inflateRawSync(row.response_deflated as Uint8Array).toString('utf8');
        await this.execute(
          `update idempotency_record set response_body = ${sqlite ? '?' : 'cast(? as jsonb)'}, ` +
            'response_deflated = null where id = ?',
          [json, row.id],
        );
      }
      if (rows.length < BATCH) return;
    }
  }
}
