// The relay's own PostgreSQL connection, outside the ORM's pool. Under write load every pooled
// connection is busy with a request's transaction and more requests queue for one; a relay read
// waiting in that queue would hold back the delivery of events already committed by as long as the
// queue takes to drain. A connection of its own answers the relay at once, and a wait for the
// writers in flight (outbox-lock.ts) holds nothing but the relay.
import type { Orm } from '../db/orm.ts';
import type { Logger } from '../observability/logger.ts';

/** The members of a `pg` client used here (the package is the ORM driver's). */
interface PgClient {
  connect(): Promise<void>;
  query<R>(query: { name?: string; text: string; values: readonly unknown[] }): Promise<{ rows: R[] }>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): void;
}

/** The members of the ORM's `pg` pool used here: its client class and connection options. */
interface PgPool {
  Client: new (options: unknown) => PgClient;
  options: Record<string, unknown>;
}

export interface RelayConnection {
  /** Runs one statement (`$1` placeholders); `name` prepares it once per connection. */
  query<R>(text: string, values: readonly unknown[], name?: string): Promise<R[]>;
  close(): Promise<void>;
}

/**
 * A client with the ORM pool's connection options (same server, credentials, TLS), connected on
 * first use and replaced after an error; nothing is retried here (the relay retries from where it was).
 */
export async function pgRelayConnection(orm: Orm, logger: Logger): Promise<RelayConnection> {
  const pool = (await orm.em.getConnection().getNativeClient()) as PgPool;
  let client: Promise<PgClient> | null = null;
  let closed = false;

  const open = (): Promise<PgClient> => {
    // The pool's own options object, as the pool passes it (its password is not enumerable).
    const fresh = new pool.Client(pool.options);
    const opening = fresh.connect().then(() => fresh);
    fresh.on('error', (error) => {
      logger.warn({ err: error }, 'relay database connection error');
      if (client === opening) client = null;
    });
    opening.catch(() => {
      if (client === opening) client = null;
    });
    return opening;
  };

  return {
    async query<R>(text: string, values: readonly unknown[], name?: string): Promise<R[]> {
      if (closed) throw new Error('the relay connection is closed');
      client ??= open();
      const current = client;
      try {
        return (await (await current).query<R>({ name, text, values })).rows;
      } catch (error) {
        // A broken connection is replaced; a failed statement leaves a working one as it is.
        if (client === current && !(error instanceof Error && 'severity' in error)) {
          client = null;
          void current.then((broken) => broken.end()).catch(() => undefined);
        }
        throw error;
      }
    },
    async close() {
      closed = true;
      const current = client;
      client = null;
      if (current) await current.then((open) => open.end()).catch(() => undefined);
    },
  };
}
