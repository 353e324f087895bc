import { configDefaults, defineConfig } from 'vitest/config';

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
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
