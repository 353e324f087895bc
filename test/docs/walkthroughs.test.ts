// The walkthroughs run as written (issue 33.3): the ```sh blocks of docs/getting-started.md and of
// every guide under docs/guides/ are executed in order, each page in a shell of its own, against one
// fresh instance on the embedded SQLite database, and each block's output is checked against the
// `# → …` lines the page promises. The conventions are documented in docs/README.md ("How the
// walkthroughs are checked"):
//   ```sh illustrative       not run (a browser step, a command for another machine);
//   ```sh service            starts the service: the test restarts its instance with the
//                            variables the block gives `npm start`, on the same data;
//   # → text                 the block prints a line containing text, after the previous
//                            expected line's (… stands for anything within the line);
//   localhost:3000, 127.0.0.1:8545, 127.0.0.1:8090
//                            the service, the local chain node, a webhook receiver: rewritten to
//                            free loopback ports, so the run never collides and never leaves loopback.
// A block that exits non-zero (the shell runs with `set -euo pipefail`) fails the test.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/lib/children.ts';
import { REPO_ROOT, type ServiceProcess, startService } from '../helpers/service.ts';

/** The pages run, in the reading order of docs/README.md: later pages find the state earlier ones left. */
const PAGES = [
  'docs/getting-started.md',
  'docs/guides/economy.md',
  'docs/guides/living-metadata.md',
  'docs/guides/crafting-and-trades.md',
  'docs/guides/marketplace.md',
  'docs/guides/stores-and-rewards.md',
  'docs/guides/identity.md',
  'docs/guides/oauth.md',
  'docs/guides/service-accounts.md',
  'docs/guides/webhooks.md',
  'docs/guides/real-time-events.md',
  'docs/guides/game-server.md',
  'docs/guides/on-chain-assets.md',
  'docs/guides/console.md',
];

interface Block {
  /** 1-based line of the opening fence. */
  line: number;
  kind: 'run' | 'illustrative' | 'service';
  code: string;
  /** The `# →` expectations, in order. */
  expected: string[];
}

/** The shell blocks of a Markdown page (other languages are not commands). */
function shellBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*(.*)$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
    if (open[1] !== 'sh') continue;
    const info = open[2].trim();
    if (!['', 'illustrative', 'service'].includes(info))
      throw new Error(`line ${start + 1}: unknown shell block kind "${info}"`);
    const code = body.join('\n');
    blocks.push({
      line: start + 1,
      kind: info === '' ? 'run' : (info as Block['kind']),
      code,
      expected: [...code.matchAll(/#\s*→\s*(.+?)\s*$/gm)].map((match) => match[1]),
    });
  }
  return blocks;
}

/** The expectation as a pattern: literal text, `…` standing for anything within the line. */
function pattern(expected: string): RegExp {
  return new RegExp(
    expected
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*'),
  );
}

/** The expectations not printed, in order, by `output` (empty when every one was). */
function unmet(expected: string[], output: string): string[] {
  const lines = output.split('\n');
  let at = 0;
  for (const [index, text] of expected.entries()) {
    const re = pattern(text);
    while (at < lines.length && !re.test(lines[at])) at++;
    if (at === lines.length) return expected.slice(index);
    at++;
  }
  return [];
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const PATH = `${path.join(REPO_ROOT, 'node_modules/.bin')}:${process.env.PATH ?? ''}`;
/** The shell's environment: no configuration of the test run leaks into the commands. */
const SHELL_ENV = { PATH, HOME: process.env.HOME ?? tmpdir(), LANG: 'C.UTF-8' };

/** Runs a script with bash in its own process group (its background jobs are stopped with it). */
function bash(script: string, timeoutMs: number, groups: number[], scratch: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], {
      cwd: REPO_ROOT,
      // The pages' `mktemp` files go to the run's folder, removed with it.
      env: { ...SHELL_ENV, TMPDIR: scratch },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (child.pid) groups.push(child.pid);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      stderr += `\n(timed out after ${timeoutMs} ms)`;
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, timeoutMs);
    // The block's shell is done when it exits: background jobs it started may keep the pipes open.
    child.once('exit', (code) => {
      clearTimeout(timer);
      setTimeout(() => resolve({ code, stdout, stderr }), 50);
    });
  });
}

