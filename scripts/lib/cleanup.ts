// Everything a benchmark starts registers how to undo it here; whatever way the run ends (finished,
// failed, Ctrl-C, SIGTERM) the undo steps run newest first, and child processes never outlive us.
import type { ChildProcess } from 'node:child_process';

type Undo = () => Promise<void> | void;

const undos: Undo[] = [];
const children = new Set<ChildProcess>();

/** Registers an undo step; returns a function that runs it now (once) and forgets it. */
export function deferCleanup(undo: Undo): () => Promise<void> {
  undos.push(undo);
  return async () => {
    const index = undos.lastIndexOf(undo);
    if (index === -1) return;
    undos.splice(index, 1);
    await undo();
  };
}

/** Tracks a child so that it is killed even if the process exits without running the undo steps. */
export function trackChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

export async function cleanupAll(): Promise<void> {
  while (undos.length > 0) {
    const undo = undos.pop() as Undo;
    try {
      await undo();
    } catch (error) {
      process.stderr.write(
        `cleanup step failed: ${error instanceof Error ? error.message : String(error)}\n`,
      );
    }
  }
}

/**
 * Ctrl-C, SIGTERM and a crash clean up (stop children, drop databases) and exit; exit kills
 * stragglers.
 */
export function installCleanupHandlers(): void {
  process.on('exit', () => {
    for (const child of children) child.kill('SIGKILL');
  });
  process.once('uncaughtException', (error) => {
    process.stderr.write(`benchmark crashed: ${error.stack ?? error.message}\n`);
    void cleanupAll().finally(() => process.exit(1));
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping the benchmark and cleaning up\n`);
      const forced = setTimeout(() => process.exit(130), 15_000);
      forced.unref();
      void cleanupAll().finally(() => process.exit(130));
    });
  }
}
