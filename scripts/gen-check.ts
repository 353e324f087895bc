/**
 * `npm run gen:check`: fails (exit 1, listing the files) when generated/ is not exactly what
 * `npm run gen` would write from the current contracts, or when the configuration reference's table
 * (docs/operations/configuration.md) is not what the configuration schema gives, or the metrics
 * reference's (docs/reference/metrics.md) not what the metrics registry gives, or the problem types
 * reference's (docs/reference/problem-types.md) not what contracts/problems.yaml gives, or the
 * benchmarks page's results table (docs/benchmarks.md) not what docs/benchmarks/results.json gives, or
 * the TypeScript client's API reference (clients/typescript/REFERENCE.md) not what its source gives.
 * The HTML references are rendered again only when what they are rendered from changed, or the page
 * did (scripts/gen/docs.ts).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { generate } from './gen/generate.ts';
import { generatedDir } from './gen/paths.ts';
import { resultsTableIsCurrent } from './lib/bench-results.ts';
import { clientReferenceIsCurrent } from './lib/client-reference.ts';
import { configTableIsCurrent } from './lib/config-docs.ts';
import { metricsTableIsCurrent } from './lib/metrics-docs.ts';
import { problemTypesTableIsCurrent } from './lib/problem-docs.ts';

async function listFiles(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

async function differences(expectedDir: string, actualDir: string): Promise<string[]> {
  const expected = new Set(await listFiles(expectedDir));
  const actual = new Set(await listFiles(actualDir));
  const problems: string[] = [];
  for (const file of [...new Set([...expected, ...actual])].sort()) {
    if (!actual.has(file)) problems.push(`missing: generated/${file}`);
    else if (!expected.has(file)) problems.push(`not generated from the contracts: generated/${file}`);
    else {
      const [a, b] = await Promise.all([readFile(join(expectedDir, file)), readFile(join(actualDir, file))]);
      if (!a.equals(b)) problems.push(`differs: generated/${file}`);
    }
  }
  return problems;
}

const fresh = await mkdtemp(join(tmpdir(), 'gen-check-'));
try {
  await generate(fresh, generatedDir);
  const problems = await differences(fresh, generatedDir);
  if (problems.length > 0) {
    console.error(`generated/ is out of date with contracts/ (run npm run gen):\n  ${problems.join('\n  ')}`);
    process.exitCode = 1;
  } else {
    console.log('generated/ matches contracts/');
  }
  // Each generated table of the docs, with what it is generated from.
  const tables: [page: string, table: string, source: string, isCurrent: () => Promise<boolean>][] = [
    ['docs/operations/configuration.md', 'configuration', 'src/config/index.ts', configTableIsCurrent],
    ['docs/reference/metrics.md', 'metrics', 'src/observability/metrics.ts', metricsTableIsCurrent],
    [
      'docs/reference/problem-types.md',
      'problem types',
      'contracts/problems.yaml',
      problemTypesTableIsCurrent,
    ],
    ['docs/benchmarks.md', 'results', 'docs/benchmarks/results.json', resultsTableIsCurrent],
    ['clients/typescript/REFERENCE.md', 'API reference', 'clients/typescript/src', clientReferenceIsCurrent],
  ];
  for (const [page, table, source, isCurrent] of tables) {
    if (await isCurrent()) {
      console.log(`${page}: the ${table} table matches ${source}`);
    } else {
      console.error(`${page}: the ${table} table differs from ${source} (run npm run gen)`);
      process.exitCode = 1;
    }
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  await rm(fresh, { recursive: true, force: true });
}
