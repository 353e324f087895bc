import { configDefaults, defineConfig } from 'vitest/config';
import LongestFirst from './test/sequencer.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Its own step (`npm run test:container`, test/container/vitest.config.ts): it builds images.
    exclude: [...configDefaults.exclude, 'test/container/**'],
    globalSetup: ['test/global-setup.ts'],
    // Each test file boots its own app on its own database, so files can run side by side.
    pool: 'forks',
    // Workers are reused across files: each file no longer imports the app again (~2-4 s of CPU).
    isolate: false,
    // Four on two cores: many files wait on child processes, browsers and sockets, so three left the
    // cores idle about a quarter of the run (docs/testing.md, Duration in CI).
    maxWorkers: 4,
    // The longest files first (test/durations.json), so the run does not end on one long file.
    sequence: { sequencer: LongestFirst },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits up to 1 s by default: too short for a real browser on a loaded 2-core CI
    // machine (an explorer chart once took longer and failed CI). A poll that succeeds returns at once.
    expect: { poll: { timeout: 10_000 } },
    reporters: ['default'],
  },
});
