// The embedded state (SQLite database, its WAL and shared-memory files, the generated secret.key) is
// readable only by the service's user (13.14: they were created 0644 in a 0755 directory, so any
// local user could copy the ledger, the sealed keys and the key that unseals them).
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';

/** Creates `dir` (and missing parents) as 0700; an existing directory is left as its owner set it. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/**
 * Creates `file` empty as 0600 when missing, so whatever opens it next (SQLite) starts from a private
 * file instead of one made under the process umask; an existing file loses any group or other
 * permission (files made by earlier versions).
 */
export function ensurePrivateFile(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  restrictToOwner(file);
}

/** Drops group and other permissions from an existing file; a missing one is ignored. */
export function restrictToOwner(file: string): void {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    return;
  }
  if (mode & 0o077) chmodSync(file, mode & 0o700);
}
