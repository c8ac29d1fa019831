/**
 * Time to 503 for a frozen (SIGSTOP) and a stopped PostgreSQL, with the
 * serving defaults (DATABASE_REQUEST_BUDGET_MS 2000, DATABASE_CONNECT_TIMEOUT_MS
 * 800, DATABASE_QUERY_TIMEOUT_MS 15000), on a throwaway server of its own.
 *
 *   node --import tsx scripts/measure-database-faults.ts
 */
import { performance } from 'node:perf_hooks';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { nodeLedger } from '../src/node-ledger.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { insertPaymentMethods, paymentMethod } from '../test/helpers/records.js';
import { createTempPostgres, postgresBinDir } from '../test/helpers/temp-postgres.js';
import { createTenant } from '../test/helpers/tenants.js';

const binDir = postgresBinDir();
if (!binDir) throw new Error('needs the PostgreSQL server binaries');
const config = loadConfig({});
const pg = await createTempPostgres(binDir);
const store = new PostgresStore(pg.url, {
  poolSize: config.databasePoolSize,
  connectionTimeoutMs: config.databaseConnectTimeoutMs,
  queryTimeoutMs: config.databaseQueryTimeoutMs,
  poolWaitMs: config.databasePoolWaitMs,
});
try {
  await migrate(store);
  const tenant = await createTenant(store);
  await insertPaymentMethods(store, tenant.org.id, Array.from({ length: 20 }, () => paymentMethod()));
  const app = await buildApp({ store, ledger: nodeLedger(store, config), databaseRequestBudgetMs: config.databaseRequestBudgetMs });
  const timeList = async () => {
    const started = performance.now();
    const response = await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
    return `${response.statusCode} in ${Math.round(performance.now() - started)} ms`;
  };
  const five = async () => {
    const results: string[] = [];
    for (let i = 0; i < 5; i++) results.push(await timeList());
    return results.join(', ');
  };
  console.log(`healthy:  ${await five()}`);
  await pg.signal('SIGSTOP');
  console.log(`frozen:   ${await five()}   (budget ${config.databaseRequestBudgetMs} ms)`);
  await pg.signal('SIGCONT');
  console.log(`thawed:   ${await five()}`);
  await pg.stop();
  console.log(`stopped:  ${await five()}`);
  await pg.start();
  console.log(`restarted: ${await five()}`);
  await app.close();
} finally {
  await pg.signal('SIGCONT').catch(() => {});
  await store.close();
  await pg.destroy();
}
