// Reads the conformance vectors kept in the repository (test/vectors; provenance in its README).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const CONFORMANCE_DIR = path.resolve(import.meta.dirname, '../../vectors');

export function readConformanceJson<T = any>(relative: string): T {
  return JSON.parse(readFileSync(path.join(CONFORMANCE_DIR, relative), 'utf8')) as T;
}

export type SuiteVerdict = 'ok' | 'fail' | 'fail-or-inject' | 'unspecified';

export interface SuiteInput {
  file: string;
  verdict: SuiteVerdict;
  kind: 'credential' | 'presentation';
  document: Record<string, unknown>;
}

const YEAR_MS = 365 * 24 * 3600 * 1000;

/**
 * Every input of the VC Data Model 2.0 test suite, with the suite's FUTURE DATE / PAST DATE
 * placeholders replaced as the suite does before sending them.
 */
export function vcdm2SuiteInputs(): SuiteInput[] {
  const dir = path.join(CONFORMANCE_DIR, 'vc/vcdm2-test-suite-input');
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const text = readFileSync(path.join(dir, file), 'utf8')
        .replaceAll('FUTURE DATE', new Date(Date.now() + YEAR_MS).toISOString().replace(/\.\d+Z$/, 'Z'))
        .replaceAll('PAST DATE', new Date(Date.now() - YEAR_MS).toISOString().replace(/\.\d+Z$/, 'Z'));
      const name = file.replace(/\.json$/, '');
      const verdict: SuiteVerdict = name.endsWith('-fail-or-inject')
        ? 'fail-or-inject'
        : name.endsWith('-fail')
          ? 'fail'
          : name.endsWith('-ok')
            ? 'ok'
            : 'unspecified';
      return {
        file,
        verdict,
        kind: file.startsWith('presentation-') ? 'presentation' : 'credential',
        document: JSON.parse(text) as Record<string, unknown>,
      };
    });
}
