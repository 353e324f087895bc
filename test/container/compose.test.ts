// The container test (deploy issue 32): builds the service's image and the deployment's images,
// starts compose.yaml (PostgreSQL, Redis, two instances, HAProxy; host networking, ports of its own),
// creates the first admin as the README says, and through the load balancer only: signs in, mints,
// watches wallets and all events over WebSockets spread over both instances, stops one instance with
// SIGTERM under a small write load, starts it again, and checks that every acknowledged write and
// every event arrived exactly once (the crash test's checks, scripts/chaos/lib/verify.ts).
// Run with `npm run test:container`; skips, saying why, only where no container daemon can run.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failuresOf, requestFigures } from '../../scripts/chaos/lib/crash-run.ts';
import type { CrashableService } from '../../scripts/chaos/lib/crashable-service.ts';
import { setUpLedger } from '../../scripts/chaos/lib/ledger-setup.ts';
import { newestEventId } from '../../scripts/chaos/lib/rest.ts';
import { ResumingSubscriber, type SubscriptionSpec } from '../../scripts/chaos/lib/subscriber.ts';
import { verify } from '../../scripts/chaos/lib/verify.ts';
import { Writers } from '../../scripts/chaos/lib/writes.ts';
import { createUser, type Session, signIn } from '../../scripts/lib/api.ts';
import type { Role } from '../../scripts/lib/database.ts';
import type { Service } from '../../scripts/lib/service.ts';
import {
  BASE_IMAGE,
  buildImage,
  type Deployment,
  DOCKER,
  daemonAnswers,
  imageSize,
  instanceGauge,
  PORTS,
  printLogs,
  sh,
  startDeployment,
  waitFor200,
} from './deployment.ts';

const daemon = await daemonAnswers();
if (!daemon)
  console.warn(
    'container test SKIPPED: no container daemon answers on this machine (scripts/container/ensure-docker.sh could not start one)',
  );

