import { defineConfig } from 'vitest/config';

// `npm run test:citus` (test/citus/run.ts): the sharding plan on a real Citus
// cluster named by CITUS_URL. Not part of `npm test`: it needs that cluster.
export default defineConfig({
  test: {
    include: ['test/citus/**/*.citus.ts'],
    // Runs each test's properties from a seed it prints when the test fails (FC_SEED replays it).
    setupFiles: ['test/helpers/fast-check-seed.ts'],
    testTimeout: 14_400_000, // the scale-1 import alone took about an hour on the shared 2-core VM
    hookTimeout: 300_000,
    fileParallelism: false,
    maxWorkers: 1,
  },
});
