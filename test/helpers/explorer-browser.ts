// What the browser tests share (test/e2e/explorer.test.ts, test/e2e/console.test.ts): the built
// explorer served by the real service (`node src/server.ts`, as `npm start`) on a fresh SQLite data
// dir with the demo seed, Debian's Chromium driven by playwright-core, the test's own API calls and
// every API answer the pages receive checked against the contract, and sign-in through the real
// login page (the explorer is part of the service: no consent page follows, issue 37).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { freePort } from '../../scripts/lib/children.ts';
import { type ServiceProcess, spawnService } from '../../scripts/lib/service-process.ts';
import { DEMO_ACCOUNTS } from '../../src/seed/demo.ts';
import { assertMatchesContract } from './contract.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const hasChromium = existsSync(CHROMIUM);
/**
 * The options of each browser suite's `describe`: each test's time limit (vitest's default is 30 s): a step drives Chromium, the service and
 * often a local EVM node at once, and on a loaded 2-core CI machine one sign-in of two pages and a
 * form took more than 30 s (the console's first test, stop 49's CI). Each wait inside a test keeps
 * its own shorter bound, so a step that never comes still fails on that wait, with its name.
 */
export const BROWSER_TESTS = { timeout: 90_000 };

export function warnWithoutChromium(what: string): void {
  if (!hasChromium)
    console.warn(`${what} skipped: ${CHROMIUM} is missing (apt-get install -y chromium); CI installs it.`);
}

export function demoPassword(username: string): string {
  const account = DEMO_ACCOUNTS.find((candidate) => candidate.username === username);
  if (!account) throw new Error(`The demo seed has no user ${username}.`);
  return account.password;
}

/** A demo user as the test sees it: first-party token and API key headers, user id and wallet. */
export interface ApiSession {
  headers: Record<string, string>;
  id: string;
  wallet: string;
}

/** The paths of the REST API proper, whose answers the pages' traffic is checked for. */
const API_PATH = /^\/(api\/v1\/|assets\/|wallets\/|readyz$)/;

export interface ExplorerHarness {
  base: string;
  browser: Browser;
  /**
   * JSON call to the service, answered body checked against the contract; fails the test with the
   * problem when it does not succeed.
   */
  api<T = any>(method: string, urlPath: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
  /** Logs a demo user in directly (password login) with an API key of its own, for the test's side. */
  session(username: string): Promise<ApiSession>;
  /** A page whose script errors, CSP violations and off-contract API answers are collected. */
  newPage(viewport?: { width: number; height: number }): Promise<Page>;
  /** What went wrong in the pages so far (script errors, CSP violations, answers off the contract). */
  problems(): Promise<string[]>;
  stop(): Promise<void>;
}

/** `env`: settings added to the service's (a test's own, such as `WEBHOOK_ALLOW_LOOPBACK`). */
export async function startExplorerHarness(env: Record<string, string> = {}): Promise<ExplorerHarness> {
  // The service serves explorer/dist: (re)build it when the sources are newer.
  execFileSync(process.execPath, ['scripts/build-explorer.ts'], { cwd: ROOT, stdio: 'inherit' });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'gats-explorer-e2e-'));
  let server: ServiceProcess | undefined;
  let browser: Browser | undefined;
  const problems: string[] = [];
  const checks: Promise<void>[] = [];
  const stop = async () => {
    await browser?.close();
    await server?.stop(null);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    // The service as `npm start` runs it, on SQLite in a fresh data dir, with the demo seed.
    server = spawnService({
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: base,
      DATA_DIR: dataDir,
      SEED_DEMO: 'always',
      LOG_LEVEL: 'warn',
      ...env,
    });
    // Up to 90 s: a start on a loaded 2-core machine beside the rest of the suite once took over 30 s.
    await server.ready(port, 90_000, '/readyz');
    // Playwright gives every launch a fresh, empty user data dir. Without the background-networking
    // flags Chromium keeps dialling Google hosts, which this closed network refuses.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const launched = browser;

  const api: ExplorerHarness['api'] = async (method, urlPath, body, headers = {}) => {
    const response = await fetch(base + urlPath, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    const contentType = response.headers.get('content-type') ?? '';
    const parsed = text && /json/.test(contentType) ? JSON.parse(text) : text || undefined;
    assertMatchesContract(method, new URL(base + urlPath).pathname, {
      status: response.status,
      contentType,
      body: parsed,
      headers: response.headers,
    });
    if (!response.ok) throw new Error(`${method} ${urlPath} answered ${response.status}: ${text}`);
    return parsed;
  };

  return {
    base,
    browser: launched,
    api,
    async session(username) {
      const tokens = await api('POST', '/api/v1/auth/login', { username, password: demoPassword(username) });
      const bearer = { authorization: `Bearer ${tokens.access_token}` };
      const key = await api('POST', '/api/v1/api-keys', { name: 'e2e test side' }, bearer);
      const headers = { ...bearer, 'x-api-key': key.key };
      const me = await api('GET', '/api/v1/me', undefined, headers);
      return { headers, id: me.id, wallet: me.wallets[0] };
    },
    async newPage(viewport = { width: 1280, height: 900 }) {
      const context = await launched.newContext({ viewport });
      const page = await context.newPage();
      page.setDefaultTimeout(10_000);
      // Script errors and Content-Security-Policy violations fail the test that looks.
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error' && /Content Security Policy/i.test(message.text()))
          problems.push(message.text());
      });
      // Every API answer the page receives, checked against the contract as the test's own calls are.
      page.on('response', (response) => {
        const url = new URL(response.url());
        if (url.origin !== base || !API_PATH.test(url.pathname)) return;
        const method = response.request().method();
        if (method === 'OPTIONS') return;
        checks.push(
          (async () => {
            let contentType: string;
            let text: string;
            let headers: Record<string, string>;
            try {
              contentType = (await response.headerValue('content-type')) ?? '';
              text = await response.text();
              headers = await response.allHeaders();
            } catch {
              // The page navigated away, or the test closed it, before the answer was read: nothing
              // to check (a rejection here, after the test's last look, failed a whole CI run).
              return;
            }
            try {
              assertMatchesContract(method, url.pathname, {
                status: response.status(),
                contentType,
                body: text && /json/.test(contentType) ? JSON.parse(text) : text || undefined,
                headers: new Headers(headers),
              });
            } catch (error) {
              problems.push(`off the contract: ${(error as Error).message.slice(0, 500)}`);
            }
          })(),
        );
      });
      return page;
    },
    async problems() {
      await Promise.all(checks);
      return problems;
    },
    stop,
  };
}

export async function screenshot(page: Page, folder: string, name: string): Promise<void> {
  mkdirSync(folder, { recursive: true });
  await page.screenshot({ path: path.join(folder, `${name}.png`), fullPage: true });
}

/** The authorization code flow through the service's own login page, straight back to the explorer. */
export async function signIn(
  page: Page,
  base: string,
  username: string,
  shots?: { folder: string },
): Promise<void> {
  await page.goto(`${base}/`);
  await expect.poll(() => page.url()).toContain('/explorer/');
  // Before sign-in nothing is live, and the indicator does not say the service is down.
  await expect.poll(() => page.locator('.live-indicator').textContent()).toBe('Live updates off');
  await page.getByRole('main').getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/interaction\//);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(demoPassword(username));
  if (shots) await screenshot(page, shots.folder, 'login');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/explorer\/wallet\/0x/);
  await expect.poll(() => page.locator('.live-indicator').getAttribute('data-status')).toBe('live');
}
