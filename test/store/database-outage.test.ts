import { createServer, type AddressInfo, type Socket } from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const binDir = postgresBinDir();

/** Fails the test instead of hanging when a request never answers. */
async function answered(request: Promise<LightMyRequestResponse>, withinMs = 5000): Promise<LightMyRequestResponse> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${withinMs} ms: the request hung`)), withinMs);
  });
  try {
    return await Promise.race([request, hang]);
  } finally {
    clearTimeout(timer);
  }
}

// A PostgreSQL of this test's own, stopped and started under the app: never the shared one.
describe.runIf(binDir)('when PostgreSQL goes away and comes back', () => {
  let pg: TempPostgres;
  let store: PostgresStore;
  let app: FastifyInstance;
  let tenant: Tenant;

  beforeAll(async () => {
    pg = await createTempPostgres(binDir ?? '');
    store = new PostgresStore(pg.url, { poolSize: 4, connectionTimeoutMs: 800, queryTimeoutMs: 5000 });
    await migrate(store);
    tenant = await createTenant(store);
    await insertPaymentMethods(store, tenant.org.id, [paymentMethod()]);
    app = await buildApp({ store });
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
    await pg?.destroy();
  });

  const list = () => answered(app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } }));

  it('answers 503 problem+json with Retry-After without hanging, says not ready, and recovers with no restart', async () => {
    expect((await list()).statusCode).toBe(200);

    await pg.stop();
    const started = performance.now();
    const stopped = [await list(), await list()];
    console.log(`stopped PostgreSQL: two requests answered 503 in ${Math.round(performance.now() - started)} ms`);
    for (const response of stopped) {
      expect(response.statusCode).toBe(503);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.json()).toMatchObject({ status: 503, code: 'service_unavailable' });
      expect(response.body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|stack/);
    }
    const single = await answered(app.inject({ url: '/api/methods/pm_x/', headers: { authorization: tenant.authorization } }));
    expect(single.statusCode).toBe(503);
    const ready = await answered(app.inject({ url: '/readyz' }));
    expect(ready.statusCode).toBe(503);
    expect(ready.headers['retry-after']).toBe('1');
    expect((await answered(app.inject({ url: '/healthz' }))).statusCode).toBe(200);

    await pg.start();
    expect((await answered(app.inject({ url: '/readyz' }))).statusCode).toBe(200);
    const recovered = await list();
    expect(recovered.statusCode).toBe(200);
    expect(recovered.json()).toMatchObject({ count: 1 });
  });
});

describe.runIf(binDir)('when every pooled connection is busy', () => {
  it('makes requests wait for a free connection (load) rather than answer 503 (outage)', async () => {
    const pg = await createTempPostgres(binDir ?? '');
    const store = new PostgresStore(pg.url, { poolSize: 1, connectionTimeoutMs: 2000, poolWaitMs: 60_000 });
    const locker = new PostgresStore(pg.url, { poolSize: 1 });
    try {
      await migrate(store);
      const tenant = await createTenant(store);
      const app = await buildApp({ store });
      const get = () => answered(app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } }), 60_000);
      let locked = () => {};
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      const released = locker.transaction(async (tx) => {
        await tx.query('LOCK TABLE payment_methods IN ACCESS EXCLUSIVE MODE');
        locked();
        // Hold the only pooled connection (blocked on the lock) for longer than the connect timeout.
        await new Promise((resolve) => setTimeout(resolve, 3000));
      });
      await lockTaken;
      const responses = await Promise.all([get(), get(), get()]);
      await released;
      expect(responses.map((response) => response.statusCode)).toEqual([200, 200, 200]);
      await app.close();
    } finally {
      await locker.close();
      await store.close();
      await pg.destroy();
    }
  });
});

describe('when the database accepts connections but never answers', () => {
  it('gives up after the connect timeout and answers 503 instead of hanging', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const store = new PostgresStore(`postgres://postgres@127.0.0.1:${port}/db`, { poolSize: 2, connectionTimeoutMs: 300 });
    const app = await buildApp({ store });
    try {
      const response = await answered(app.inject({ url: '/readyz' }));
      expect(response.statusCode).toBe(503);
      const api = await answered(app.inject({ url: '/api/limits/', headers: { authorization: 'Basic b3JnOmxha18wMDAwMDAwMDAwMDAwMDAwX0FBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=' } }));
      expect(api.statusCode).toBe(503);
      expect(api.json()).toMatchObject({ code: 'service_unavailable' });
    } finally {
      await app.close();
      await store.close();
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});

