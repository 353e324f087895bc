// Prism on the bundled contract, as a child process: in proxy mode in front of the service (every
// request and response is checked; with --errors a departing response becomes a 500 listing the
// violations), or as the project's mock (scripts/contracts/mock.ts: Prism's mock answering invalid
// requests as the service does; test/contract/prism-mock.test.ts).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const repoPath = (path: string): string => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
export const CONTRACT_PATH = repoPath('generated/openapi/openapi.json');

/** Prism 5.16 needs Node >= 24.18: the Node shipped in node_modules, else the one running us. */
const nodeBinary = existsSync(repoPath('node_modules/.bin/node'))
  ? repoPath('node_modules/.bin/node')
  : process.execPath;

export interface PrismProcess {
  baseUrl: string;
  /** Everything Prism printed (its own log of violations included). */
  log(): string;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export function startPrismProxy(upstream: string): Promise<PrismProcess> {
  return startPrism(repoPath('node_modules/@stoplight/prism-cli/dist/index.js'), [
    'proxy',
    CONTRACT_PATH,
    upstream,
    '--errors',
  ]);
}

/** `npm run mock`, static (the contract's examples) or `dynamic` (bodies generated from the schemas). */
export function startPrismMock(options: { dynamic?: boolean } = {}): Promise<PrismProcess> {
  return startPrism(repoPath('scripts/contracts/mock.ts'), [
    '--log-level',
    'fatal',
    ...(options.dynamic ? ['--dynamic'] : []),
  ]);
}

async function startPrism(script: string, args: string[]): Promise<PrismProcess> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    nodeBinary,
    [script, ...args, '--host', '127.0.0.1', '--port', String(port)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    // A Prism that did not start in time is stopped: left running, it outlives the test run.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`Prism did not start within 30 s:\n${output}`));
    }, 30_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('Prism is listening')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Prism exited with ${code}:\n${output}`));
    });
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    log: () => output,
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
