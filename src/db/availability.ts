// Which database errors mean "the database is away" (a 503 the client may retry) rather than a bug
// (a 500), and whether a statement may have reached the server before the connection failed (then a
// write's outcome is unknown). The ORM copies the driver error's fields (code, message) onto its own
// exception, so both are read the same way.

/** Could not get a connection at all: nothing was sent. */
const NOT_CONNECTED_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P03', // cannot_connect_now (starting up, shutting down)
  '53300', // too_many_connections
  '08001', // sqlclient_unable_to_establish_sqlconnection
  '08004', // sqlserver_rejected_establishment_of_sqlconnection
  'SQLITE_BUSY', // the file stayed locked past busy_timeout
]);

/** The connection broke while in use: a statement (or COMMIT) may have been applied. */
const LOST_CODES = new Set([
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57P01', // admin_shutdown (pg_terminate_backend)
  '57P02', // crash_shutdown
  '08000', // connection_exception
  '08003', // connection_does_not_exist
  '08006', // connection_failure
  '08007', // transaction_resolution_unknown
]);

const NOT_CONNECTED_MESSAGES = [
  /timeout exceeded when trying to connect/i,
  /Connection terminated due to connection timeout/i,
  /database is locked/i,
];
const LOST_MESSAGES = [
  /Connection terminated/i,
  /Client has encountered a connection error and is not queryable/i,
  /Client was closed and is not queryable/i,
  /terminating connection due to administrator command/i,
];

/**
 * Set on an error raised while getting a pooled connection (src/db/orm.ts): no statement was sent.
 * A string key, because the ORM copies an error's own string-keyed fields onto its exception.
 */
export const NOT_CONNECTED = 'gatsNotConnected';

export type DatabaseFailure = 'not-connected' | 'connection-lost';

function classify(error: object): DatabaseFailure | null {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (NOT_CONNECTED_CODES.has(code)) return 'not-connected';
    if (LOST_CODES.has(code)) return 'connection-lost';
  }
  if (typeof message === 'string') {
    if (NOT_CONNECTED_MESSAGES.some((pattern) => pattern.test(message))) return 'not-connected';
    if (LOST_MESSAGES.some((pattern) => pattern.test(message))) return 'connection-lost';
  }
  return null;
}

/** How the database failed, or null when `error` is not a database availability failure. */
export function databaseFailure(error: unknown): DatabaseFailure | null {
  let found: DatabaseFailure | null = null;
  let connecting = false;
  for (let current = error, depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    connecting ||= (current as Record<string, unknown>)[NOT_CONNECTED] === true;
    found ??= classify(current);
    current = (current as { cause?: unknown }).cause;
  }
  return found && connecting ? 'not-connected' : found;
}
