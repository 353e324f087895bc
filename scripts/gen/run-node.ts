/** Runs a Node CLI (a package's bin script) with the Node running us: Node 24 from node_modules. */
import { spawn } from 'node:child_process';

export interface RunOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
}

export interface RunResult {
  code: number;
  output: string;
}

/** Resolves with the exit code and the interleaved stdout/stderr; never rejects on a non-zero exit. */
export function runNode(script: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  return runCommand(process.execPath, [script, ...args], options);
}

/** Runs an executable (a native binary such as Biome's) the same way. */
export function runCommand(
  command: string,
  args: readonly string[],
  options: RunOptions,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], {
      cwd: options.cwd,
      env: { ...process.env, ...quietToolsEnv, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/** Like runNode, but a non-zero exit is an error carrying the tool's output. */
export async function runNodeOrThrow(
  script: string,
  args: readonly string[],
  options: RunOptions,
): Promise<string> {
  const { code, output } = await runNode(script, args, options);
  if (code !== 0) throw new Error(`${script} ${args.join(' ')} exited with ${code}:\n${output}`);
  return output;
}

/** Redocly phones home and prints update notices unless told not to; neither works offline. */
const quietToolsEnv: NodeJS.ProcessEnv = {
  REDOCLY_TELEMETRY: 'off',
  REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
  NO_UPDATE_NOTIFIER: '1',
};
