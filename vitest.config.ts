import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds the migrated PGlite template every test store is copied from.
    globalSetup: ['test/helpers/pglite-template.ts'],
    testTimeout: 30_000,
    // Generous: starting a store takes seconds on an idle machine and over a minute on a 2-core one that is busy.
    hookTimeout: 300_000,
    // PGlite runs WebAssembly on the main thread; two cores, so keep the pool small.
    maxWorkers: 2,
  },
});
