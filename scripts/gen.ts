/**
 * `npm run gen`: regenerates generated/ from contracts/, keeps the bundled documents of a new
 * `info.version` under contracts/released/<version>/ (the breaking-change gate's baseline), then the
 * tables of the reference pages: docs/operations/configuration.md's from the configuration schema,
 * docs/reference/metrics.md's from the metrics registry and docs/reference/problem-types.md's from
 * contracts/problems.yaml, and docs/benchmarks.md's results table from docs/benchmarks/results.json, and the TypeScript client's API
 * reference (clients/typescript/REFERENCE.md) from its source. generated/ is written into a fresh sibling folder and swapped in, so a
 * failure leaves the previous one untouched and no stale file survives.
 */
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { keepReleases } from './contracts/lib/compatibility.ts';
import { generate } from './gen/generate.ts';
import { generatedDir, repoRoot } from './gen/paths.ts';
import { writeResultsTable } from './lib/bench-results.ts';
import { writeClientReference } from './lib/client-reference.ts';
import { writeConfigTable } from './lib/config-docs.ts';
import { writeMetricsTable } from './lib/metrics-docs.ts';
import { writeProblemTypesTable } from './lib/problem-docs.ts';

const staging = await mkdtemp(join(repoRoot, '.generated-'));
try {
  await generate(staging, generatedDir);
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
  if (await writeResultsTable())
    console.log('docs/benchmarks.md: results table rewritten from docs/benchmarks/results.json');
  if (await writeClientReference())
    console.log('clients/typescript/REFERENCE.md: rewritten from clients/typescript/src (TypeDoc)');
} catch (error) {
  await rm(staging, { recursive: true, force: true });
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
}
