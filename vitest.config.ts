import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // PGlite runs WebAssembly on the main thread; two cores, so keep the pool small.
    maxWorkers: 2,
  },
});
