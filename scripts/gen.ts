/**
 * `npm run gen`: regenerates generated/ from contracts/, keeps the bundled documents of a new
 * `info.version` under contracts/released/<version>/ (the breaking-change gate's baseline), then the
 * tables of the reference pages: docs/operations/configuration.md's from the configuration schema,
 * docs/reference/metrics.md's from the metrics registry and docs/reference/problem-types.md's from
 * contracts/problems.yaml. generated/ is written into a fresh sibling folder and swapped in, so a
 * failure leaves the previous one untouched and no stale file survives.
 */
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { keepReleases } from './contracts/lib/compatibility.ts';
import { generate } from './gen/generate.ts';
import { generatedDir, repoRoot } from './gen/paths.ts';
import { writeConfigTable } from './lib/config-docs.ts';
import { writeMetricsTable } from './lib/metrics-docs.ts';
import { writeProblemTypesTable } from './lib/problem-docs.ts';

const staging = await mkdtemp(join(repoRoot, '.generated-'));
try {
  await generate(staging);
  await rm(generatedDir, { recursive: true, force: true });
  await rename(staging, generatedDir);
  console.log('generated/ is up to date with contracts/');
  for (const file of await keepReleases(generatedDir))
    console.log(`${file}: kept as released (a new version)`);
  if (await writeConfigTable())
    console.log('docs/operations/configuration.md: configuration table rewritten from src/config/index.ts');
  if (await writeMetricsTable())
    console.log('docs/reference/metrics.md: metrics table rewritten from src/observability/metrics.ts');
  if (await writeProblemTypesTable())
    console.log(
      'docs/reference/problem-types.md: problem types table rewritten from contracts/problems.yaml',
    );
} catch (error) {
  await rm(staging, { recursive: true, force: true });
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
