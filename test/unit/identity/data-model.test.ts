// The VC Data Model 2.0 test-suite inputs through the service's input checks: `-ok` accepted,
// `-fail` and `-fail-or-inject` rejected (this service rejects rather than repairs).
import { describe, expect, it } from 'vitest';
import {
  credentialStructureProblems,
  jsonLdProblems,
  presentationStructureProblems,
} from '../../../src/domain/identity/data-model.ts';
import { offlineDocumentLoader } from '../../../src/domain/identity/document-loader.ts';
import { vcdm2SuiteInputs } from './conformance.ts';

const loader = offlineDocumentLoader(async (did) => {
  throw new Error(`no DID resolution in this test (${did})`);
});

/** What issuing (for credentials) or verifying (for presentations) makes of an input. */
async function problemsOf(input: ReturnType<typeof vcdm2SuiteInputs>[number]): Promise<string[]> {
  const structural =
    input.kind === 'credential'
      ? credentialStructureProblems(input.document, { mode: 'issue' })
      : presentationStructureProblems(input.document);
  return [...structural, ...(await jsonLdProblems(input.document, loader))];
}

const inputs = vcdm2SuiteInputs();

describe('VC Data Model 2.0 test-suite inputs', () => {
  it('has the whole suite (120 inputs)', () => {
    expect(inputs.length).toBe(120);
  });

  for (const input of inputs.filter((candidate) => candidate.verdict === 'ok')) {
    it(`accepts ${input.file}`, async () => {
      expect(await problemsOf(input)).toEqual([]);
    });
  }

  for (const input of inputs.filter(
    (candidate) => candidate.verdict === 'fail' || candidate.verdict === 'fail-or-inject',
  )) {
    it(`rejects ${input.file}`, async () => {
      expect((await problemsOf(input)).length).toBeGreaterThan(0);
    });
  }

  it('holds every structurally valid self-asserted presentation input (their verdict depends on signatures)', async () => {
    for (const input of inputs.filter((candidate) => candidate.verdict === 'unspecified')) {
      expect(presentationStructureProblems(input.document), input.file).toEqual([]);
    }
  });

  it('rejects a credential without an issuer when verifying', () => {
    const credential = inputs.find((input) => input.file === 'credential-ok.json')?.document;
    expect(credentialStructureProblems(credential, { mode: 'verify' })).toContain('issuer is missing');
  });
});
