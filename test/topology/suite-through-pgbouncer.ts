/**
 * Runs the PostgreSQL test suites through a real PgBouncer in front of
 * DATABASE_URL's server, in transaction or session pooling mode:
 *
 *   node --import tsx test/topology/suite-through-pgbouncer.ts transaction [test paths…]
 *
 * Each suite gets a role of its own whose search_path is its schema
 * (PgBouncer refuses the `options` startup parameter the direct runs use),
 * and in transaction mode the list engine's statements go unnamed
 * (DATABASE_PREPARED_STATEMENTS=false), as a service behind it is configured.
 */
import { spawn } from 'node:child_process';
import { startPgBouncer, type PoolMode } from '../helpers/topology.js';

/** The suites that run on PostgreSQL through the store helper (describeEachStore). */
export const SUITES_THROUGH_PGBOUNCER = ['test/listing', 'test/ledger', 'test/import', 'test/auth', 'test/http', 'test/openapi', 'test/examples'];

const mode = process.argv[2] as PoolMode;
if (mode !== 'transaction' && mode !== 'session') {
  console.error('usage: suite-through-pgbouncer.ts transaction|session [test paths…]');
  process.exit(2);
}
const target = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
const bouncer = await startPgBouncer({ port: Number(target.port || 5432) }, mode);
const paths = process.argv.length > 3 ? process.argv.slice(3) : SUITES_THROUGH_PGBOUNCER;
console.log(`suites through PgBouncer (${mode} mode, port ${bouncer.port}): ${paths.join(' ')}`);
const code = await new Promise<number>((resolve) => {
  // That suite asserts named statements' generic plans, which transaction mode turns off by design.
  const excluded = mode === 'transaction' ? ['--exclude', 'test/listing/generic-plans.test.ts'] : [];
  const child = spawn('npx', ['vitest', 'run', ...excluded, ...paths], {
    stdio: 'inherit',
    env: {
      ...process.env,
      DATABASE_URL: bouncer.url(target.pathname.slice(1) || 'postgres'),
      TEST_SCHEMA_BY_ROLE: '1',
      DATABASE_PREPARED_STATEMENTS: mode === 'transaction' ? 'false' : 'true',
    },
  });
  child.once('exit', (exitCode) => resolve(exitCode ?? 1));
});
await bouncer.destroy();
process.exit(code);
