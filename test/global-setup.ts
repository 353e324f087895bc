// Runs once before any test file: the service serves explorer/dist, which several files request
// (the browser test, the security-header checks), so it is (re)built here, when missing or stale,
// instead of by whichever of them happens to run first.
import { execFileSync } from 'node:child_process';
import path from 'node:path';

export default function setup(): void {
  const root = path.resolve(import.meta.dirname, '..');
  execFileSync(process.execPath, ['scripts/build-explorer.ts'], { cwd: root, stdio: 'inherit' });
}
