// Issue 34 (bytes per holding): an idempotency record's answer as the stores keep it. An answer of
// DEFLATE_FROM_BYTES of JSON or more is kept deflated (raw DEFLATE, node:zlib) in `response_deflated`
// and `response_body` stays null: a batch mint's 201 of 100 items, ~47 KB of JSON repeating the same
// fields, deflates to ~3 KB. A smaller answer is kept as JSON in `response_body`, as before: deflating
// ~300 B saves ~100 B for ~10 µs of CPU on every keyed write. A replay parses the same JSON text either
// way, so it answers what the first try answered.
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/** Answers of at least this many bytes of JSON are stored deflated. */
export const DEFLATE_FROM_BYTES = 1024;

/**
 * An idempotency record as a store or a read hands it back (the columns of its read; PostgreSQL's
 * gats_apply_plan returns a replay's as a JSON object with the same keys, `response_deflated` in
 * base64): what `answerOf` and a replay need.
 */
export interface StoredRecord {
  request_hash: string;
  status: number;
  /** JSON text (SQLite) or parsed (PostgreSQL's jsonb); null when the answer is deflated. */
  response_body: unknown;
  /** Bytes (a table's column), base64 text (the function's replay), or null. */
  response_deflated: unknown;
  /** JSON text or parsed, or null. */
  response_headers: unknown;
}

/** A record from a row or object holding its columns, each as its driver returns it. */
export function storedRecordOf(row: Record<string, unknown>): StoredRecord {
  return {
    request_hash: String(row.request_hash),
    status: Number(row.status),
    response_body: row.response_body ?? null,
    response_deflated: row.response_deflated ?? null,
    response_headers: row.response_headers ?? null,
  };
}

/** The two columns of a stored answer: one is null. */
export interface StoredAnswer {
  /** `response_body`: the answer's JSON, when shorter than DEFLATE_FROM_BYTES. */
  json: string | null;
  /** `response_deflated`: the answer's JSON deflated, otherwise. */
  deflated: Buffer | null;
}

export function storedAnswer(body: unknown): StoredAnswer {
  const json = JSON.stringify(body);
  if (Buffer.byteLength(json) < DEFLATE_FROM_BYTES) return { json, deflated: null };
  return { json: null, deflated: deflateRawSync(json) };
}

/**
 * The answer of a stored record: its `response_deflated` (bytes as read from a table, or base64 as
 * PostgreSQL's gats_apply_plan returns a replay's record) inflated and parsed, else its
 * `response_body` through `json` (text on SQLite, parsed already from PostgreSQL's jsonb).
 */
export function answerOf(
  record: Pick<StoredRecord, 'response_body' | 'response_deflated'>,
  json: (value: unknown) => unknown,
): unknown {
  const deflated = record.response_deflated;
  if (deflated == null) return json(record.response_body);
  const bytes = typeof deflated === 'string' ? Buffer.from(deflated, 'base64') : (deflated as Uint8Array);
  return JSON.parse(inflateRawSync(bytes).toString('utf8'));
}