describe('the walkthrough conventions', () => {
  it('reads the kinds of shell blocks and their expected lines; other languages are not run', () => {
    const page = [
      '```sh',
      'echo "a b"   # → a b',
      'echo c',
      '# → …c',
      '```',
      '```sh illustrative',
      'rm -rf /',
      '```',
      '```sql',
      'SELECT 1;',
      '```',
      '```sh service',
      'PORT=1 npm start &',
      '```',
    ].join('\n');
    const blocks = shellBlocks(page);
    expect(blocks.map((block) => [block.line, block.kind, block.expected])).toEqual([
      [1, 'run', ['a b', '…c']],
      [6, 'illustrative', []],
      [12, 'service', []],
    ]);
    expect(() => shellBlocks('```sh maybe\necho\n```')).toThrow(/unknown shell block kind/);
  });

  it('expects each line in order, … standing for anything within a line', () => {
    expect(unmet(['a b', '…c'], 'a b\nxc\n')).toEqual([]);
    expect(unmet(['xc', 'a b'], 'a b\nxc\n')).toEqual(['a b']);
    expect(unmet(['{"id":"op_…","n":2}'], '{"id":"op_01","n":2}')).toEqual([]);
    expect(unmet(['a.c'], 'abc')).toEqual(['a.c']);
  });
});

