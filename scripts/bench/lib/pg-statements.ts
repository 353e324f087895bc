// The scale benchmark's statement-level view (`--pg-statements`, PostgreSQL): pg_stat_statements on
// the run's own server (loaded at its start, tracking nested statements and planning), read before
// and after a load; the statements a load ran, per answer, most blocks first. What a load's blocks
// per answer (scale-storage.ts's `ioPerAnswer`) do not say: which statement reads them, and whether
// PostgreSQL plans it again at each run (plans per call) or compiles it (the JIT milliseconds).
import { type PgClient, pg } from '../../lib/untyped.ts';

/** The server settings the view needs (given to the run's own server at its start). */
export const STATEMENT_SETTINGS: Record<string, string> = {
  shared_preload_libraries: 'pg_stat_statements',
  'pg_stat_statements.track': 'all',
  'pg_stat_statements.track_planning': 'on',
  'pg_stat_statements.max': '10000',
};

/** Statements printed per load and ledger. */
const TOP = 6;
/** Characters of a statement's text printed (whitespace folded). */
const TEXT = 110;

interface Statement {
  text: string;
  calls: number;
  plans: number;
  blocksHit: number;
  blocksRead: number;
  execMs: number;
  planMs: number;
  jitMs: number;
}

export type StatementCounters = Map<string, Statement>;

/** The server's `postgres` database, where the extension lives (the service's databases stay as they are). */
const adminUrl = (databaseUrl: string) => {
  const url = new URL(databaseUrl);
  url.pathname = '/postgres';
  return url.toString();
};

async function withAdmin<T>(databaseUrl: string, use: (client: PgClient) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl(databaseUrl) });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** Makes the view readable on a server started with STATEMENT_SETTINGS. */
export async function enableStatements(databaseUrl: string): Promise<void> {
  await withAdmin(databaseUrl, (client) => client.query('create extension if not exists pg_stat_statements'));
}

/** Every statement the database at `databaseUrl` ran so far, by query id and nesting level. */
export async function statementCounters(databaseUrl: string): Promise<StatementCounters> {
  const { rows } = await withAdmin(databaseUrl, (client) =>
    client.query(
      'select s.queryid::text as id, s.toplevel, s.query, s.calls, s.plans, s.shared_blks_hit, ' +
        's.shared_blks_read, s.total_exec_time, s.total_plan_time, ' +
        's.jit_generation_time + s.jit_inlining_time + s.jit_optimization_time + s.jit_emission_time as jit ' +
        'from pg_stat_statements s join pg_database d on d.oid = s.dbid where d.datname = $1',
      [new URL(databaseUrl).pathname.slice(1)],
    ),
  );
  return new Map(
    rows.map((row) => [
      `${row.id}:${row.toplevel}`,
      {
        text: `${row.toplevel ? '' : '(nested) '}${String(row.query).replace(/\s+/g, ' ')}`,
        calls: Number(row.calls),
        plans: Number(row.plans),
        blocksHit: Number(row.shared_blks_hit),
        blocksRead: Number(row.shared_blks_read),
        execMs: Number(row.total_exec_time),
        planMs: Number(row.total_plan_time),
        jitMs: Number(row.jit),
      },
    ]),
  );
}

/**
 * The statements run between two readings, most blocks (hit and read) first, per answer of the load:
 * one line each, "blocks a call, calls and plans an answer, milliseconds a call (planning, JIT), text".
 */
export function statementsPerAnswer(
  before: StatementCounters,
  after: StatementCounters,
  answers: number,
): string[] {
  if (answers === 0) return [];
  const ran = [...after.entries()].flatMap(([key, now]) => {
    const then = before.get(key);
    const calls = now.calls - (then?.calls ?? 0);
    if (calls <= 0) return [];
    return [
      {
        text: now.text,
        calls,
        plans: now.plans - (then?.plans ?? 0),
        blocks: now.blocksHit + now.blocksRead - (then ? then.blocksHit + then.blocksRead : 0),
        read: now.blocksRead - (then?.blocksRead ?? 0),
        execMs: now.execMs - (then?.execMs ?? 0),
        planMs: now.planMs - (then?.planMs ?? 0),
        jitMs: now.jitMs - (then?.jitMs ?? 0),
      },
    ];
  });
  return ran
    .sort((a, b) => b.blocks - a.blocks)
    .slice(0, TOP)
    .map(
      (s) =>
        `  ${(s.blocks / answers).toFixed(1)} blocks an answer (${(s.read / answers).toFixed(1)} read), ` +
        `${(s.calls / answers).toFixed(2)} calls and ${(s.plans / answers).toFixed(2)} plans an answer, ` +
        `${(s.blocks / s.calls).toFixed(1)} blocks and ${(s.execMs / s.calls).toFixed(3)} ms a call ` +
        `(planning ${(s.planMs / s.calls).toFixed(3)}, JIT ${(s.jitMs / s.calls).toFixed(3)}): ` +
        s.text.slice(0, TEXT),
    );
}
