// A PostgreSQL primary and a streaming replica of its own, made by the test in a temporary folder
// (the machine's server allows no replication connections): initdb, a replication line in
// pg_hba.conf, pg_basebackup -R -X stream, each server on a free loopback port, run as the `postgres`
// user when the test runs as root (./pg-cluster.ts). `replicaUnavailable()` says why not when the
// binaries are missing.
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from './children.ts';
import { serverFolder, serverUnavailable, serverUrl } from './pg-cluster.ts';

/** Why a primary and replica cannot be made here (null: they can). */
export const replicaUnavailable = serverUnavailable;

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
  const folder = serverFolder('gats-replica-');
  const { work, run, runAsync } = folder;
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const primaryDir = path.join(work, 'p');
  const replicaDir = path.join(work, 'r');
  // Test servers: nothing they hold needs to survive a crash of the machine.
  const settings = { fsync: 'off' };
  const start = (dir: string, port: number) => folder.start(dir, port, settings);
  const stop = (dir: string) => folder.stop(dir);
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
  return {
    primaryUrl: (database) => serverUrl(primaryPort, database),
    replicaUrl: (database) => serverUrl(replicaPort, database),
    async stopReplica() {
      await folder.stopAsync(replicaDir);
      replicaRunning = false;
    },
    async startReplica() {
      await folder.startAsync(replicaDir, replicaPort, settings);
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
          folder.remove();
        }
      }
    },
  };
}
