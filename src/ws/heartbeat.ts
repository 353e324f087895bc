// Heartbeats: every WS_HEARTBEAT_MS each connection is pinged; one that did not answer the previous
// ping is terminated, one whose access token expired or whose API key was revoked is closed with
// 4001. Credentials are checked once per API key and beat, however many connections the key holds.
import type { AuthContext } from '../auth/caller.ts';
import { CLOSE, type Connection } from './connection.ts';

/** Whether the credentials still hold (API key not revoked); a failed check (database down) keeps them. */
export type StillValid = (auth: AuthContext) => Promise<boolean>;

export async function beat(connections: Iterable<Connection>, stillValid: StillValid): Promise<void> {
  const now = Date.now() / 1000;
  const checks = new Map<string, Promise<boolean>>();
  const verdicts: Promise<void>[] = [];
  for (const connection of connections) {
    // A connection being closed gets no ping; ws ends its close handshake (or times it out).
    if (connection.closed) continue;
    if (!connection.alive) {
      connection.ws.terminate();
      continue;
    }
    connection.alive = false;
    connection.ws.ping();
    if (connection.auth.expiresAt <= now) {
      connection.end(CLOSE.credentialsExpired, 'access token expired');
      continue;
    }
    let check = checks.get(connection.key);
    if (!check) {
      // A failed check (database down) keeps the connection: the next beat asks again.
      check = stillValid(connection.auth).catch(() => true);
      checks.set(connection.key, check);
    }
    verdicts.push(
      check.then((valid) => {
        if (!valid) connection.end(CLOSE.credentialsExpired, 'credentials revoked');
      }),
    );
  }
  await Promise.all(verdicts);
}