describe("the README's two commands", () => {
  it('are the package scripts a newcomer runs: npm start after npm ci, and npm test', () => {
    const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
    const commands = shellBlocks(readme)
      .flatMap((block) => block.code.split('\n'))
      .map((line) => line.replace(/#.*$/, '').trim());
    expect(commands).toEqual(expect.arrayContaining(['npm ci && npm start', 'npm test']));
    const { scripts } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(scripts.start).toBe('node src/server.ts');
    // scripts/test.ts: the static checks beside `vitest run`.
    expect(scripts.test).toBe('node scripts/test.ts');
    const runner = readFileSync(path.join(REPO_ROOT, 'scripts', 'test.ts'), 'utf8');
    for (const part of ["'gen:check', 'lint', 'typecheck'", "'node_modules/vitest/vitest.mjs', 'run'"])
      expect(runner).toContain(part);
    expect(readme.split('\n').length).toBeLessThan(200);
  });
});

describe('the walkthroughs of docs/getting-started.md and docs/guides/ run as written', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'gats-walkthrough-'));
  const dataDir = path.join(work, 'data');
  const groups: number[] = [];
  const ports = new Map<number, number>();
  let service: ServiceProcess | undefined;
  /** Variables every start of the service gets besides those a `service` block gives. */
  let baseEnv: Record<string, string> = {};
  let baseline = '';

  const rewrite = (code: string) =>
    code.replace(/\b(localhost|127\.0\.0\.1):(3000|8545|8090)\b/g, (_all, host: string, port: string) => {
      return `${host}:${ports.get(Number(port))}`;
    });

  beforeAll(async () => {
    for (const port of [3000, 8545, 8090]) ports.set(port, await freePort());
    baseEnv = {
      PORT: String(ports.get(3000)),
      DATA_DIR: dataDir,
      // The webhooks guide delivers to a receiver on this machine (development only).
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      // Each page signs in for itself: more logins than one address may make in a minute.
      LOGIN_RATE_LIMIT_REQUESTS: '1000',
    };
    service = await startService(baseEnv);
    // The names a fresh shell has: the state carried from block to block is everything else.
    baseline = (await bash('compgen -v', 10_000, groups, work)).stdout;
    writeFileSync(path.join(work, 'baseline'), baseline);
  }, 120_000);

  afterAll(async () => {
    for (const group of groups) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await service?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('every guide is run (a new page is added to the list, in its reading order)', () => {
    const guides = readdirSync(path.join(REPO_ROOT, 'docs/guides'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/guides/${name}`);
    expect([...guides].sort()).toEqual(PAGES.filter((page) => page.startsWith('docs/guides/')).sort());
    const index = readFileSync(path.join(REPO_ROOT, 'docs/README.md'), 'utf8');
    const order = PAGES.map((page) => index.indexOf(`(${path.relative('docs', page)})`));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  it('every other document marks its shell blocks illustrative (nothing runs them as written)', () => {
    const others = [
      'README.md',
      ...readdirSync(path.join(REPO_ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
        .filter((name) => name.endsWith('.md'))
        .map((name) => `docs/${name}`)
        .filter((page) => !PAGES.includes(page)),
    ];
    expect(others).toContain('docs/operations/backups-and-restore.md');
    for (const page of others) {
      const unmarked = shellBlocks(readFileSync(path.join(REPO_ROOT, page), 'utf8'))
        .filter((block) => block.kind !== 'illustrative')
        .map((block) => `${page}:${block.line}`);
      expect(unmarked).toEqual([]);
    }
  });

  it('the pages hold no shell block of another name (sh only: the test would miss it)', () => {
    for (const page of PAGES) {
      const fences = readFileSync(path.join(REPO_ROOT, page), 'utf8').match(
        /^```(bash|shell|console|zsh)\b/gm,
      );
      expect(fences, page).toBeNull();
    }
  });

  it('the index the service serves at /docs links what it serves and names pages that exist', async () => {
    const base = `http://127.0.0.1:${service?.port}`;
    const html = await (await fetch(`${base}/docs`)).text();
    const links = [...html.matchAll(/href="([^"]+)"/g)].map((match) => match[1]);
    expect(links).toEqual(expect.arrayContaining(['/docs/openapi', '/docs/asyncapi/', '/openapi.json']));
    for (const link of links) expect([link, (await fetch(base + link)).status]).toEqual([link, 200]);
    const named = [...html.matchAll(/<code>(docs\/[^<]+)<\/code>/g)].map((match) => match[1]);
    expect(named).toContain('docs/README.md');
    for (const page of named) expect(existsSync(path.join(REPO_ROOT, page)), page).toBe(true);
  });

  for (const page of PAGES) {
    it(`${page}: every unmarked block runs and prints what it promises`, async () => {
      const state = path.join(work, `${path.basename(page, '.md')}.state`);
      writeFileSync(state, '');
      const blocks = shellBlocks(readFileSync(path.join(REPO_ROOT, page), 'utf8'));
      expect(blocks.some((block) => block.kind !== 'illustrative')).toBe(true);
      for (const block of blocks) {
        if (block.kind === 'illustrative') continue;
        const where = `${page}:${block.line}`;
        const envFile = path.join(work, 'service.env');
        let code = rewrite(block.code);
        if (block.kind === 'service') {
          // `VAR=value … npm start [&]`: the variables are what the test's instance gets.
          code = code.replace(/\bnpm start\b\s*&?/, `env > ${envFile}`);
          await service?.stop();
          service = undefined;
        }
        // The page's variables and functions come from the blocks before; this block's go to the next.
        const script = [
          'set -euo pipefail',
          `source ${state}`,
          `trap 'status=$?; { compgen -v | grep -vxF -f ${path.join(work, 'baseline')} | while read -r name; do declare -p "$name" 2>/dev/null; done; declare -p PATH; declare -f; } | grep -v "^declare -[a-zA-Z]*r" > ${state}.next; exit $status' EXIT`,
          code,
        ].join('\n');
        const run = await bash(script, 60_000, groups, work);
        const report = `${where} exited ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
        expect(run.code, report).toBe(0);
        writeFileSync(state, readFileSync(`${state}.next`, 'utf8'));
        expect(unmet(block.expected.map(rewrite), run.stdout), report).toEqual([]);
        if (block.kind === 'service') {
          const before = new Set(
            (await bash(`source ${state}\nenv`, 10_000, groups, work)).stdout
              .split('\n')
              .filter((line) => line.includes('=')),
          );
          const given = Object.fromEntries(
            readFileSync(envFile, 'utf8')
              .split('\n')
              .filter((line) => line.includes('=') && !before.has(line) && !line.startsWith('_='))
              .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
          );
          service = await startService({ ...baseEnv, ...given });
        }
      }
    }, 120_000);
  }
});
