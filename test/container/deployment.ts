// The compose deployment under test: the images built from the repository (the service's Dockerfile,
// deploy/services.Dockerfile), compose.yaml started by docker-compose under a project name of its own
// with the test's ports (all on loopback, apart from the rest of the suite's), its instances stopped
// and started, and everything removed afterwards but the base image and the build cache (kept on
// purpose: the next run reuses them).
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { serviceEnv } from '../../scripts/lib/service.ts';

/** Debian's client: the newer one some machines have on PATH wants a buildx plugin for BuildKit. */
export const DOCKER = '/usr/bin/docker';
export const ROOT = path.resolve(import.meta.dirname, '../..');
export const BASE_IMAGE = 'debian:bookworm-slim';
const CA_FILE = '/etc/ssl/certs/ca-certificates.crt';

/** Ports nothing else in the suite uses (the other tests take ephemeral ones, from 32768 up). */
export const PORTS = {
  lb: 28080,
  postgres: 25432,
  redis: 26379,
  gats1: 23001,
  gats2: 23002,
  management1: 29101,
  management2: 29102,
} as const;

const run = promisify(execFile);

/** Runs a command; its output on success, an error with the output's tail otherwise. */
export async function sh(
  file: string,
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv } = {},
) {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(file, args, { cwd: ROOT, env: { ...process.env, ...options.env } });
    let output = '';
    child.stdout.on('data', (data) => (output += data));
    child.stderr.on('data', (data) => (output += data));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`${file} ${args.join(' ')} exited ${code}:\n${output.slice(-4000)}`));
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Whether a container daemon answers (scripts/container/ensure-docker.sh starts one in CI). */
export async function daemonAnswers(): Promise<boolean> {
  try {
    await run(DOCKER, ['info'], { timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

const buildEnv = { DOCKER_BUILDKIT: '1' };

/** `docker build` with the host's network, the base image and, when present, the proxy's CA as a secret. */
export async function buildImage(tag: string, args: string[]): Promise<number> {
  const started = Date.now();
  const secret = (await exists(CA_FILE)) ? ['--secret', `id=ca,src=${CA_FILE}`] : [];
  await sh(
    DOCKER,
    ['build', '--network', 'host', '--build-arg', `BASE=${BASE_IMAGE}`, ...secret, '-t', tag, ...args],
    {
      env: buildEnv,
    },
  );
  return Date.now() - started;
}

async function exists(file: string): Promise<boolean> {
  return run('test', ['-r', file]).then(
    () => true,
    () => false,
  );
}

export async function imageSize(tag: string): Promise<number> {
  return Number((await sh(DOCKER, ['image', 'inspect', '--format', '{{.Size}}', tag])).trim());
}

export interface Deployment {
  baseUrl: string;
  project: string;
  compose(args: string[], input?: string): Promise<string>;
  /** Container id of a compose service. */
  container(service: string): Promise<string>;
  /** Removes the containers, the network and the volumes. */
  down(): Promise<void>;
}

/** Writes the env file of the run (fresh secrets) and starts compose.yaml with the built images. */
export async function startDeployment(images: {
  gats: string;
  postgres: string;
  redis: string;
  haproxy: string;
}): Promise<Deployment> {
  const folder = await mkdtemp(path.join(tmpdir(), 'gats-compose-'));
  const envFile = path.join(folder, 'compose.env');
  const secret = () => randomBytes(24).toString('hex');
  const baseUrl = `http://127.0.0.1:${PORTS.lb}`;
  const settings: Record<string, string | number> = {
    SECRET_KEY: secret(),
    GATS_DB_PASSWORD: secret(),
    REDIS_PASSWORD: secret(),
    PUBLIC_URL: baseUrl,
    BASE_IMAGE,
    GATS_IMAGE: images.gats,
    GATS_POSTGRES_IMAGE: images.postgres,
    GATS_REDIS_IMAGE: images.redis,
    GATS_HAPROXY_IMAGE: images.haproxy,
    LB_HOST: '127.0.0.1',
    LB_PORT: PORTS.lb,
    POSTGRES_PORT: PORTS.postgres,
    REDIS_PORT: PORTS.redis,
    GATS_1_PORT: PORTS.gats1,
    GATS_2_PORT: PORTS.gats2,
    GATS_1_MANAGEMENT_PORT: PORTS.management1,
    GATS_2_MANAGEMENT_PORT: PORTS.management2,
    LOG_LEVEL: 'warn',
  };
  writeFileSync(
    envFile,
    Object.entries(settings)
      .map(([key, value]) => `${key}=${value}\n`)
      .join(''),
    {
      mode: 0o600,
    },
  );
  const project = `gats-ci-${process.pid}`;
  const compose = (args: string[], input?: string) =>
    sh(
      'docker-compose',
      ['--project-name', project, '--env-file', envFile, '--file', 'compose.yaml', ...args],
      {
        input,
        env: {
          // docker-compose 1.29 talks to the daemon itself; it must not shell out to a buildx-less client.
          COMPOSE_DOCKER_CLI_BUILD: '0',
          // The crash test's limits (compose.yaml passes these on): the verification reads a lot.
          ...pick(serviceEnv({}, 0), [
            'RATE_LIMIT_REQUESTS',
            'RATE_LIMIT_USER_REQUESTS',
            'RATE_LIMIT_WINDOW_SECONDS',
            'LOGIN_RATE_LIMIT_REQUESTS',
          ]),
        },
      },
    );
  const deployment: Deployment = {
    baseUrl,
    project,
    compose,
    async container(service) {
      return (await compose(['ps', '-q', service])).trim();
    },
    async down() {
      await compose(['down', '--volumes', '--remove-orphans', '--timeout', '30']).catch((error) =>
        console.warn(`compose down: ${(error as Error).message}`),
      );
      await rm(folder, { recursive: true, force: true });
    },
  };
  try {
    await compose(['up', '--detach', '--no-build']);
  } catch (error) {
    await printLogs(deployment);
    await deployment.down();
    throw error;
  }
  return deployment;
}

function pick(values: Record<string, string>, keys: string[]): Record<string, string> {
  return Object.fromEntries(keys.map((key) => [key, values[key]]));
}

export async function printLogs(deployment: Deployment): Promise<void> {
  const logs = await deployment
    .compose(['logs', '--no-color', '--tail', '40'])
    .catch((error) => String(error));
  console.log(logs);
}

/** Resolves once GET `url` answers 200; throws after `timeoutMs`. */
export async function waitFor200(url: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const status = await fetch(url, { signal: AbortSignal.timeout(2000) }).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A gauge without labels of one instance, read on its management port or else its main port. */
export async function instanceGauge(
  name: string,
  instancePort: number,
  managementPort: number,
): Promise<number> {
  for (const port of [managementPort, instancePort]) {
    const text = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2000) }).then(
      (response) => (response.ok ? response.text() : ''),
      () => '',
    );
    const match = new RegExp(`^${name} ([0-9.e+]+)`, 'm').exec(text);
    if (match) return Number(match[1]);
  }
  throw new Error(`no ${name} metric on ports ${managementPort} or ${instancePort}`);
}
