/**
 * `npm run gen`: regenerates generated/ from contracts/. Writes into a fresh sibling folder and
 * swaps it in, so a failure leaves the previous generated/ untouched and no stale file survives.
 */
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { generate } from './gen/generate.ts';
import { generatedDir, repoRoot } from './gen/paths.ts';

const staging = await mkdtemp(join(repoRoot, '.generated-'));
try {
  await generate(staging);
  await rm(generatedDir, { recursive: true, force: true });
  await rename(staging, generatedDir);
  console.log('generated/ is up to date with contracts/');
} catch (error) {
  await rm(staging, { recursive: true, force: true });
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
