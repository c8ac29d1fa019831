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
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { startPgBouncer, type PoolMode } from '../helpers/topology.js';

/** The suites that run on PostgreSQL through the store helper (describeEachStore). */
export const SUITES_THROUGH_PGBOUNCER = ['test/listing', 'test/ledger', 'test/import', 'test/auth', 'test/http', 'test/rate-limits', 'test/openapi', 'test/examples'];

const mode = process.argv[2] as PoolMode;
if (mode !== 'transaction' && mode !== 'session') {
  console.error('usage: suite-through-pgbouncer.ts transaction|session [test paths…]');
  process.exit(2);
}
const target = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
const bouncer = await startPgBouncer({ port: Number(target.port || 5432) }, mode);
const paths = process.argv.length > 3 ? process.argv.slice(3) : SUITES_THROUGH_PGBOUNCER;
console.log(`suites through PgBouncer (${mode} mode, port ${bouncer.port}): ${paths.join(' ')}`);
// That suite asserts named statements' generic plans, which transaction mode turns off by design.
const excludedFiles = [...(mode === 'transaction' ? ['test/listing/generic-plans.test.ts'] : []), ...(await ownConnectionSuites(paths))];
// The others open extra pools with the `options` startup parameter, which PgBouncer 1.18 refuses.
console.log(`left out: ${excludedFiles.join(' ') || 'none'}`);
const excluded = excludedFiles.flatMap((file) => ['--exclude', file]);
const code = await new Promise<number>((resolve) => {
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

/** Test files under `paths` that open extra pools with a search_path of their own (`searchPath`, `postgresUrlWithSchema`). */
async function ownConnectionSuites(roots: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  const visit = async (entry: string): Promise<void> => {
    if (entry.endsWith('.test.ts')) {
      if (/searchPath:|postgresUrlWithSchema\(/.test(await readFile(entry, 'utf8'))) found.push(entry);
      return;
    }
    const children = await readdir(entry, { withFileTypes: true }).catch(() => []);
    for (const child of children) await visit(path.join(entry, child.name));
  };
  for (const root of roots) await visit(root);
  return found;
}
