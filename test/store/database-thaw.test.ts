import { performance } from 'node:perf_hooks';
import { expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { tcpRelay } from '../helpers/tcp-relay.js';
import { createTempPostgres, postgresBinDir } from '../helpers/temp-postgres.js';
import { createTenant } from '../helpers/tenants.js';

const binDir = postgresBinDir();

// A frozen server queues every connection attempt; once thawed it must serve each before a new one.
it.runIf(binDir)('keeps one connection attempt at a time to a frozen PostgreSQL, so the first request after SIGCONT is served', async () => {
  const pg = await createTempPostgres(binDir ?? '');
  const relay = await tcpRelay(Number(new URL(pg.url).port));
  const url = new URL(pg.url);
  url.port = String(relay.port);
  // The serving default (DATABASE_CONNECT_TIMEOUT_MS).
  const CONNECT_TIMEOUT_MS = 800;
  const POOL_SIZE = 10;
  const store = new PostgresStore(url.toString(), { poolSize: POOL_SIZE, connectionTimeoutMs: CONNECT_TIMEOUT_MS, queryTimeoutMs: 15_000 });
  let frozen = false;
  try {
    await migrate(store);
    const tenant = await createTenant(store);
    await insertCreditLimits(store, tenant.org.id, [creditLimit({ uid: 'cl_thaw' })]);
    const app = await buildApp({ store, databaseRequestBudgetMs: 1000, authCache: { ttlMs: 60_000 } });
    const read = () => app.inject({ url: '/api/limits/cl_thaw/', headers: { authorization: tenant.authorization } });
    expect((await read()).statusCode).toBe(200);

    await pg.signal('SIGSTOP');
    frozen = true;
    const openedBefore = relay.opened();
    const frozenAt = performance.now();
    // Requests keep arriving through the freeze, more at once than the pool has connections.
    const answers: Promise<number>[] = [];
    for (let round = 0; round < 20; round += 1) {
      for (let i = 0; i < 2 * POOL_SIZE; i += 1) answers.push(read().then((response) => response.statusCode));
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const frozenMs = performance.now() - frozenAt;
    const attempts = relay.opened() - openedBefore;
    await pg.signal('SIGCONT');
    frozen = false;

    const first = await read();
    expect(first.statusCode, first.body).toBe(200);
    // Each request of the freeze got an answer: 503 (its budget ran out) or 200 (served after the thaw).
    for (const status of await Promise.all(answers)) expect([200, 503]).toContain(status);
    // The pool's first round, then one attempt per connect timeout — not one per pooled connection each time.
    const bound = POOL_SIZE + 2 * Math.ceil(frozenMs / CONNECT_TIMEOUT_MS) + 2;
    console.log(`frozen ${Math.round(frozenMs)} ms: ${attempts} connection attempts (bound ${bound}); first request after SIGCONT ${first.statusCode}`);
    expect(attempts).toBeLessThanOrEqual(bound);
    await app.close();
  } finally {
    if (frozen) await pg.signal('SIGCONT');
    await store.close();
    await new Promise((resolve) => relay.server.close(resolve));
    await pg.destroy();
  }
});
