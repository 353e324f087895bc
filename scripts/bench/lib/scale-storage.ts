// The scale benchmark's view of the database behind the service's back (read-only): row counts, the
// bytes of every table and index (PostgreSQL: pg_relation_size per relation, TOAST counted with its
// table; SQLite: the dbstat virtual table, pages in use), so each stage says where the bytes go.
import type { Service } from '../../lib/service.ts';
import { BetterSqlite3, pg } from '../../lib/untyped.ts';

export interface Relation {
  name: string;
  /** The table it belongs to (itself for a table). */
  table: string;
  kind: 'table' | 'index';
  bytes: number;
}

export interface Sizes {
  holdings: number;
  events: number;
  newestEvent: number;
  /** Every table and index of the service's schema (pages in use; PostgreSQL: dead rows included). */
  databaseBytes: number;
  /** outbox_event with its indexes. */
  eventBytes: number;
  relations: Relation[];
}

const COUNTS =
  'select (select count(*) from holding) as holdings, (select count(*) from outbox_event) as events, ' +
  '(select max(id) from outbox_event) as newest';

export async function sizes(service: Service): Promise<Sizes> {
  return service.kind === 'postgres' ? postgresSizes(service) : sqliteSizes(service);
}

async function postgresSizes(service: Service): Promise<Sizes> {
  const client = new pg.Client({ connectionString: service.env.DATABASE_URL });
  await client.connect();
  try {
    const query = async (sql: string) =>
      ((await client.query(sql)) as unknown as { rows: Record<string, string | number>[] }).rows;
    const [count] = await query(COUNTS);
    // A table's bytes: its heap, free-space and visibility maps, and its TOAST table with its index.
    // A partition's (the outbox's: src/db/outbox-partitions.ts) count as its partitioned table's.
    const rows = await query(`
      select c.relname as name, coalesce(p.relname, t.relname, c.relname) as table_name,
             case when c.relkind = 'i' then 'index' else 'table' end as kind,
             case when c.relkind = 'i' then pg_relation_size(c.oid)
                  else pg_total_relation_size(c.oid) - pg_indexes_size(c.oid) end as bytes
      from pg_class c
      left join pg_index i on i.indexrelid = c.oid
      left join pg_class t on t.oid = i.indrelid
      left join pg_inherits h on h.inhrelid = coalesce(t.oid, c.oid)
      left join pg_class p on p.oid = h.inhparent and p.relkind = 'p'
      where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'i')`);
    return summed(count, rows);
  } finally {
    await client.end();
  }
}

function sqliteSizes(service: Service): Sizes {
  const db = new BetterSqlite3(service.env.SQLITE_PATH, { timeout: 5000 }) as unknown as {
    prepare(sql: string): { get(): Record<string, number>; all(): Record<string, string | number>[] };
    close(): void;
  };
  try {
    const count = db.prepare(COUNTS).get();
    // dbstat counts the pages of each b-tree as the reader sees them (the WAL's newer pages included).
    const rows = db
      .prepare(`
        select s.name as name, coalesce(m.tbl_name, s.name) as table_name,
               case when m.type = 'index' then 'index' else 'table' end as kind, sum(s.pgsize) as bytes
        from dbstat s left join sqlite_master m on m.name = s.name
        group by s.name`)
      .all();
    return summed(count, rows);
  } finally {
    db.close();
  }
}

function summed(count: Record<string, string | number>, rows: Record<string, string | number>[]): Sizes {
  const relations: Relation[] = rows
    .map((row) => ({
      name: String(row.name),
      table: String(row.table_name),
      kind: row.kind === 'index' ? ('index' as const) : ('table' as const),
      bytes: Number(row.bytes),
    }))
    .sort((a, b) => b.bytes - a.bytes);
  const total = (keep: (relation: Relation) => boolean) =>
    relations.filter(keep).reduce((sum, relation) => sum + relation.bytes, 0);
  return {
    holdings: Number(count.holdings),
    events: Number(count.events),
    newestEvent: Number(count.newest ?? 0),
    databaseBytes: total(() => true),
    eventBytes: total((relation) => relation.table === 'outbox_event'),
    relations,
  };
}

/** Bytes per table, its rows and its indexes apart, largest first. */
export function byTable(relations: Relation[]): { table: string; rows: number; indexes: number }[] {
  const tables = new Map<string, { table: string; rows: number; indexes: number }>();
  for (const relation of relations) {
    const entry = tables.get(relation.table) ?? { table: relation.table, rows: 0, indexes: 0 };
    if (relation.kind === 'index') entry.indexes += relation.bytes;
    else entry.rows += relation.bytes;
    tables.set(relation.table, entry);
  }
  return [...tables.values()].sort((a, b) => b.rows + b.indexes - (a.rows + a.indexes));
}

/**
 * PostgreSQL's counters of the service's database and of the server's WAL (pg_stat_database,
 * pg_stat_wal): their difference over a load, per answer, says where a request's time goes as the
 * ledger grows (pages read from outside shared_buffers, WAL bytes and full-page images). The WAL
 * counters are the whole server's: other databases' writes count too.
 */
export interface IoCounters {
  blocksRead: number;
  blocksHit: number;
  walBytes: number;
  walFullPages: number;
}

export async function ioCounters(service: Service): Promise<IoCounters | null> {
  if (service.kind !== 'postgres') return null;
  const client = new pg.Client({ connectionString: service.env.DATABASE_URL });
  await client.connect();
  try {
    const { rows } = (await client.query(
      'select d.blks_read, d.blks_hit, w.wal_bytes, w.wal_fpi from pg_stat_database d, pg_stat_wal w ' +
        'where d.datname = current_database()',
    )) as unknown as { rows: Record<string, string>[] };
    return {
      blocksRead: Number(rows[0].blks_read),
      blocksHit: Number(rows[0].blks_hit),
      walBytes: Number(rows[0].wal_bytes),
      walFullPages: Number(rows[0].wal_fpi),
    };
  } finally {
    await client.end();
  }
}

/** "blocks read 1.2, hit 40, WAL 3,100 B (0.3 full pages)" per answer between two readings. */
export function ioPerAnswer(before: IoCounters | null, after: IoCounters | null, answers: number): string {
  if (!before || !after || answers === 0) return '';
  const per = (value: number) => (value / answers).toFixed(1);
  return (
    `blocks read ${per(after.blocksRead - before.blocksRead)}, hit ${per(after.blocksHit - before.blocksHit)}, ` +
    `WAL ${Math.round((after.walBytes - before.walBytes) / answers)} B ` +
    `(${per(after.walFullPages - before.walFullPages)} full pages)`
  );
}
