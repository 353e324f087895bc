// Tiny HTML templating for the server-rendered OAuth pages: every interpolated value goes through
// `escape`, and the one stylesheet is inline and allowed by its hash in a strict CSP (no scripts).
import { createHash } from 'node:crypto';
import type { Context } from 'koa';

export function escapeHtml(value: unknown): string {
  return String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const STYLE = [
  'body{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0;padding:2rem 1rem;color:#1d1f23}',
  'main{max-width:24rem;margin:0 auto;background:#fff;border-radius:8px;padding:1.5rem 2rem;box-shadow:0 1px 3px rgba(0,0,0,.15)}',
  'h1{font-size:1.3rem;margin-top:0}label{display:block;margin:.8rem 0 .2rem}',
  'input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem}',
  'button{margin-top:1rem;padding:.5rem 1.2rem;font-size:1rem;cursor:pointer}',
  '.error{color:#a4001d}.muted{color:#5c6370;font-size:.9rem}ul{padding-left:1.2rem}a{color:#0b57d0}',
].join('');

const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');
const PAGE_CSP = `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; base-uri 'none'; frame-ancestors 'none'`;

/** Sends a complete HTML page (no caching: pages carry per-interaction tokens). */
export function sendPage(ctx: Context, status: number, title: string, body: string): void {
  // Replaces the JSON API's policy set on every answer (src/http/security-headers.ts).
  ctx.set('Content-Security-Policy', PAGE_CSP);
  ctx.set('Cache-Control', 'no-store');
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}
