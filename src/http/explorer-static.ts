// Serves the built explorer (explorer/dist, from `npm run build:explorer`) at /explorer/, answers
// its client-side routes (/explorer/wallet/..., /explorer/callback) with index.html, and sends `/`
// there. The explorer is a static single-page app that talks to this service's own API only.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context, Next } from 'koa';
import { allowHtmlPage } from './security-headers.ts';

const DEFAULT_ROOT = fileURLToPath(new URL('../../explorer/dist/', import.meta.url));
const MOUNT = '/explorer/';

export interface ExplorerStaticOptions {
  /** The service's public URL: the WebSocket URL of a ticket is built from it. */
  publicUrl: string;
  /** Where the build is; defaults to explorer/dist. */
  root?: string;
}

/**
 * Only this origin's scripts and styles; images from anywhere over http(s) (NFT metadata points at
 * game CDNs); API calls and the event WebSocket to this service only.
 */
export function explorerPolicy(publicUrl: string): string {
  const ws = new URL(publicUrl);
  ws.protocol = ws.protocol === 'https:' ? 'wss:' : 'ws:';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' https: http: data:",
    `connect-src 'self' ${ws.origin}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function explorerStatic(options: ExplorerStaticOptions) {
  const root = path.resolve(options.root ?? DEFAULT_ROOT) + path.sep;
  const policy = explorerPolicy(options.publicUrl);

  return async function serveExplorer(ctx: Context, next: Next): Promise<void> {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    if (ctx.path === '/' || ctx.path === '/explorer') {
      ctx.redirect(MOUNT);
      return;
    }
    if (!ctx.path.startsWith(MOUNT)) return next();

    let relative: string;
    try {
      relative = decodeURIComponent(ctx.path.slice(MOUNT.length));
    } catch {
      return next(); // malformed percent-encoding: not a file of ours
    }
    let file = path.resolve(root, relative);
    if (!file.startsWith(root) && `${file}${path.sep}` !== root) return next();
    let info = relative === '' ? null : await stat(file).catch(() => null);
    if (!info?.isFile()) {
      // A client-side route (no file extension) gets the app; a missing file is a plain 404.
      if (path.extname(relative) !== '') return next();
      file = path.join(root, 'index.html');
      info = await stat(file).catch(() => null);
      if (!info?.isFile()) {
        ctx.status = 503;
        ctx.type = 'text/plain; charset=utf-8';
        ctx.body = 'The explorer is not built. Run `npm run build:explorer`, then reload.\n';
        return;
      }
    }
    allowHtmlPage(ctx, policy);
    ctx.type = path.extname(file);
    ctx.length = info.size;
    // Built files have content hashes in their names: cache them for good; revalidate the rest.
    ctx.set(
      'Cache-Control',
      relative.startsWith('static/') ? 'public, max-age=31536000, immutable' : 'no-cache',
    );
    ctx.body = createReadStream(file);
  };
}
