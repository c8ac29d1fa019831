/**
 * Figures for docs/scaling.md, on this machine:
 *   node --import tsx test/topology/measure.ts
 * - drawdowns per second on the primary, recorded one after another through
 *   the ledger code, with the synchronous standby named (remote_apply waits
 *   for it) and with synchronous_standby_names emptied (the same code, no wait);
 * - requests per second of one node (autocannon, 10 connections, 10 s) on the
 *   primary and on the synchronous standby, page 1 and the "prepare a loan" lookup.
 */
import autocannon from 'autocannon';
import { applyLedgerEntry } from '../../src/ledger/index.js';
import { ledgerOf } from '../helpers/ledger.js';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { spawnServer } from '../helpers/spawn-server.js';
import { postgresBinDir } from '../helpers/temp-postgres.js';
import { createTenant } from '../helpers/tenants.js';
import { createReplicationTopology, PRIMARY_SETTINGS } from '../helpers/topology.js';

const DRAWS = Number(process.env.DRAWS ?? 500);
const topology = await createReplicationTopology(postgresBinDir() ?? '');
try {
  const store = new PostgresStore(topology.primary.url, { poolSize: 2 });
  await migrate(store);
  const tenant = await createTenant(store);
  await insertPaymentMethods(store, tenant.org.id, Array.from({ length: 10_000 }, (_, i) => paymentMethod({ uid: `pm_${i}`, entity: `ent_${i % 2000}`, currency: i % 2 ? 'USD' : 'EUR' })));
  await insertCreditLimits(store, tenant.org.id, [creditLimit({ uid: 'cl_1', capacity: '9999999.00' })]);
  const drawsPerSecond = async (label: string) => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < DRAWS; i += 1) await applyLedgerEntry(ledgerOf(store), tenant.org.id, { kind: 'drawdown', id: `${label}_${i}`, limit: 'cl_1', amount: '1.00' });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return Math.round(DRAWS / seconds);
  };
  const withWait = await drawsPerSecond('sync');
  await topology.primary.sql(`ALTER SYSTEM SET synchronous_standby_names = ''`);
  await topology.primary.sql('SELECT pg_reload_conf()');
  const withoutWait = await drawsPerSecond('local');
  await topology.primary.sql(`ALTER SYSTEM SET synchronous_standby_names = '${PRIMARY_SETTINGS.synchronous_standby_names}'`);
  await topology.primary.sql('SELECT pg_reload_conf()');
  console.log(`drawdowns/s, one client, sequential: remote_apply to the synchronous standby ${withWait}; no synchronous standby ${withoutWait}`);
  await store.close();
  await topology.caughtUp();

  const env = { RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'warn' };
  for (const [name, url, extra] of [
    ['primary', topology.primary.url, {}],
    ['synchronous standby', topology.syncReplica.url, { REPLICA_LIMITS: 'sync' }],
  ] as const) {
    const node = await spawnServer([], { ...env, ...extra, DATABASE_URL: url });
    for (const [scenario, path] of [
      ['page 1', '/api/methods/'],
      ['prepare a loan (entity + currency)', '/api/methods/?entity=ent_17&currency=USD'],
      ['credit limit retrieve', '/api/limits/cl_1/'],
    ] as const) {
      const result = await autocannon({ url: node.url + path, connections: 10, duration: 10, headers: { authorization: tenant.authorization } });
      console.log(`${name} node, ${scenario}: ${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}`);
    }
    node.child.kill('SIGTERM');
    await node.exited;
  }
} finally {
  await topology.destroy();
}
