/**
 * `npm run gen:check`: fails (exit 1, listing the files) when generated/ is not exactly what
 * `npm run gen` would write from the current contracts, or when the configuration reference's table
 * (docs/operations/configuration.md) is not what the configuration schema gives, or the metrics
 * reference's (docs/reference/metrics.md) not what the metrics registry gives, or the problem types
 * reference's (docs/reference/problem-types.md) not what contracts/problems.yaml gives.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { generate } from './gen/generate.ts';
import { generatedDir } from './gen/paths.ts';
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
  await generate(fresh);
  const problems = await differences(fresh, generatedDir);
  if (problems.length > 0) {
    console.error(`generated/ is out of date with contracts/ (run npm run gen):\n  ${problems.join('\n  ')}`);
    process.exitCode = 1;
  } else {
    console.log('generated/ matches contracts/');
  }
  if (!(await configTableIsCurrent())) {
    console.error(
      'docs/operations/configuration.md: the configuration table differs from src/config/index.ts (run npm run gen)',
    );
    process.exitCode = 1;
  } else {
    console.log('docs/operations/configuration.md: the configuration table matches src/config/index.ts');
  }
  if (!(await metricsTableIsCurrent())) {
    console.error(
      'docs/reference/metrics.md: the metrics table differs from src/observability/metrics.ts (run npm run gen)',
    );
    process.exitCode = 1;
  } else {
    console.log('docs/reference/metrics.md: the metrics table matches src/observability/metrics.ts');
  }
  if (!(await problemTypesTableIsCurrent())) {
    console.error(
      'docs/reference/problem-types.md: the problem types table differs from contracts/problems.yaml (run npm run gen)',
    );
    process.exitCode = 1;
  } else {
    console.log('docs/reference/problem-types.md: the problem types table matches contracts/problems.yaml');
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  await rm(fresh, { recursive: true, force: true });
}