// SIGSTOP on a PostgreSQL of this test's own: the server keeps its sockets open and answers nothing.
describe.runIf(binDir)('when PostgreSQL freezes (SIGSTOP)', () => {
  const BUDGET_MS = 1000;

  it('answers once the request’s database budget is spent (reads 503, writes sent whole 504 outcome_unknown), drops the stuck connections, and serves again after SIGCONT', async () => {
    const pg = await createTempPostgres(binDir ?? '');
    // Production timeouts: without the budget a frozen database holds a request for the 15 s statement timeout.
    const store = new PostgresStore(pg.url, { poolSize: 2, connectionTimeoutMs: 800, queryTimeoutMs: 15_000 });
    let frozen = false;
    try {
      await migrate(store);
      const tenant = await createTenant(store, 'Test Lender', 'write');
      await insertPaymentMethods(store, tenant.org.id, [paymentMethod()]);
      await insertCreditLimits(store, tenant.org.id, [creditLimit({ uid: 'cl_frozen', capacity: '1000.00' })]);
      // Credentials cached, as serve runs: a write then reaches its transaction without asking the frozen server first.
      const app = await buildApp({ store, databaseRequestBudgetMs: BUDGET_MS, authCache: { ttlMs: 60_000 } });
      const list = () => answered(app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } }), 8000);
      // Writes run in a transaction of their own: the budget must bound it too.
      const draw = (key: string) =>
        answered(
          app.inject({
            method: 'POST',
            url: '/api/limits/cl_frozen/drawdowns/',
            headers: { authorization: tenant.authorization, 'content-type': 'application/json', 'idempotency-key': key },
            payload: { amount: '1.00' },
          }),
          8000,
        );
      expect((await list()).statusCode).toBe(200);
      expect((await draw('before')).statusCode).toBe(201);
      expect(store.pool.idleCount).toBeGreaterThan(0);

      await pg.signal('SIGSTOP');
      frozen = true;
      const timings: number[] = [];
      // First, on the connections the pool holds open to the frozen server: two writes at once to one limit
      // (the second queues behind the first, then spends a budget of its own). Only the budget ends their wait.
      const writesStarted = performance.now();
      const writes = await Promise.all([draw('frozen-1'), draw('frozen-2')]);
      const writesMs = Math.round(performance.now() - writesStarted);
      // A lone write goes to the database whole, its COMMIT included, in one message, once its connection
      // has prepared its statements: the frozen server holds the message and may run it once it wakes, so
      // the answer is that the outcome is unknown. On a connection that had not, only its BEGIN was sent:
      // nothing ran. Either way the client retries with the same key.
      const nothingRan: string[] = [];
      for (const [i, response] of writes.entries()) {
        const { code } = response.json<{ code: string }>();
        expect([response.statusCode, code]).toEqual(response.statusCode === 503 ? [503, 'service_unavailable'] : [504, 'outcome_unknown']);
        expect(response.headers['retry-after']).toBe('1');
        if (response.statusCode === 503) nothingRan.push(`frozen-${i + 1}`);
      }
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        const response = await list();
        timings.push(Math.round(performance.now() - started));
        expect(response.statusCode).toBe(503);
        expect(response.headers['retry-after']).toBe('1');
        expect(response.json()).toMatchObject({ code: 'service_unavailable' });
      }
      console.log(`frozen PostgreSQL: two writes answered ${writes.map((response) => response.statusCode).join(" and ")} after ${writesMs} ms, reads 503 after ${timings.join(', ')} ms (budget ${BUDGET_MS} ms)`);
      // The budget, not the 15 s statement timeout, ends the wait (generous slack for a busy machine).
      for (const ms of timings) expect(ms).toBeLessThan(BUDGET_MS + 3000);
      // The queued write waits for the first one's budget, then spends its own: two budgets, not the statement timeout.
      expect(writesMs).toBeLessThan(2 * BUDGET_MS + 3000);
      // A connection that was stuck is closed, not handed to the next request.
      expect(store.pool.idleCount).toBe(0);

      await pg.signal('SIGCONT');
      frozen = false;
      const recovered = await list();
      expect(recovered.statusCode).toBe(200);
      const recorded = await store.query<{ idempotency_key: string }>(`SELECT idempotency_key FROM idempotency_keys WHERE org_id = $1 AND idempotency_key = ANY ($2)`, [
        tenant.org.id,
        nothingRan,
      ]);
      expect(recorded).toEqual([]);
      // Whether or not the server ran the others when it woke, a retry with the same key answers each once.
      for (const key of ['frozen-1', 'frozen-2']) expect((await draw(key)).statusCode).toBe(201);
      const [entries] = await store.query<{ n: string }>(`SELECT count(*)::text AS n FROM ledger_entries WHERE org_id = $1`, [tenant.org.id]);
      expect(entries?.n).toBe('3');
      const [limit] = await store.query<{ outstanding: string }>(`SELECT outstanding::text AS outstanding FROM credit_limits WHERE org_id = $1`, [tenant.org.id]);
      expect(limit?.outstanding).toBe('3.00');
      await app.close();
    } finally {
      if (frozen) await pg.signal('SIGCONT');
      await store.close();
      await pg.destroy();
    }
  });
});
