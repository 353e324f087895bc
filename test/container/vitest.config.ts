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
    // The set-up builds the images: from an empty build cache (a fresh machine) the base image
    // (debootstrap, about 5 min here), the service's image (about 11 min) and the PostgreSQL, Redis
    // and HAProxy images (about 4 min) take up to about 20 minutes; from the cache, seconds.
    hookTimeout: 1_800_000,
    reporters: ['default'],
  },
});
