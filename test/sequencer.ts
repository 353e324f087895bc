// The order of the test files: longest first, from test/durations.json (seconds per file, measured on
// the CI machine; refreshed with scripts/test-durations.ts). Vitest's own order falls back to the file
// size when it has no cached durations, which is always the case in CI's fresh copy: there, short
// files holding long tests (the crash test: 45 lines, ~90 s) ran last, one worker busy and the other
// idle. Files missing from the list run first (their length is unknown), as vitest does.
import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const durations: Record<string, number> = JSON.parse(
  readFileSync(new URL('./durations.json', import.meta.url), 'utf8'),
);

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = (spec: TestSpecification) => {
      const relative = spec.moduleId.slice(spec.project.config.root.length + 1);
      return durations[relative] ?? Number.POSITIVE_INFINITY;
    };
    return [...files].sort((a, b) => seconds(b) - seconds(a));
  }
}
