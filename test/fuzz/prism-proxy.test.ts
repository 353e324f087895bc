// Contract proxy, short version of `npm run proxy`: the representative flow through
// `prism proxy --errors` in front of the real app on SQLite with the demo data. First, that the
// harness notices a departing response at all, from an upstream that breaks the contract on purpose.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { ProxyClient } from '../proxy/lib/client.ts';
import { runFlow } from '../proxy/lib/flow.ts';
import { type PrismProcess, startPrismProxy } from '../proxy/lib/prism.ts';

describe('prism proxy --errors', () => {
  let liar: Server;
  let liarProxy: PrismProcess;
  let t: TestApp;
  let proxy: PrismProcess;

  beforeAll(async () => {
    // Answers /healthz with a body of the wrong shape and everything else with an undeclared status.
    liar = createServer((request, response) => {
      response.setHeader('content-type', 'application/json');
      response.setHeader('x-request-id', 'liar');
      response.statusCode = request.url === '/healthz' ? 200 : 418;
      response.end(JSON.stringify({ status: 5 }));
    });
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    t = await startTestApp('sqlite', { SEED_DEMO: 'always' });
    [liarProxy, proxy] = await Promise.all([
      startPrismProxy(`http://127.0.0.1:${(liar.address() as { port: number }).port}`),
      startPrismProxy(t.baseUrl),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([liarProxy?.close(), proxy?.close()]);
    liar?.close();
    await t?.close();
  });

  it('reports a body and a status that depart from the contract', async () => {
    const client = new ProxyClient(liarProxy.baseUrl);
    await client.call('GET', '/healthz', { expect: 200 });
    await client.call('GET', '/readyz', { expect: 200 });
    expect(client.violations).toHaveLength(2);
    expect(client.violations[0]).toMatch(/response.*body.*status/);
    expect(client.violations[1]).toMatch(/status code/);
  });

  it('passes the representative flow without a violation', async () => {
    const client = new ProxyClient(proxy.baseUrl);
    await runFlow(client);
    expect(client.sent).toBeGreaterThan(50);
    expect(client.violations).toEqual([]);
    expect(client.failures).toEqual([]);
  }, 40_000);
});
