// Safe response headers on everything, and CORS for exact configured origins only.
import type { Context, Next } from 'koa';

const SAFE_HEADERS: [string, string][] = [
  ['X-Content-Type-Options', 'nosniff'],
  ['X-Frame-Options', 'DENY'],
  ['Referrer-Policy', 'no-referrer'],
  ['Cross-Origin-Opener-Policy', 'same-origin'],
  ['Cross-Origin-Resource-Policy', 'same-origin'],
  ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'],
  ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'"],
];

export function securityHeaders(corsOrigins: string[]) {
  const allowed = new Set(corsOrigins);
  return async function setSecurityHeaders(ctx: Context, next: Next): Promise<void> {
    // Straight onto the response (nothing has been sent yet): these are on every answer.
    for (const [name, value] of SAFE_HEADERS) ctx.res.setHeader(name, value);
    const origin = ctx.get('origin');
    if (origin && allowed.has(origin)) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Vary', 'Origin');
      ctx.set(
        'Access-Control-Expose-Headers',
        'X-Request-Id, RateLimit, RateLimit-Policy, Retry-After, Location',
      );
      if (ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method')) {
        ctx.set('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE');
        ctx.set(
          'Access-Control-Allow-Headers',
          'Authorization, X-API-Key, Content-Type, Idempotency-Key, X-Request-Id',
        );
        ctx.set('Access-Control-Max-Age', '600');
        ctx.status = 204;
        return;
      }
    }
    await next();
  };
}

/**
 * Pages that render HTML (docs, login) need a looser policy than the JSON API. Framing stays
 * forbidden whatever the page's policy says: `frame-ancestors` does not fall back to `default-src`.
 */
export function allowHtmlPage(ctx: Context, policy: string): void {
  ctx.set(
    'Content-Security-Policy',
    policy.includes('frame-ancestors') ? policy : `${policy}; frame-ancestors 'none'`,
  );
}
