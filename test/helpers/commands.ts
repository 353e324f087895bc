// Runs one of the project's npm scripts the way an operator does (`node scripts/x.ts ...`) in a
// child process with only the given environment, and collects its output.
import { spawn } from 'node:child_process';
import { REPO_ROOT } from './service.ts';

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runScript(
  script: string,
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}
