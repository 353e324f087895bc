// The documents served at /openapi.json and /asyncapi.json: the bundled contracts with this
// deployment's PUBLIC_URL as their server. generated/ keeps the placeholder servers (a server
// variable), so the files do not depend on where they are deployed.

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const objectsIn = (value: unknown): JsonObject[] =>
  isObject(value) ? Object.values(value).filter(isObject) : [];
const withoutTrailingSlash = (url: string): string => url.replace(/\/+$/, '');

/** The OpenAPI document naming `publicUrl` as its only server, with absolute OAuth endpoints. */
export function publishedOpenApi(bundled: string, publicUrl: string): string {
  const doc = JSON.parse(bundled) as JsonObject;
  const base = withoutTrailingSlash(publicUrl);
  doc.servers = [{ url: base, description: 'This deployment (its configured PUBLIC_URL).' }];
  const components = isObject(doc.components) ? doc.components : {};
  for (const scheme of objectsIn(components.securitySchemes)) {
    for (const flow of objectsIn(scheme.flows)) {
      for (const key of ['authorizationUrl', 'tokenUrl', 'refreshUrl']) {
        const value = flow[key];
        if (typeof value === 'string' && value.startsWith('/')) flow[key] = base + value;
      }
    }
  }
  return JSON.stringify(doc);
}

/**
 * The AsyncAPI document whose servers are this deployment: one per way of authenticating the
 * upgrade (the security of the generated `local*` servers), at PUBLIC_URL's host, `wss` behind
 * https.
 */
export function publishedAsyncApi(bundled: string, publicUrl: string): string {
  const doc = JSON.parse(bundled) as JsonObject;
  const url = new URL(publicUrl);
  const pathname = withoutTrailingSlash(url.pathname);
  const servers: JsonObject = {};
  for (const [name, server] of Object.entries(isObject(doc.servers) ? doc.servers : {})) {
    if (!name.startsWith('local') || !isObject(server)) continue;
    const { variables: _variables, description, ...rest } = server;
    servers[name.replace(/^local/, 'deployment')] = {
      ...rest,
      host: url.host,
      protocol: url.protocol === 'https:' ? 'wss' : 'ws',
      ...(pathname ? { pathname } : {}),
      description:
        `This deployment (its configured PUBLIC_URL). ${typeof description === 'string' ? description : ''}`.trim(),
    };
  }
  doc.servers = servers;
  return JSON.stringify(doc);
}
