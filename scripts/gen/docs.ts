/** The HTML references: Redoc for OpenAPI, the AsyncAPI HTML template for AsyncAPI. Both offline. */
import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
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
  const html = await readFile(join(outDir, 'index.html'), 'utf8');
  return withHtmlHeader(html.replace('</head>', `${CODE_SPAN_STYLE}</head>`), 'asyncapi');
}

/**
 * The template's typography styles wrap every code span in literal backticks (`::before` and
 * `::after`), so Markdown code in descriptions read as `` `newNFT` ``: show the code span alone.
 */
const CODE_SPAN_STYLE = '<style>code::before,code::after{content:none !important}</style>';

let globalRoot: string | undefined;

/**
 * The node_modules folder that holds the npm package running us: the generator `require`s npm.
 * Found from npm's own path, not `npm root -g`, which answers relative to whichever node runs npm
 * (the Node 24 of node_modules/.bin under CI, whose prefix has no npm).
 */
function globalNodeModules(): string {
  if (globalRoot) return globalRoot;
  const cli =
    process.env.npm_execpath ||
    realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim());
  let dir = dirname(realpathSync(cli));
  while (basename(dir) !== 'npm' && dirname(dir) !== dir) dir = dirname(dir);
  globalRoot = dirname(dir);
  return globalRoot;
}
