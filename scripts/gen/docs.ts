/** The HTML references: Redoc for OpenAPI, the AsyncAPI HTML template for AsyncAPI. Both offline. */
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { withHtmlHeader } from './files.ts';
import { redoclyCli, redoclyConfig, repoRoot } from './paths.ts';
import { runNodeOrThrow } from './run-node.ts';

/** Renders `openApiJson` (a bundled file) into one self-contained HTML page (Redoc inlined). */
export async function openApiHtml(openApiJson: string, workDir: string): Promise<string> {
  const out = join(workDir, 'openapi.html');
  await runNodeOrThrow(
    redoclyCli,
    ['build-docs', openApiJson, '--output', out, '--inlineBundle', '--config', redoclyConfig],
    { cwd: repoRoot },
  );
  return withHtmlHeader(await readFile(out, 'utf8'), 'openapi');
}

const asyncApiHtmlScript = join(import.meta.dirname, 'asyncapi-html.ts');

/** Renders `asyncApiJson` (a bundled file) into `<outDir>/index.html`, scripts and styles inlined. */
export async function asyncApiHtml(asyncApiJson: string, outDir: string): Promise<string> {
  await runNodeOrThrow(asyncApiHtmlScript, [asyncApiJson, outDir], {
    cwd: repoRoot,
    // @asyncapi/generator resolves the global npm when it is imported (for template installs,
    // which never happen here: the template is a pinned devDependency).
    env: { NODE_PATH: globalNodeModules() },
  });
  return withHtmlHeader(await readFile(join(outDir, 'index.html'), 'utf8'), 'asyncapi');
}

let globalRoot: string | undefined;

function globalNodeModules(): string {
  globalRoot ??= execFileSync('npm', ['root', '-g'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
  return globalRoot;
}
