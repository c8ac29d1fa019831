import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { startPgBouncer, type PgBouncer } from '../helpers/topology.js';
import { failures, startLoad, statusCounts, sleep } from './load.js';

const binDir = postgresBinDir();
const PUBLIC_URL = 'https://lending.example';
const PAGES = [
  '/api/methods/',
  '/api/methods/?page=2',
  '/api/methods/?currency=usd&order_by=-created_at',
  '/api/methods/?entity=ent_2',
  '/api/methods/pm_7/',
  '/api/limits/',
  '/api/limits/?order_by=-capacity&page=2',
  '/api/limits/cl_3/',
];

describe.runIf(binDir)('serve through PgBouncer', () => {
  let pg: TempPostgres;
  let tenant: Tenant;
  let transactionMode: PgBouncer;
  let sessionMode: PgBouncer;
  const servers: SpawnedServer[] = [];

  beforeAll(async () => {
    pg = await createTempPostgres(binDir ?? '');
    const store = new PostgresStore(pg.url, { poolSize: 2 });
    await migrate(store);
    tenant = await createTenant(store);
    await insertPaymentMethods(
      store,
      tenant.org.id,
      Array.from({ length: 25 }, (_, i) => paymentMethod({ uid: `pm_${i}`, entity: `ent_${i % 3}`, currency: i % 2 ? 'USD' : 'EUR' })),
    );
    await insertCreditLimits(store, tenant.org.id, Array.from({ length: 14 }, (_, i) => creditLimit({ uid: `cl_${i}`, capacity: `${1000 + i}.00` })));
    await store.close();
    [transactionMode, sessionMode] = await Promise.all([startPgBouncer({ port: Number(new URL(pg.url).port) }, 'transaction'), startPgBouncer({ port: Number(new URL(pg.url).port) }, 'session')]);
  });
  afterAll(async () => {
    for (const server of servers) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    await transactionMode?.destroy();
    await sessionMode?.destroy();
    await pg?.destroy();
  });

  const serve = async (url: string, env: Record<string, string> = {}) => {
    const server = await spawnServer([], { DATABASE_URL: url, PUBLIC_URL, RATE_LIMIT_PER_MINUTE: '0', DATABASE_POOL_SIZE: '4', ...env });
    servers.push(server);
    return server;
  };
  const pages = async (server: SpawnedServer) => {
    const answers: unknown[] = [];
    for (const path of PAGES) {
      const response = await fetch(server.url + path, { headers: { authorization: tenant.authorization } });
      answers.push({ path, status: response.status, body: { ...((await response.json()) as object), request_id: undefined } });
    }
    return answers;
  };
  /** Two concurrent clients per page for a while: every answer must be a 200. */
  const underLoad = async (server: SpawnedServer) => {
    const load = startLoad([{ name: 'node', baseUrl: server.url, paths: PAGES, authorization: tenant.authorization }], 4);
    await sleep(3000);
    const tally = (await load.stop()).get('node');
    return { failures: failures(tally), counts: statusCounts(tally) };
  };

  it('answers the same pages, under concurrent load too, in transaction mode (DATABASE_PREPARED_STATEMENTS=false) and in session mode (default)', async () => {
    const direct = await serve(pg.url);
    const expected = await pages(direct);
    const viaTransaction = await serve(transactionMode.url(), { DATABASE_PREPARED_STATEMENTS: 'false' });
    const viaSession = await serve(sessionMode.url());
    expect(await pages(viaTransaction)).toEqual(expected);
    expect(await pages(viaSession)).toEqual(expected);
    const transactionLoad = await underLoad(viaTransaction);
    const sessionLoad = await underLoad(viaSession);
    console.log('through PgBouncer for 3 s, 4 clients:', { transaction: transactionLoad.counts, session: sessionLoad.counts });
    expect({ transaction: transactionLoad.failures, session: sessionLoad.failures }).toEqual({ transaction: 0, session: 0 });
  });

  it('fails in transaction mode with named prepared statements (why the setting exists)', async () => {
    const named = await serve(transactionMode.url());
    const load = await underLoad(named);
    console.log('transaction mode with named statements:', load.counts);
    expect(load.failures).toBeGreaterThan(0);
  });
});
