// PostgreSQL servers of a tool's own, made in a temporary folder with the machine's PostgreSQL
// binaries (initdb, pg_ctl), each on a free loopback port, run as the `postgres` user when the tool
// runs as root: the streaming replica pair of the replica tests and benchmark (./pg-replica.ts), and
// a server with settings the machine's server does not have (the scale benchmark's
// `--pg-shared-buffers`). `serverUnavailable()` says why not when the binaries are missing.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './children.ts';

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

/** Why a server of one's own cannot be made here (null: it can). */
export function serverUnavailable(): string | null {
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

/** A temporary folder for servers' data directories, and the PostgreSQL programs run in it. */
export interface ServerFolder {
  work: string;
  /** Runs a PostgreSQL program (as `postgres` when root); its standard output. */
  run(program: string, args: string[]): string;
  /** As `run`, without blocking the event loop (an app under test in this process keeps serving). */
  runAsync(program: string, args: string[]): Promise<string>;
  /** `pg_ctl start` of the data directory `dir` on `port`, with `-c name=value` settings. */
  start(dir: string, port: number, settings?: Record<string, string>): void;
  startAsync(dir: string, port: number, settings?: Record<string, string>): Promise<void>;
  stop(dir: string): void;
  stopAsync(dir: string): Promise<void>;
  remove(): void;
}

export function serverFolder(prefix: string): ServerFolder {
  const bin = binaries();
  if (!bin) throw new Error(serverUnavailable() ?? 'no PostgreSQL');
  const root = process.getuid?.() === 0;
  const work = mkdtempSync(path.join(tmpdir(), prefix));
  chmodSync(work, 0o777);
  if (root) execFileSync('chown', ['postgres', work]);
  const command = (program: string, args: string[]): [string, string[]] =>
    root
      ? ['runuser', ['-u', 'postgres', '--', path.join(bin, program), ...args]]
      : [path.join(bin, program), args];
  const run = (program: string, args: string[]) =>
    execFileSync(...command(program, args), {
      cwd: work,
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
    });
  const runAsync = async (program: string, args: string[]) =>
    (await execFileAsync(...command(program, args), { cwd: work, encoding: 'utf8' })).stdout;
  const startArgs = (dir: string, port: number, settings: Record<string, string> = {}) => [
    '-D',
    dir,
    '-l',
    `${dir}.log`,
    '-w',
    '-o',
    [
      `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${work}`,
      ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`),
    ].join(' '),
    'start',
  ];
  const stopArgs = (dir: string) => ['-D', dir, '-m', 'fast', '-w', 'stop'];
  return {
    work,
    run,
    runAsync,
    start: (dir, port, settings) => void run('pg_ctl', startArgs(dir, port, settings)),
    startAsync: async (dir, port, settings) =>
      void (await runAsync('pg_ctl', startArgs(dir, port, settings))),
    stop: (dir) => void run('pg_ctl', stopArgs(dir)),
    stopAsync: async (dir) => void (await runAsync('pg_ctl', stopArgs(dir))),
    remove() {
      rmSync(work, { recursive: true, force: true });
    },
  };
}

export const serverUrl = (port: number, database = 'postgres') =>
  `postgres://postgres@127.0.0.1:${port}/${database}`;

export interface ScratchServer {
  url(database?: string): string;
  /** Stops the server and removes its folder. */
  close(): void;
}

/** A new, empty server (initdb's defaults) with `settings`, on a free loopback port. */
export async function startScratchServer(settings: Record<string, string>): Promise<ScratchServer> {
  const folder = serverFolder('gats-pg-');
  const dir = path.join(folder.work, 'data');
  const port = await freePort();
  try {
    folder.run('initdb', ['-D', dir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    folder.start(dir, port, settings);
  } catch (error) {
    folder.remove();
    throw error;
  }
  return {
    url: (database) => serverUrl(port, database),
    close() {
      try {
        folder.stop(dir);
      } finally {
        folder.remove();
      }
    },
  };
}
