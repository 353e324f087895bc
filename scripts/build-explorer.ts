/**
 * Builds the explorer (explorer/ -> explorer/dist) when its build is missing or older than its
 * sources or the generated contract types it uses; otherwise does nothing. Meant for `prestart`
 * and the browser tests, so `npm start` always serves a current explorer without rebuilding every
 * time. Without Vite (a production install without devDependencies) it only warns: the service
 * then answers /explorer/ with "not built". `npm run build:explorer` type-checks and always builds.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const built = join(root, 'explorer/dist/index.html');
const inputs = [
  'explorer/src',
  'explorer/public',
  'explorer/index.html',
  'explorer/vite.config.ts',
  'generated/openapi/types.ts',
  'generated/asyncapi/models',
];

/** Newest modification time under `path` (a file or a folder), 0 when it does not exist. */
function newest(path: string): number {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((entry) => newest(join(path, entry))));
}

const sourcesChanged = Math.max(...inputs.map((input) => newest(join(root, input))));
if (existsSync(built) && statSync(built).mtimeMs >= sourcesChanged) {
  console.log('explorer: build is up to date');
} else {
  let vite: typeof import('vite');
  try {
    vite = await import('vite');
  } catch {
    console.warn('explorer: Vite is not installed, so the explorer was not built (/explorer/ will say so).');
    process.exit(0);
  }
  await vite.build({ configFile: join(root, 'explorer/vite.config.ts'), logLevel: 'warn' });
  console.log('explorer: built into explorer/dist');
}
