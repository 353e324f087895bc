// The container test runs on its own (`npm run test:container`, its own step in .ci/run, after
// `npm test`): it builds images and starts a compose deployment, which the main suite must not wait for.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/container/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 1,
    testTimeout: 900_000,
    hookTimeout: 900_000,
    reporters: ['default'],
  },
});
