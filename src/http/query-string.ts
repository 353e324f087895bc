// Query strings, parsed as `qs` parses them (what openapi-backend used, so the contract's validation
// sees the same values), with the common case done directly: qs costs about a microsecond even for
// `limit=20`, on every request.
import { parse as parseQueryString } from 'qs';

/** qs's default parameterLimit: it ignores parameters past it. */
const MAX_PARAMETERS = 1000;
const PLAIN_KEY = /^[A-Za-z][A-Za-z0-9_]*$/;
const ENCODED_CLOSING_BRACKET = /%5d/i;

/**
 * A query string as `qs` parses it (what openapi-backend used): the common case (plain names, each
 * once, well-formed encoding) directly, anything else (brackets, encoded or not, repeats, odd
 * names, malformed percent-encodings) by `qs` itself.
 */
export function parseQuery(queryString: string): Record<string, unknown> {
  const parts = queryString.split('&');
  // qs reads `%5D` as `]` before it splits keys from values (`a=%5D=` is the key `a=]`).
  if (parts.length > MAX_PARAMETERS || queryString.includes(']') || ENCODED_CLOSING_BRACKET.test(queryString))
    return parseQueryString(queryString);
  const query: Record<string, unknown> = {};
  for (const part of parts) {
    if (part === '') continue;
    const equals = part.indexOf('=');
    const key = equals === -1 ? part : part.slice(0, equals);
    if (!PLAIN_KEY.test(key) || key in Object.prototype || key in query) return parseQueryString(queryString);
    const value = equals === -1 ? '' : decodeQueryValue(part.slice(equals + 1));
    if (value === undefined) return parseQueryString(queryString);
    query[key] = value;
  }
  return query;
}

/** `+` is a space, then percent-decoding; undefined when malformed (qs has its own way with those). */
function decodeQueryValue(value: string): string | undefined {
  const spaced = value.includes('+') ? value.replace(/\+/g, ' ') : value;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    return undefined;
  }
}
