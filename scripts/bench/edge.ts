// The JavaScript an answer costs, without the sockets: the app built in this process (buildApp, on
// the reads benchmark's spread ledger: 300 wallets of 10 holdings) and Koa hello, each handed
// requests as node:http's parser would hand them (IncomingMessage and ServerResponse over a socket
// that discards what is written), 10 at a time. What it leaves out (parsing, the kernel, waking the
// load generator) is the same for every answer of the same shape; what it keeps (Koa, the edge's
// middleware, authentication and rate limits, routing and validation, the handler, the read cache,
// the response's headers) is the service's own, and the figure hardly moves between runs, where the
// socket benchmarks move by 5-10%. Cached spread listing (`GET /wallets/{id}/assets?limit=10`).
//
// V8 flag: allocation-site pretenuring off in this process. Driven this way (the ledger seeded through
// fetch first), V8 sometimes decides to allocate some short-lived request objects in the old
// generation, and the run then costs 30-40% more (each scavenge promotes ~12 MB, major GCs every few
// seconds); which runs do is chance. The service's own process showed no such change (A/B with the
// flag set there: the same CPU per answer), so the figure is taken without it.
import { IncomingMessage, ServerResponse } from 'node:http';
import { Duplex } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import Koa from 'koa';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/index.ts';
import { startService } from '../lib/service.ts';
import type { BenchOptions } from './lib/options.ts';
import { record, round4 } from './lib/record.ts';
import { fixed, heading, table } from './lib/report.ts';
import { spreadLedger } from './reads.ts';

type Handle = (request: IncomingMessage, response: ServerResponse) => unknown;

/** A socket that takes whatever the response writes and drops it. */
class DiscardingSocket extends Duplex {
  remoteAddress = '127.0.0.1';
  override _read(): void {}
  override _write(_chunk: unknown, _encoding: unknown, done: () => void): void {
    done();
  }
  override _writev(_chunks: unknown, done: () => void): void {
    done();
  }
}

/** One GET through `handle`, as node:http hands it over; resolves with the answer's status. */
function answer(handle: Handle, url: string, headers: Record<string, string>): Promise<number> {
  const socket = new DiscardingSocket();
  const request = new IncomingMessage(socket as never);
  request.method = 'GET';
  request.url = url;
  request.headers = headers;
  request.httpVersionMajor = 1;
  request.httpVersionMinor = 1;
  request.httpVersion = '1.1';
  request.complete = true;
  request.push(null);
  const response = new ServerResponse(request);
  response.assignSocket(socket as never);
  return new Promise((resolve) => {
    response.on('finish', () => {
      response.detachSocket(socket as never);
      resolve(response.statusCode);
    });
    void handle(request, response);
  });
}

interface Drive {
  label: string;
  handle: Handle;
  url: () => string;
  headers: Record<string, string>;
}

/** `count` answers, 10 at a time: wall and CPU microseconds per answer; throws on a non-200. */
async function drive(target: Drive, count: number): Promise<{ wall: number; cpu: number }> {
  let left = count;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (left-- > 0) {
        const status = await answer(target.handle, target.url(), target.headers);
        if (status !== 200) throw new Error(`${target.label}: answered ${status}`);
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return { wall: ((performance.now() - started) * 1000) / count, cpu: (used.user + used.system) / count };
}

export async function edge(options: BenchOptions): Promise<void> {
  // For the rest of this process's life: `all` runs the benchmarks after this one in it too, and this
  // process is their load generator, not what they measure.
  setFlagsFromString('--no-allocation-site-pretenuring');
  for (const kind of options.dbs) {
    const service = await startService(kind);
    let app: Awaited<ReturnType<typeof buildApp>> | undefined;
    try {
      const { studio, wallets } = await spreadLedger(service);
      // The service's process stops; the same configuration and database are opened here.
      await service.stopProcess();
      app = await buildApp(loadConfig(service.env));
      const hello = new Koa();
      hello.use(async (ctx) => {
        ctx.body = { hello: 'world' };
      });
      const host = `127.0.0.1:${service.env.PORT}`;
      const targets: Drive[] = [
        { label: 'Koa hello GET /', handle: hello.callback(), url: () => '/', headers: { host } },
        {
          label: `GET /wallets/{1 of ${wallets.length}}/assets, cached`,
          handle: app.koa.callback(),
          url: () => `/wallets/${wallets[Math.floor(Math.random() * wallets.length)]}/assets?limit=10`,
          headers: { ...studio.headers, host },
        },
      ];
      // As many answers per run as the reads benchmark's socket runs give in their duration, about.
      const count = 5_000 * options.durationSeconds;
      for (const target of targets) await drive(target, count);
      heading(`edge cost on ${kind} (in-process, no sockets)`, { answers: count, 'runs per target': 3 });
      const rows: (string | number)[][] = [];
      const medians: number[] = [];
      for (const target of targets) {
        const runs: { wall: number; cpu: number }[] = [];
        for (let run = 0; run < 3; run++) runs.push(await drive(target, count));
        runs.sort((a, b) => a.wall - b.wall);
        medians.push(runs[1].wall);
        rows.push([target.label, ...runs.map((run) => fixed(run.wall, 2)), fixed(runs[1].cpu, 2)]);
      }
      table(['target', 'us/answer: fastest', 'median', 'slowest', 'CPU us (median run)'], rows);
      console.log(
        `cached spread listing: ${fixed(medians[1], 2)} us of JavaScript per answer, ${fixed(medians[1] / medians[0], 1)}x Koa hello's`,
      );
      record({
        benchmark: 'edge',
        scenario: `JavaScript per cached spread answer, in-process, ${kind}, median of 3 runs`,
        koaRatio: round4(medians[0] / medians[1]),
        figures: [
          { name: 'per answer', value: Number(medians[1].toFixed(1)), unit: 'µs' },
          { name: 'Koa hello per answer', value: Number(medians[0].toFixed(1)), unit: 'µs' },
        ],
      });
    } finally {
      await app?.close();
      await service.stop();
    }
  }
}