const run = randomBytes(4).toString('hex');
const images = {
  gats: `gats-ci:${run}`,
  postgres: 'gats-ci-postgres:15',
  redis: 'gats-ci-redis:7',
  haproxy: 'gats-ci-haproxy:2.6',
};
const figures: Record<string, string> = {};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!daemon)('the compose deployment', () => {
  let deployment: Deployment | undefined;
  let admin: Session;

  beforeAll(async () => {
    await sh('bash', ['scripts/container/base-image.sh', BASE_IMAGE]);
    const buildMs = await buildImage(images.gats, ['--build-arg', 'VERSION=ci', '.']);
    figures['service image build'] = `${(buildMs / 1000).toFixed(1)} s`;
    figures['service image size'] = `${((await imageSize(images.gats)) / 1e6).toFixed(0)} MB`;
    for (const target of ['postgres', 'redis', 'haproxy'] as const)
      await buildImage(images[target], [
        '--file',
        'deploy/services.Dockerfile',
        '--target',
        target,
        'deploy',
      ]);
    const started = Date.now();
    deployment = await startDeployment(images);
    // Ready: each instance's /readyz on its management listener (loopback; 404 on the public port),
    // then the balancer serving a public page.
    await Promise.all(
      [PORTS.management1, PORTS.management2, null].map((port) =>
        waitFor200(
          port === null ? `${deployment?.baseUrl}/docs` : `http://127.0.0.1:${port}/readyz`,
          180_000,
        ),
      ),
    ).catch(async (error) => {
      if (deployment) await printLogs(deployment);
      throw error;
    });
    expect((await fetch(`${deployment.baseUrl}/readyz`)).status).toBe(404);
    figures['compose up to ready'] = `${((Date.now() - started) / 1000).toFixed(1)} s`;
  });

  afterAll(async () => {
    if (deployment) await deployment.down();
    await sh(DOCKER, ['image', 'rm', '--force', images.gats]).catch(() => '');
    console.log(
      `\n=== container test ===\n${Object.entries(figures)
        .map(([name, value]) => `${name}: ${value}`)
        .join('\n')}`,
    );
  });

  it('runs as a non-root user, with the SQLite volume and a health check', async () => {
    const inspect = JSON.parse(await sh(DOCKER, ['image', 'inspect', images.gats]))[0];
    expect(inspect.Config.User).toBe('gats:gats');
    expect(Object.keys(inspect.Config.Volumes ?? {})).toEqual(['/data']);
    expect(inspect.Config.Healthcheck.Test[0]).toBe('CMD');
    // No dev dependency in the image: vite (the explorer's build tool) stays in the build stage.
    const listing = await sh(DOCKER, [
      'run',
      '--rm',
      '--network',
      'none',
      '--entrypoint',
      'ls',
      images.gats,
      'node_modules',
      'explorer/dist',
    ]);
    expect(listing).not.toMatch(/^vite$/m);
    expect(listing).toMatch(/^index\.html$/m);
  });

  it('creates the first admin with the documented command, and hides /metrics from the public address', async () => {
    if (!deployment) throw new Error('no deployment');
    const password = randomBytes(18).toString('base64url');
    const output = await deployment.compose(
      [
        'exec',
        '-T',
        'gats-1',
        'node',
        'src/cli/admin.ts',
        'create-user',
        'ops',
        '--role',
        'admin',
        '--password-stdin',
      ],
      `${password}\n`,
    );
    const created = /created ops \(([^)]+)\) with role admin, wallet (0x[0-9a-fA-F]{40})/.exec(output);
    expect(created, output).not.toBeNull();
    admin = await signIn(
      deployment.baseUrl,
      { id: created?.[1] ?? '', wallet: created?.[2] ?? '' },
      'ops',
      password,
    );
    expect((await fetch(`${deployment.baseUrl}/metrics`)).status).toBe(404);
    expect((await fetch(`${deployment.baseUrl}/explorer/`)).status).toBe(200);
  });

  it('loses and doubles nothing while one instance drains on SIGTERM and restarts', async () => {
    if (!deployment) throw new Error('no deployment');
    const active = deployment;
    const service = balancedService(active.baseUrl, admin);
    const ledger = await setUpLedger(service, { players: 4, currencies: 2 });
    const reader = await createUser(service);
    const watermark = await newestEventId(active.baseUrl, reader);

    // Eight subscribers, two per wallet watched and two for everything: the balancer spreads them.
    const specs: SubscriptionSpec[] = [
      ...ledger.players.slice(0, 3).flatMap((player, index) => [
        { name: `wallet ${index + 1} (a)`, walletId: player.wallet },
        { name: `wallet ${index + 1} (b)`, walletId: player.wallet },
      ]),
      { name: 'all events (a)' },
      { name: 'all events (b)' },
    ];
    const wsUrl = `${active.baseUrl.replace(/^http/, 'ws')}/ws`;
    const subscribers = specs.map((spec) => new ResumingSubscriber(wsUrl, reader.headers, spec, watermark));
    try {
      await Promise.all(subscribers.map((subscriber) => subscriber.start()));
      const perInstance = [
        await instanceGauge('ws_connections', PORTS.gats1, PORTS.management1),
        await instanceGauge('ws_connections', PORTS.gats2, PORTS.management2),
      ];
      figures['WebSockets per instance before the stop'] = perInstance.join(' / ');
      expect(Math.min(...perInstance), `WebSockets on each instance: ${perInstance}`).toBeGreaterThan(0);

      const writers = new Writers(service, ledger, {
        clients: 4,
        requestTimeoutMs: 10_000,
        giveUpMs: 60_000,
      });
      const load = writers.run();
      await sleep(3000);
      const stopStarted = Date.now();
      // `docker-compose stop` sends SIGTERM (the image's STOPSIGNAL) and waits for the exit.
      await active.compose(['stop', '--timeout', '30', 'gats-1']);
      figures['SIGTERM to exit'] = `${Date.now() - stopStarted} ms`;
      const stopped = JSON.parse(await sh(DOCKER, ['inspect', await active.container('gats-1')]))[0];
      figures['exit code after SIGTERM'] = String(stopped.State.ExitCode);
      const requestsAtStop = writers.requests.length;
      await sleep(3000);
      const restartStarted = Date.now();
      await active.compose(['start', 'gats-1']);
      await waitFor200(`http://127.0.0.1:${PORTS.management1}/readyz`, 120_000);
      figures['restart to ready'] = `${Date.now() - restartStarted} ms`;
      await sleep(3000);
      writers.stop();
      await load;

      const findings = await verify({
        baseUrl: active.baseUrl,
        reader,
        ledger,
        requests: writers.requests,
        watermark,
        subscribers,
        catchUpTimeoutMs: 30_000,
      });
      const requests = requestFigures(writers.requests);
      await recordSizing(active);
      figures.writes =
        `${requests.sent} sent (${requestsAtStop} before the stop), ${requests.ok} acknowledged, ` +
        `${requests.retried} re-sent with their key, 5xx ${JSON.stringify(requests.serverErrors)}`;
      figures.events =
        `${findings.transfers.events} newTransfer events; subscribers received ` +
        findings.subscribers
          .map((each) => `${each.received}/${each.expected} (${each.resumes} resumes)`)
          .join(', ');
      expect(stopped.State.ExitCode, 'the drained instance exits 0').toBe(0);
      expect(failuresOf(requests, findings, 1, 1)).toEqual([]);
      expect(requests.ok).toBeGreaterThan(0);
      // Every subscriber on the stopped instance resumed elsewhere and missed nothing (checked above).
      expect(findings.subscribers.some((each) => each.resumes > 0)).toBe(true);
    } catch (error) {
      await printLogs(active);
      throw error;
    } finally {
      for (const subscriber of subscribers) subscriber.close();
    }
  });
});

