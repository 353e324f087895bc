// Reading a verification result in identity tests: one check by name, and the names of the failed ones.
import type { VerifyResult } from '../../../src/domain/identity/verify-checks.ts';

export const check = (result: VerifyResult, name: string) =>
  result.checks.find((candidate) => candidate.name === name);

export const failedChecks = (result: VerifyResult) =>
  result.checks.filter((candidate) => !candidate.passed).map((candidate) => candidate.name);
