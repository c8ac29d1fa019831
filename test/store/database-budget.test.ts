import { describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { DatabaseBudget, DatabaseBudgetExceededError } from '../../src/store/database-budget.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { StoreUnavailableError, type Store } from '../../src/store/store.js';
import { openPostgresTestStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => 'succeeded',
    (error: unknown) => error,
  );
}

// A read's budget is carried on its request (store.withBudget), not in an AsyncLocalStorage.
const postgresUrl = process.env.DATABASE_URL;
describe.runIf(postgresUrl && /^postgres(ql)?:/.test(postgresUrl))('a read’s database budget (on postgres)', () => {
  it('ends a query that outlives the budget with 503’s error, and counts every query of the request against one budget', async () => {
    const store = new PostgresStore(postgresUrl ?? '', { poolSize: 2 });
    try {
      const slow = await failure(store.withBudget(new DatabaseBudget(300)).query('SELECT pg_sleep(5)'));
      expect(slow).toBeInstanceOf(StoreUnavailableError);
      expect((slow as StoreUnavailableError).cause).toBeInstanceOf(DatabaseBudgetExceededError);

      // Each 1.6 s sleep fits a 3 s budget of its own with room to spare (a new connection, a busy machine); the second
      // does not fit what is left of the first one's.
      const db = store.withBudget(new DatabaseBudget(3000));
      await db.query('SELECT pg_sleep(1.6)');
      const second = await failure(db.query('SELECT pg_sleep(1.6)'));
      expect((second as StoreUnavailableError).cause).toBeInstanceOf(DatabaseBudgetExceededError);
      // Its answer names the request's budget, not what was left of it when the query began.
      expect(((second as StoreUnavailableError).cause as DatabaseBudgetExceededError).budgetMs).toBe(3000);
      expect(await store.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await store.close();
    }
  });

  it('answers a list 503 once the budget is spent waiting for a pooled connection, though no write ever ran', async () => {
    // The pool's own wait is a minute: only the budget answers within it.
    const store: Store = await openPostgresTestStore(postgresUrl, 1, { poolWaitMs: 60_000 });
    let release = () => {};
    try {
      const tenant = await createTenant(store);
      const app = await buildApp({ store, databaseRequestBudgetMs: 2000 });
      const held = store.transaction(() => new Promise<void>((resolve) => (release = resolve)));
      const started = performance.now();
      const response = await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
      const ms = performance.now() - started;
      release();
      await held;
      expect(response.statusCode).toBe(503);
      expect(response.json<{ detail: string }>().detail).toBe("the database did not answer within this request's database time (2000 ms); retry shortly");
      expect(ms).toBeLessThan(30_000);
      expect((await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } })).statusCode).toBe(200);
      await app.close();
    } finally {
      release();
      await store.close();
    }
  });
});
