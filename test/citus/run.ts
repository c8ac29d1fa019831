/**
 * `npm run test:citus`: the sharding plan on a real Citus cluster
 * (docs/scaling.md "Sharding"). CITUS_URL names a database on the
 * coordinator, with the citus extension created and the workers added
 * (citus_add_node). Steps, each printed with what it measured:
 *
 * 1. `lending-api migrate` and `lending-api distribute` (twice: the second
 *    run must change nothing) on the database's public schema;
 * 2. the bench's dataset (scale 1 unless --scale) imported through the
 *    import, as `npm run bench` loads it (reused when already loaded; then
 *    `npm run bench` with DATABASE_URL=CITUS_URL reuses it too);
 * 3. the list, ledger, import and HTTP suites, each suite's schema
 *    migrated and distributed (TEST_DISTRIBUTE_ON_CITUS);
 * 4. concurrent HTTP drawdowns on one credit limit through `lending-api
 *    serve`, and the money check: outstanding equals the accepted
 *    drawdowns, never above capacity, one entry per accepted drawdown;
 * 5. an EXPLAIN of every statement shape the service, the CLI and the
 *    import run (test/topology/statement-workload.ts), in its own
 *    transaction: each Citus plan must have one task.
 *
 * Without CITUS_URL it says that it did not run, and exits 0 (it is not
 * part of `npm test`). It exits 1 when any step fails.
 *
 *   CITUS_URL=postgres://postgres@127.0.0.1:9700/lending_bench npm run test:citus -- [--scale 1] [--skip-dataset] [--skip-suites]
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

if (!process.env.CITUS_URL) {
  process.stdout.write('test:citus did NOT run: CITUS_URL is not set (a database on a Citus coordinator with its workers added, e.g. postgres://postgres@127.0.0.1:9700/lending_bench)\n');
  process.exit(0);
}
const root = path.resolve(import.meta.dirname, '../..');
const result = spawnSync(process.execPath, [path.join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.citus.config.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, CITUS_ARGS: JSON.stringify(process.argv.slice(2)) },
});
process.exitCode = result.status ?? 1;
