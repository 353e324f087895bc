/**
 * The HTML references: Redoc for OpenAPI, the AsyncAPI HTML template for AsyncAPI. Both offline.
 *
 * Rendering is most of what `npm run gen` and `npm run gen:check` cost (the AsyncAPI template is
 * transpiled with Babel and Rollup on every run: ~25 s of CPU; Redoc ~6 s), and a page is a function
 * of what it is rendered from: the bundled document, the renderer's packages and configuration, and
 * this code. Each page therefore records, in a comment under its header, a hash of those inputs and
 * a hash of the page itself (without that line). A page of the previous generated/ whose recorded
 * inputs are the current ones and whose content still has its recorded hash is taken as it is;
 * otherwise the page is rendered. A page edited by hand no longer matches its hash and is rendered
 * again (so `gen:check` reports it); so is every page after a change to its document, its renderer's
 * version, redocly.yaml or these files.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { withHtmlHeader } from './files.ts';
import { redoclyCli, redoclyConfig, repoRoot } from './paths.ts';
import { runNodeOrThrow } from './run-node.ts';

/** Renders `openApiJson` (a bundled file) into one self-contained HTML page (Redoc inlined). */
export async function openApiHtml(openApiJson: string, workDir: string, previous?: string): Promise<string> {
  const inputs = [await readFile(openApiJson, 'utf8'), readFileSync(redoclyConfig, 'utf8')];
  return await renderedOnce(inputs, ['@redocly/cli'], previous, async () => {
    const out = join(workDir, 'openapi.html');
    await runNodeOrThrow(
      redoclyCli,
      ['build-docs', openApiJson, '--output', out, '--inlineBundle', '--config', redoclyConfig],
      { cwd: repoRoot },
    );
    return withHtmlHeader(await readFile(out, 'utf8'), 'openapi');
  });
}

const asyncApiHtmlScript = join(import.meta.dirname, 'asyncapi-html.ts');

/** Renders `asyncApiJson` (a bundled file) into `<outDir>/index.html`, scripts and styles inlined. */
export async function asyncApiHtml(asyncApiJson: string, outDir: string, previous?: string): Promise<string> {
  const inputs = [await readFile(asyncApiJson, 'utf8'), readFileSync(asyncApiHtmlScript, 'utf8')];
  const renderer = ['@asyncapi/generator', '@asyncapi/html-template'];
  return await renderedOnce(inputs, renderer, previous, async () => {
    await runNodeOrThrow(asyncApiHtmlScript, [asyncApiJson, outDir], {
      cwd: repoRoot,
      // @asyncapi/generator resolves the global npm when it is imported (for template installs,
      // which never happen here: the template is a pinned devDependency).
      env: { NODE_PATH: globalNodeModules() },
    });
    const html = await readFile(join(outDir, 'index.html'), 'utf8');
    return withHtmlHeader(html.replace('</head>', `${CODE_SPAN_STYLE}</head>`), 'asyncapi');
  });
}

/** The line recording what a page was rendered from, and the page's own hash without that line. */
const RENDERED_LINE = /^<!-- Rendered from inputs sha256:([0-9a-f]{64}); page sha256:([0-9a-f]{64}) -->\n/m;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The page at `previous` when it was rendered from the same inputs and is unchanged since, else
 * `render()`'s page with its line added after the header comment (the page's second line).
 */
async function renderedOnce(
  inputs: string[],
  renderer: string[],
  previous: string | undefined,
  render: () => Promise<string>,
): Promise<string> {
  const versions = renderer.map((name) => {
    const manifest = JSON.parse(readFileSync(join(repoRoot, 'node_modules', name, 'package.json'), 'utf8'));
    return `${name}@${String(manifest.version)}`;
  });
  const ownCode = ['docs.ts', 'files.ts'].map((file) =>
    readFileSync(join(import.meta.dirname, file), 'utf8'),
  );
  const inputsHash = sha256(JSON.stringify([...inputs, ...versions, ...ownCode]));
  const kept = previous === undefined ? null : await readFile(previous, 'utf8').catch(() => null);
  const recorded = kept === null ? null : RENDERED_LINE.exec(kept);
  if (kept !== null && recorded !== null && recorded[1] === inputsHash) {
    if (sha256(kept.replace(RENDERED_LINE, '')) === recorded[2]) return kept;
  }
  const page = await render();
  const headerEnd = page.indexOf('-->\n') + '-->\n'.length;
  const line = `<!-- Rendered from inputs sha256:${inputsHash}; page sha256:${sha256(page)} -->\n`;
  return page.slice(0, headerEnd) + line + page.slice(headerEnd);
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
