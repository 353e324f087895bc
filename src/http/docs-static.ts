// Serves the generated HTML references under /docs/openapi and /docs/asyncapi/.
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context, Next } from 'koa';
import { allowHtmlPage } from './security-headers.ts';

const DOCS_ROOT = fileURLToPath(new URL('../../generated/docs/', import.meta.url));
// The generated references bring their own scripts and styles; they load nothing from elsewhere.
const DOCS_POLICY =
  "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; worker-src blob:";
/**
 * The AsyncAPI reference's bundle compiles the contract's JSON schemas with Ajv, which builds its
 * validators with `new Function`: without 'unsafe-eval' the bundle stops at load and the page shows
 * its collapsed server-rendered outline only. The page is granted it, and in exchange runs
 * sandboxed: an opaque origin, so its scripts can neither read the service's cookies or storage nor
 * send credentialed same-origin requests. It shows only the bundled contract (no user data).
 */
const ASYNCAPI_POLICY = `${DOCS_POLICY.replace("script-src 'self'", "script-src 'self' 'unsafe-eval'")}; sandbox allow-scripts allow-popups`;
/** What the placeholder server of the bundled OpenAPI document becomes in the served REST reference. */
const PUBLIC_URL_PLACEHOLDER = '{publicUrl}';

export interface DocsOptions {
  /** The deployment's PUBLIC_URL: the REST reference names it as its server. */
  publicUrl: string;
}

export function docsStatic(options: DocsOptions) {
  const openApiPage = lazyText(path.join(DOCS_ROOT, 'openapi.html'), (html) =>
    html.replaceAll(PUBLIC_URL_PLACEHOLDER, servedUrl(options.publicUrl)),
  );
  return async function serveDocs(ctx: Context, next: Next): Promise<void> {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || !ctx.path.startsWith('/docs/')) return next();
    let relative = ctx.path.slice('/docs/'.length);
    if (relative === 'openapi') relative = 'openapi.html';
    if (relative === '' || relative.endsWith('/')) relative += 'index.html';
    const file = path.resolve(DOCS_ROOT, relative);
    if (!file.startsWith(DOCS_ROOT)) return next();
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) return next();
    allowHtmlPage(ctx, relative.startsWith('asyncapi/') ? ASYNCAPI_POLICY : DOCS_POLICY);
    ctx.type = path.extname(file);
    ctx.set('Cache-Control', 'public, max-age=300');
    if (relative === 'openapi.html') {
      ctx.body = await openApiPage();
      return;
    }
    ctx.length = info.size;
    ctx.body = createReadStream(file);
  };
}

/**
 * PUBLIC_URL as the page shows it: without a trailing slash, and only when it is made of characters
 * that mean the same in the page's HTML and in its embedded JSON (configuration only allows http(s)
 * URLs; a URL with anything else keeps the placeholder).
 */
function servedUrl(publicUrl: string): string {
  const url = publicUrl.replace(/\/+$/, '');
  return /^https?:\/\/[A-Za-z0-9.:[\]/_~%-]+$/.test(url) ? url : PUBLIC_URL_PLACEHOLDER;
}

/** The file's text, transformed, read on first use and kept (the generated files do not change while serving). */
function lazyText(file: string, transform: (text: string) => string): () => Promise<string> {
  let text: Promise<string> | undefined;
  return () => {
    text ??= readFile(file, 'utf8').then(transform);
    return text;
  };
}
