/**
 * Bundles contracts/openapi into one OpenAPI 3.1 document with Redocly. External files become
 * components (shared schemas under their `title`), internal `$ref`s are kept: the server's
 * validator and Prism resolve them, and partners get readable component names.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertInternalRefs } from './files.ts';
import { openApiRoot, redoclyCli, redoclyConfig, repoRoot } from './paths.ts';
import { runNodeOrThrow } from './run-node.ts';

export async function bundleOpenApi(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'openapi-bundle-'));
  try {
    const out = join(dir, 'openapi.json');
    await runNodeOrThrow(
      redoclyCli,
      [
        'bundle',
        openApiRoot,
        '--output',
        out,
        '--ext',
        'json',
        '--config',
        redoclyConfig,
        '--component-names-strategy',
        'title',
        '--component-renaming-conflicts-severity',
        'error',
      ],
      { cwd: repoRoot },
    );
    const doc = JSON.parse(await readFile(out, 'utf8')) as Record<string, unknown>;
    assertInternalRefs(doc, 'the bundled OpenAPI document');
    return doc;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
