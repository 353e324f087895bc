/**
 * `npm run lint`: Redocly lints both contracts (rules in redocly.yaml), Spectral's `spectral:oas`
 * and `spectral:asyncapi` rulesets lint the bundled documents (.spectral.yaml; any result, even a
 * hint, fails), the breaking-change gate compares them with the released ones in
 * contracts/released/ (docs/versioning.md), Biome checks the TypeScript (rules in biome.json), and
 * dependency-cruiser checks which module may import which (.dependency-cruiser.cjs, README "How the
 * code is laid out"; the violations listed in .dependency-cruiser-known-violations.json are
 * reported but pass), and knip finds unused files, exports and dependencies (knip.jsonc). Every step
 * always runs (two at a time) so one pass shows every problem; the exit code is non-zero when any reports an error.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { asyncApiRoot, biomeCli, openApiRoot, redoclyCli, redoclyConfig, repoRoot } from './gen/paths.ts';
import { runCommand, runNode } from './gen/run-node.ts';

interface Step {
  name: string;
  /** A Node script, or with `native`, an executable. */
  script: string;
  args: string[];
  native?: boolean;
}

const codeDirs = ['src', 'scripts', 'test', 'explorer', 'clients'].filter((dir) =>
  existsSync(join(repoRoot, dir)),
);

const steps: Step[] = [
  {
    name: 'Redocly lint (contracts/openapi, contracts/asyncapi)',
    script: redoclyCli,
    args: ['lint', openApiRoot, asyncApiRoot, '--config', redoclyConfig, '--format', 'stylish'],
  },
  {
    name: 'Spectral lint (generated/openapi/openapi.json, generated/asyncapi/asyncapi.json)',
    script: join(repoRoot, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js'),
    args: [
      'lint',
      join(repoRoot, 'generated', 'openapi', 'openapi.json'),
      join(repoRoot, 'generated', 'asyncapi', 'asyncapi.json'),
      '--ruleset',
      join(repoRoot, '.spectral.yaml'),
      '--format',
      'text',
      '--fail-severity',
      'hint',
    ],
  },
  {
    name: 'Breaking-change gate (generated/ against contracts/released/, docs/versioning.md)',
    script: join(repoRoot, 'scripts', 'contracts', 'check-compatibility.ts'),
    args: [],
  },
  {
    name: `Biome check (${codeDirs.join(', ')})`,
    script: biomeCli,
    args: ['check', ...codeDirs],
    native: true,
  },
  {
    name: `Dependency rules (${codeDirs.join(', ')})`,
    script: join(repoRoot, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs'),
    args: [
      ...codeDirs,
      '--config',
      join(repoRoot, '.dependency-cruiser.cjs'),
      '--ignore-known',
      join(repoRoot, '.dependency-cruiser-known-violations.json'),
      '--output-type',
      'err',
    ],
  },
  {
    name: 'Unused files, exports and dependencies (knip, knip.jsonc)',
    script: join(repoRoot, 'node_modules', 'knip', 'bin', 'knip.js'),
    args: ['--no-progress'],
  },
];

// Two at a time (these machines have two cores; each step is one busy process), printed in order.
const results = new Array<Promise<{ code: number; output: string; seconds: string }>>(steps.length);
let next = 0;
const lane = async () => {
  while (next < steps.length) {
    const index = next++;
    const step = steps[index];
    const started = performance.now();
    results[index] = (step.native ? runCommand : runNode)(step.script, step.args, { cwd: repoRoot }).then(
      (result) => ({ ...result, seconds: ((performance.now() - started) / 1000).toFixed(1) }),
    );
    await results[index];
  }
};
await Promise.all([lane(), lane()]);
let failed = false;
for (const [index, step] of steps.entries()) {
  const { code, output, seconds } = await results[index];
  console.log(`${code === 0 ? 'ok' : 'FAILED'}: ${step.name} (${seconds} s)`);
  if (code !== 0 || /\d+ warnings?\b/.test(output)) process.stdout.write(output);
  failed ||= code !== 0;
}
process.exitCode = failed ? 1 : 0;
