import { defineConfig } from 'vitest/config';

/** What every suite that starts its own servers shares: one file at a time, the answer check, the prerequisites. */
export const ownServersTestOptions = {
  // Checks every answer the tests receive against openapi.json (the test that got an undeclared one fails).
  setupFiles: ['test/helpers/response-contract-hook.ts'],
  // Names a missing PostgreSQL server or PgBouncer, and how to install it, before any test starts.
  globalSetup: ['test/helpers/topology-prerequisites.ts'],
  testTimeout: 180_000,
  hookTimeout: 180_000,
  fileParallelism: false,
  maxWorkers: 1,
};

// The replication, failover and PgBouncer tests: they start their own
// PostgreSQL primary, standbys and PgBouncers, so they run on their own
// (`npm run test:topology`), one file at a time, not in the default suite.
export default defineConfig({
  test: {
    ...ownServersTestOptions,
    include: ['test/topology/**/*.topology.ts'],
    // The Patroni cluster has a config of its own (vitest.patroni.config.ts, `npm run test:patroni`): not yet in CI,
    // where a known flake (one 503 on a replica read in fault (d), about one run in three) would fail unrelated work.
    exclude: ['test/topology/patroni-failover.topology.ts'],
  },
});
