// A PostgreSQL primary and a streaming replica of its own, made by the test in a temporary folder
// (the machine's server allows no replication connections): initdb, a replication line in
// pg_hba.conf, pg_basebackup -R -X stream, each server on a free loopback port, run as the `postgres`
// user when the test runs as root. `available()` says why not when the binaries are missing.
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const ROOT = '/usr/lib/postgresql';

/** The binaries folder of the newest installed PostgreSQL, or null. */
function binaries(): string | null {
  if (!existsSync(ROOT)) return null;
  const versions = readdirSync(ROOT)
    .filter((name) => existsSync(path.join(ROOT, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? path.join(ROOT, versions[0], 'bin') : null;
}

/** Why a primary and replica cannot be made here (null: they can). */
export function replicaUnavailable(): string | null {
  if (binaries() === null) return `no PostgreSQL server binaries (initdb) under ${ROOT}`;
  if (process.getuid?.() === 0) {
    try {
      execFileSync('id', ['postgres'], { stdio: 'ignore' });
    } catch {
      return 'running as root and there is no `postgres` user to run the servers as';
    }
  }
  return null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface ReplicaPair {
  primaryUrl(database?: string): string;
  replicaUrl(database?: string): string;
  /** Asynchronous (as the ones below): the event loop of an app under test in this process keeps serving. */
  stopReplica(): Promise<void>;
  startReplica(): Promise<void>;
  /** Runs SQL on the replica through psql (e.g. `select pg_wal_replay_pause()`); its rows, unaligned. */
  onReplica(sql: string): Promise<string>;
  onPrimary(sql: string, database?: string): Promise<string>;
  close(): void;
}

export async function startReplicaPair(): Promise<ReplicaPair> {
  const bin = binaries();
  if (!bin) throw new Error(replicaUnavailable() ?? 'no PostgreSQL');
  const root = process.getuid?.() === 0;
  const work = mkdtempSync(path.join(tmpdir(), 'gats-replica-'));
  chmodSync(work, 0o777);
  if (root) execFileSync('chown', ['postgres', work]);
  const run = (program: string, args: string[]) =>
    execFileSync(
      root ? 'runuser' : path.join(bin, program),
      root ? ['-u', 'postgres', '--', path.join(bin, program), ...args] : args,
      {
        cwd: work,
        stdio: ['ignore', 'pipe', 'pipe'],
        encoding: 'utf8',
      },
    );
  const runAsync = async (program: string, args: string[]) =>
    (
      await execFileAsync(
        root ? 'runuser' : path.join(bin, program),
        root ? ['-u', 'postgres', '--', path.join(bin, program), ...args] : args,
        { cwd: work, encoding: 'utf8' },
      )
    ).stdout;
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const primaryDir = path.join(work, 'p');
  const replicaDir = path.join(work, 'r');
  const serverOptions = (port: number) =>
    `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${work} -c fsync=off`;
  const start = (dir: string, port: number) =>
    run('pg_ctl', ['-D', dir, '-l', `${dir}.log`, '-w', '-o', serverOptions(port), 'start']);
  const stop = (dir: string) => run('pg_ctl', ['-D', dir, '-m', 'fast', '-w', 'stop']);
  run('initdb', ['-D', primaryDir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  appendFileSync(path.join(primaryDir, 'pg_hba.conf'), 'host replication all 127.0.0.1/32 trust\n');
  start(primaryDir, primaryPort);
  run('pg_basebackup', [
    '-h',
    '127.0.0.1',
    '-p',
    String(primaryPort),
    '-U',
    'postgres',
    '-D',
    replicaDir,
    '-R',
    '-X',
    'stream',
  ]);
  start(replicaDir, replicaPort);
  let replicaRunning = true;
  const psql = async (port: number, sql: string, database = 'postgres') =>
    (
      await runAsync('psql', [
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        'postgres',
        '-d',
        database,
        '-At',
        '-c',
        sql,
      ])
    ).trim();
  const url = (port: number, database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    primaryUrl: (database) => url(primaryPort, database),
    replicaUrl: (database) => url(replicaPort, database),
    async stopReplica() {
      await runAsync('pg_ctl', ['-D', replicaDir, '-m', 'fast', '-w', 'stop']);
      replicaRunning = false;
    },
    async startReplica() {
      await runAsync('pg_ctl', [
        '-D',
        replicaDir,
        '-l',
        `${replicaDir}.log`,
        '-w',
        '-o',
        serverOptions(replicaPort),
        'start',
      ]);
      replicaRunning = true;
    },
    onReplica: (sql) => psql(replicaPort, sql),
    onPrimary: (sql, database) => psql(primaryPort, sql, database),
    close() {
      try {
        if (replicaRunning) stop(replicaDir);
      } finally {
        try {
          stop(primaryDir);
        } finally {
          rmSync(work, { recursive: true, force: true });
        }
      }
    },
  };
}
