/**
 * `npm test`: the static checks (`npm run gen:check`, `npm run lint`, `npm run typecheck`, side by
 * side) beside the test files (`vitest run`, arguments passed on). The checks run at a lower CPU
 * priority (nice 10), so they take the cycles the tests leave while they wait on sockets, timers
 * and child processes, and do not slow the tests down; on two cores this takes about a minute off
 * running them one after the other. They run side by side rather than one after the other so that
 * what is left of them when the tests end uses both cores (one check is mostly one busy process).
 * The tests' output streams as it comes; each check's is printed when it ends (all of it when it
 * failed). Exits non-zero when anything failed, after all have run, and prints how long each part
 * took.
 */
import { spawn } from 'node:child_process';
import { repoRoot } from './gen/paths.ts';
import { runCommand } from './gen/run-node.ts';

const checks = ['gen:check', 'lint', 'typecheck'];
const started = performance.now();
const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1);

async function staticChecks(): Promise<boolean> {
  const results = await Promise.all(
    checks.map(async (check) => {
      const since = performance.now();
      const { code, output } = await runCommand('nice', ['-n', '10', 'npm', 'run', '--silent', check], {
        cwd: repoRoot,
      });
      process.stdout.write(`\n== npm run ${check}: ${code === 0 ? 'ok' : 'FAILED'} (${seconds(since)} s)\n`);
      if (code !== 0 || output.trim() !== '') process.stdout.write(output);
      return code === 0;
    }),
  );
  return results.every(Boolean);
}

function vitest(args: string[]): Promise<boolean> {
  const since = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...args], {
      cwd: repoRoot,
      stdio: 'inherit',
    });
    child.on('error', reject);
    child.on('close', (code) => {
      process.stdout.write(`\n== vitest run: ${code === 0 ? 'ok' : 'FAILED'} (${seconds(since)} s)\n`);
      resolve(code === 0);
    });
  });
}

const [checksPassed, testsPassed] = await Promise.all([staticChecks(), vitest(process.argv.slice(2))]);
process.stdout.write(
  `\n== npm test: ${checksPassed && testsPassed ? 'passed' : 'FAILED'} in ${seconds(started)} s\n`,
);
process.exitCode = checksPassed && testsPassed ? 0 : 1;
