// The relay's own PostgreSQL connection, outside the ORM's pool. Under write load every pooled
// connection is busy with a request's transaction and more requests queue for one; a relay read
// waiting in that queue would hold back the delivery of events already committed by as long as the
// queue takes to drain. A connection of its own answers the relay at once, and a wait for the
// writers in flight (outbox-lock.ts) holds nothing but the relay.
import { POSTGRES_PINNED_SESSION } from '../db/dialect.ts';
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

/** How long a statement may take before the connection is presumed dead and replaced. */
const DEFAULT_TIMEOUT_MS = 15_000;

export interface RelayConnection {
  /**
   * Runs one statement (`$1` placeholders); `name` prepares it once per connection. A statement
   * that has not answered within `timeoutMs` fails, and the connection is replaced (a connection
   * that died silently must not stop the relay).
   */
  query<R>(text: string, values: readonly unknown[], name?: string, timeoutMs?: number): Promise<R[]>;
  close(): Promise<void>;
}

/**
 * A client with the ORM pool's connection options (same server, credentials, TLS), connected on
 * first use and replaced after an error; nothing is retried here (the relay retries from where it was).
 * Its session reads with ordered index scans and generic plans only (POSTGRES_PINNED_SESSION).
 */
export async function pgRelayConnection(orm: Orm, logger: Logger): Promise<RelayConnection> {
  const pool = (await orm.em.getConnection().getNativeClient()) as PgPool;
  let client: Promise<PgClient> | null = null;
  let closed = false;

  const open = (): Promise<PgClient> => {
    // The pool's own options object, as the pool passes it (its password is not enumerable).
    const fresh = new pool.Client(pool.options);
    const opening = fresh.connect().then(async () => {
      try {
        await fresh.query({ text: POSTGRES_PINNED_SESSION, values: [] });
      } catch (error) {
        await fresh.end().catch(() => undefined);
        throw error;
      }
      return fresh;
    });
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
    async query<R>(
      text: string,
      values: readonly unknown[],
      name?: string,
      timeoutMs = DEFAULT_TIMEOUT_MS,
    ): Promise<R[]> {
      if (closed) throw new Error('the relay connection is closed');
      client ??= open();
      const current = client;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`relay statement unanswered after ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
      try {
        return await Promise.race([
          current.then((open) => open.query<R>({ name, text, values })),
          timeout,
        ]).then((result) => result.rows);
      } catch (error) {
        // A broken connection is replaced; a failed statement leaves a working one as it is.
        if (client === current && !(error instanceof Error && 'severity' in error)) {
          client = null;
          void current.then((broken) => broken.end()).catch(() => undefined);
        }
        throw error;
      } finally {
        clearTimeout(timer);
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
