// A thin VC-API verifier in front of POST /identity/verify, so that the W3C VC Data Model 2.0 test
// suite can drive this service: `POST /credentials/verify` ({verifiableCredential, options}) and
// `POST /presentations/verify` ({verifiablePresentation, options: {challenge, domain}}) answer 200
// with the checks when the service says `verified`, else 400 with the failed checks as `errors`
// (VC-API's verify responses). It decides nothing itself: the verdict is the service's.
// `POST /credentials/issue` answers 501: this service issues only its own credential types about
// its users' DIDs, not arbitrary credentials (the suite selects implementations by their issuer
// entry, so one is declared; the tests that need it are reported as not applicable).
import { createServer, type IncomingMessage, type Server } from 'node:http';

type Json = Record<string, unknown>;
interface Check {
  name: string;
  passed: boolean;
  advisory?: boolean;
}

export interface Adapter {
  url: string;
  close(): Promise<void>;
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/** The /identity/verify request for a VC-API verify body, or null when the body is not one. */
function toVerifyRequest(path: string, body: Json): Json | null {
  const options = (body.options ?? {}) as Json;
  if (path === '/credentials/verify') {
    const credential = body.verifiableCredential;
    if (typeof credential === 'string') return { jwt: credential };
    return typeof credential === 'object' && credential !== null ? { credential } : null;
  }
  if (path === '/presentations/verify') {
    const presentation = body.verifiablePresentation;
    if (presentation === undefined || presentation === null) return null;
    return {
      presentation,
      ...(typeof options.challenge === 'string' ? { challenge: options.challenge } : {}),
      ...(typeof options.domain === 'string' ? { domain: options.domain } : {}),
    };
  }
  return null;
}

/** Starts the adapter on a free loopback port, calling `serviceUrl` with `headers` (bearer + API key). */
export async function startAdapter(serviceUrl: string, headers: Record<string, string>): Promise<Adapter> {
  const server: Server = createServer(async (request, response) => {
    const answer = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    try {
      if (request.url === '/credentials/issue')
        return answer(501, { errors: [{ message: 'this service issues only its own credential types' }] });
      const body = (await readJson(request)) as Json;
      const verifyRequest =
        request.method === 'POST' && typeof body === 'object' && body !== null
          ? toVerifyRequest(request.url ?? '', body)
          : null;
      if (!verifyRequest) return answer(400, { errors: [{ message: 'not a VC-API verify request' }] });
      const reply = await fetch(`${serviceUrl}/identity/verify`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(verifyRequest),
      });
      const result = (await reply.json()) as { verified?: boolean; checks?: Check[] };
      if (reply.status !== 200 || !result.checks) return answer(400, { errors: [result] });
      const names = result.checks.map((check) => check.name);
      const failed = result.checks.filter((check) => !check.passed);
      const warnings = failed.filter((check) => check.advisory);
      if (result.verified) return answer(200, { checks: names, warnings, errors: [] });
      return answer(400, { checks: names, warnings, errors: failed });
    } catch (error) {
      answer(400, { errors: [{ message: (error as Error).message }] });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('the adapter has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
