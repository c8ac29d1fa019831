import { describe, expect, it } from 'vitest';
import { DatabaseBudget, DatabaseBudgetExceededError } from '../../src/store/database-budget.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { describeEachStore } from '../helpers/stores.js';

const SETTING = "SELECT current_setting('synchronous_commit') AS value";

describeEachStore('store.transaction options and queryAtCommit', (store) => {
  it('runs a transaction with synchronousCommit remote_apply under it, and the next one under the default again', async () => {
    const inside = await store().transaction(async (tx) => (await tx.query<{ value: string }>(SETTING))[0]?.value, { synchronousCommit: 'remote_apply' });
    expect(inside).toBe('remote_apply');
    const [outside] = await store().query<{ value: string }>(SETTING);
    const plain = await store().transaction(async (tx) => (await tx.query<{ value: string }>(SETTING))[0]?.value);
    expect(plain).toBe(outside?.value);
    expect(plain).not.toBe('remote_apply');
  });

  it('commits the statement given to queryAtCommit with the transaction, its text values intact', async () => {
    const text = String.raw`O'Brien \' \\ "x" E'\n' $1 — ✓`;
    await store().exec('CREATE TABLE IF NOT EXISTS at_commit (n int, t text)');
    await store().exec('TRUNCATE at_commit');
    await store().transaction(async (tx) => {
      await tx.query('INSERT INTO at_commit VALUES (1, NULL)');
      tx.queryAtCommit('UPDATE at_commit SET t = $2 WHERE n = $1', [1, text]);
    });
    expect(await store().query('SELECT n, t FROM at_commit')).toEqual([{ n: 1, t: text }]);
  });

  it('rolls the whole transaction back when the statement given to queryAtCommit fails', async () => {
    await store().exec('CREATE TABLE IF NOT EXISTS at_commit (n int, t text)');
    await store().exec('TRUNCATE at_commit');
    await expect(
      store().transaction(async (tx) => {
        await tx.query('INSERT INTO at_commit VALUES (2, NULL)');
        tx.queryAtCommit('UPDATE at_commit SET n = $1 WHERE n = 2', ['not a number']);
      }),
    ).rejects.toThrow();
    expect(await store().query('SELECT n FROM at_commit')).toEqual([]);
  });
});

// The request's database budget (PostgreSQL; DATABASE_URL): an HTTP write's transaction is held to it.
const postgresUrl = process.env.DATABASE_URL;
describe.runIf(postgresUrl && /^postgres(ql)?:/.test(postgresUrl))('store.transaction inside a request’s database budget (on postgres)', () => {
  it('stops waiting for a pooled connection when the budget runs out, and the connection it would have had goes back to the pool', async () => {
    // A pool wait of a minute: only the budget can end this wait before the guard below does.
    const store = new PostgresStore(postgresUrl ?? '', { poolSize: 1, poolWaitMs: 60_000 });
    let releaseHeld = () => {};
    try {
      const held = store.transaction(() => new Promise<void>((resolve) => (releaseHeld = resolve)));
      await new Promise<void>((resolve) => setImmediate(resolve));
      const waited = store.transaction(async (tx) => tx.query('SELECT 1'), { budget: new DatabaseBudget(300) });
      const outcome = await Promise.race([
        waited.then(() => 'committed', (error: unknown) => error),
        new Promise((resolve) => setTimeout(() => resolve('still waiting after 20 s'), 20_000).unref()),
      ]);
      expect(outcome).toBeInstanceOf(StoreUnavailableError);
      expect((outcome as StoreUnavailableError).cause).toBeInstanceOf(DatabaseBudgetExceededError);

      releaseHeld();
      await held;
      expect(await store.transaction(async (tx) => tx.query<{ one: number }>('SELECT 1 AS one'))).toEqual([{ one: 1 }]);
      expect(store.pool.totalCount).toBe(1);
    } finally {
      releaseHeld();
      await store.close();
    }
  });
});
