// Serves the generated HTML references under /docs/openapi and /docs/asyncapi/.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context, Next } from 'koa';
import { allowHtmlPage } from './security-headers.ts';

const DOCS_ROOT = fileURLToPath(new URL('../../generated/docs/', import.meta.url));
// The generated references bring their own scripts and styles; they load nothing from elsewhere.
const DOCS_POLICY =
  "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; worker-src blob:";

export function docsStatic() {
  return async function serveDocs(ctx: Context, next: Next): Promise<void> {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || !ctx.path.startsWith('/docs/')) return next();
    let relative = ctx.path.slice('/docs/'.length);
    if (relative === 'openapi') relative = 'openapi.html';
    if (relative === '' || relative.endsWith('/')) relative += 'index.html';
    const file = path.resolve(DOCS_ROOT, relative);
    if (!file.startsWith(DOCS_ROOT)) return next();
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) return next();
    allowHtmlPage(ctx, DOCS_POLICY);
    ctx.type = path.extname(file);
    ctx.length = info.size;
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = createReadStream(file);
  };
}
