// Runs the W3C VC Data Model 2.0 test suite's verifier-side and envelope tests against this
// service, offline: npm run vc-suite -- <suite folder> (or VC_SUITE_DIR). The suite is not part of
// this repository; README.md in this folder says how to prepare a copy. The service runs as a child
// process on a fresh SQLite database, with a user and an API key; adapter.ts puts a thin VC-API
// verifier in front of POST /identity/verify; the suite's own mocha runs its own tests and fixtures,
// configured by a localConfig.cjs written into the suite folder (its documented way to name local
// endpoints). This service issues only its own credential types, so tests that need an issuer
// endpoint cannot apply and are listed apart; so are the verifier tests whose inputs this service
// refuses on purpose, each with its reason. Exit code 1 when any other test fails.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createUser } from '../lib/api.ts';
import { startService } from '../lib/service.ts';
import { NODE } from '../lib/service-process.ts';
import { startAdapter } from './adapter.ts';

interface Outcome {
  suite: string;
  title: string;
  state: 'passed' | 'failed' | 'pending';
  hook: boolean;
  usesIssuer: boolean;
  file: string | null;
  error: string | null;
}

/**
 * Verifier-side tests this service fails on purpose, by the start of their title, with the reason
 * (also in SECURITY.md and the contract).
 */
const INLINE = (input: string) =>
  `context-not-allowed: its ${input} input has an inline @context object; a Data Integrity document with an inline context is refused (issue 13.1: its JSON could say something its signed RDF does not)`;
const REFUSED_ON_PURPOSE: [string, string][] = [
  ['Verifiable Presentation `@context`: "Subsequent items', INLINE('presentation-context-combo2-ok')],
  ['Verifiable Presentation objects MUST have a type specified.', INLINE('presentation-optional-type-ok')],
];

/** Envelope tests whose fixture cannot be verified by anyone, by the start of their title. */
const UNVERIFIABLE_FIXTURE =
  "signature key-unresolvable: the suite's vc_jwt fixture is signed (ES256) by https://example.edu/issuers/565049 with no kid: no verifier can find its key (the envelope itself passes `format`)";

const IS_ENVELOPE = (outcome: Outcome) => outcome.suite.startsWith('Enveloped Verifiable');

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: npm run vc-suite -- <folder of a prepared w3c/vc-data-model-2.0-test-suite copy> (see scripts/vc-suite/README.md)\n`,
  );
  process.exit(64);
}

async function runMocha(suiteDir: string, reportFile: string): Promise<number> {
  const reporter = path.join(import.meta.dirname, 'reporter.cjs');
  const child = spawn(
    NODE,
    [
      'node_modules/mocha/bin/mocha.js',
      'tests/',
      '--timeout',
      '15000',
      '--preserve-symlinks',
      '--reporter',
      reporter,
    ],
    {
      cwd: suiteDir,
      env: { ...process.env, VC_SUITE_REPORT: reportFile },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}

function line(outcome: Outcome, note?: string): string {
  return `  ${outcome.state === 'passed' ? 'pass' : outcome.state === 'pending' ? 'skip' : 'FAIL'}  [${outcome.file}] ${outcome.hook ? `${outcome.suite} › ` : ''}${outcome.title.slice(0, 110)}${note ? `\n        ${note}` : ''}`;
}

async function main(): Promise<void> {
  const suiteDir = path.resolve(
    process.argv[2] ?? process.env.VC_SUITE_DIR ?? usage('No suite folder given.'),
  );
  if (!existsSync(path.join(suiteDir, 'tests')) || !existsSync(path.join(suiteDir, 'node_modules/mocha')))
    usage(`${suiteDir} is not a prepared copy of the suite (tests/ and node_modules/mocha are needed).`);
  const service = await startService('sqlite');
  const work = mkdtempSync(path.join(tmpdir(), 'vc-suite-'));
  let adapter: Awaited<ReturnType<typeof startAdapter>> | undefined;
  try {
    const session = await createUser(service);
    adapter = await startAdapter(service.baseUrl, session.headers);
    const endpoint = { id: 'did:web:game-asset-tracking', tags: ['vc2.0', 'EnvelopingProof'] };
    writeFileSync(
      path.join(suiteDir, 'localConfig.cjs'),
      `// Written by the game asset tracking service's scripts/vc-suite/run.ts.\nmodule.exports = ${JSON.stringify(
        {
          settings: { enableInteropTests: false, testAllImplementations: false },
          implementations: [
            {
              name: 'Game Asset Tracking Service',
              implementation: 'POST /identity/verify through a VC-API adapter',
              issuers: [{ ...endpoint, endpoint: `${adapter.url}/credentials/issue` }],
              verifiers: [{ ...endpoint, endpoint: `${adapter.url}/credentials/verify` }],
              vpVerifiers: [{ ...endpoint, endpoint: `${adapter.url}/presentations/verify` }],
            },
          ],
        },
        null,
        2,
      )};\n`,
    );
    const reportFile = path.join(work, 'report.json');
    await runMocha(suiteDir, reportFile);
    const outcomes = JSON.parse(readFileSync(reportFile, 'utf8')) as Outcome[];
    report(outcomes);
  } finally {
    await adapter?.close();
    await service.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

let unexpected = 0;

function report(outcomes: Outcome[]): void {
  const envelope = outcomes.filter(IS_ENVELOPE);
  const issuerSide = outcomes.filter((o) => !IS_ENVELOPE(o) && o.usesIssuer);
  const verifierSide = outcomes.filter((o) => !IS_ENVELOPE(o) && !o.usesIssuer);
  const section = (name: string, list: Outcome[], cannotApply: (o: Outcome) => string | undefined) => {
    const passed = list.filter((o) => o.state === 'passed').length;
    const excused = list.filter((o) => o.state !== 'passed' && cannotApply(o));
    process.stdout.write(
      `\n${name}: ${passed} passed of ${list.length}; ${excused.length} cannot apply; ${list.length - passed - excused.length} failed\n`,
    );
    for (const outcome of list) {
      const reason = outcome.state === 'passed' ? undefined : cannotApply(outcome);
      if (outcome.state !== 'passed' && !reason) unexpected++;
      process.stdout.write(
        `${line(outcome, reason ? `cannot apply: ${reason}` : (outcome.error ?? undefined))}\n`,
      );
    }
  };
  section(
    'Verifier-side tests',
    verifierSide,
    (o) => REFUSED_ON_PURPOSE.find(([start]) => o.title.startsWith(start))?.[1],
  );
  section('Envelope tests', envelope, (o) =>
    o.suite === 'Enveloped Verifiable Credentials' ? UNVERIFIABLE_FIXTURE : undefined,
  );
  // Some of them only expect the issuer to refuse an input, so they "pass" against a 501: no figure.
  process.stdout.write(
    `\nIssuer-side tests: ${issuerSide.length}, not applicable (they need a VC-API issuer of arbitrary credentials; this service issues only its own credential types)\n`,
  );
}

await main();
process.exitCode = unexpected ? 1 : 0;
