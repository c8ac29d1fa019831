import { defineConfig } from 'vitest/config';

/** What every suite that starts its own servers shares: one file at a time, the answer check, the prerequisites. */
export const ownServersTestOptions = {
  // Checks every answer the tests receive against openapi.json (the test that got an undeclared one fails);
  // runs each test's properties from a seed it prints when the test fails (FC_SEED replays it).
  setupFiles: ['test/helpers/response-contract-hook.ts', 'test/helpers/fast-check-seed.ts'],
  // Names a missing PostgreSQL server or PgBouncer, and how to install it, before any test starts.
  globalSetup: ['test/helpers/topology-prerequisites.ts'],
  // Timeouts catch hangs, not slowness: a topology test that takes 2 minutes beside other work (1,000 drawdowns each
  // read back, a Patroni cluster started) must not turn red for it, and its own named waits must fire first.
  testTimeout: 900_000,
  hookTimeout: 900_000,
  fileParallelism: false,
  maxWorkers: 1,
};

// The replication, failover, PgBouncer and Patroni tests: they start their own
// PostgreSQL primary, standbys, PgBouncers, or Patroni + etcd + HAProxy, so
// they run on their own (`npm run test:topology`, which CI runs), one file at
// a time, not in the default suite.
export default defineConfig({ test: { ...ownServersTestOptions, include: ['test/topology/**/*.topology.ts'] } });