/** Memory and PostgreSQL connections of the instances after the load (the README's sizing note). */
async function recordSizing(deployment: Deployment): Promise<void> {
  const megabytes = async (port: number, management: number) =>
    `${((await instanceGauge('process_resident_memory_bytes', port, management)) / 1e6).toFixed(0)} MB`;
  figures['resident memory after the load'] =
    `${await megabytes(PORTS.gats1, PORTS.management1)} / ${await megabytes(PORTS.gats2, PORTS.management2)}`;
  const connections = await deployment.compose([
    'exec',
    '-T',
    'postgres',
    'psql',
    '-h',
    '/var/run/postgresql',
    '-p',
    String(PORTS.postgres),
    '-U',
    'postgres',
    '-Atc',
    "select count(*) from pg_stat_activity where usename = 'gats'",
  ]);
  figures['PostgreSQL connections of both instances'] = connections.trim();
}

/**
 * The deployment as the chaos helpers see a service: its base URL is the load balancer's, it is
 * always up (one instance is enough), and roles are given by the first admin over the API.
 */
function balancedService(baseUrl: string, adminSession: Session): Service & CrashableService {
  const unsupported = () => Promise.reject(new Error('not available through the load balancer'));
  return {
    name: 'compose deployment',
    kind: 'postgres',
    env: {},
    baseUrl,
    pid: 0,
    starts: 1,
    async setRole(userId: string, role: Role) {
      const response = await fetch(`${baseUrl}/api/v1/users/${userId}/role`, {
        method: 'PUT',
        headers: { ...adminSession.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ role }),
      });
      if (!response.ok) throw new Error(`PUT role: ${response.status} ${await response.text()}`);
    },
    whenUp: () => Promise.resolve(),
    execute: unsupported,
    count: unsupported,
    stopProcess: unsupported,
    stop: unsupported,
    kill9: unsupported,
    restart: unsupported,
  };
}
