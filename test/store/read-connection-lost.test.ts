import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseBudget } from '../../src/store/database-budget.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { tcpRelay } from '../helpers/tcp-relay.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';

const binDir = postgresBinDir();
// A read that waits for the advisory lock whileHeld holds (released with the read's own transaction).
const HELD = 'pg_advisory_xact_lock_shared(7)';

async function runningBackend(admin: pg.Client, marker: string): Promise<number> {
  for (let i = 0; i < 400; i += 1) {
    const { rows } = await admin.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()",
      [`%${marker}%`],
    );
    if (rows[0]) return rows[0].pid;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('the query never started');
}

/**
 * Runs `cut` while the read is held in the database (waiting for an advisory lock the admin holds), so it is still
 * running when its connection is cut however slow the machine; then lets it, and its retry, through.
 */
async function whileHeld<T>(admin: pg.Client, cut: () => Promise<T>): Promise<T> {
  await admin.query('SELECT pg_advisory_lock(7)');
  try {
    return await cut();
  } finally {
    await admin.query('SELECT pg_advisory_unlock(7)');
  }
}

// HAProxy cutting the sessions of a standby being promoted, as a terminated backend: the read runs again elsewhere.
describe.runIf(binDir)('a request’s read whose connection is lost under it', () => {
  let postgres: TempPostgres;
  let store: PostgresStore;
  let admin: pg.Client;

  beforeAll(async () => {
    postgres = await createTempPostgres(binDir ?? '');
    store = new PostgresStore(postgres.url, { poolSize: 4, connectionTimeoutMs: 800 });
    admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await store?.close();
    await postgres?.destroy();
  });

  it('is answered from a fresh connection within its budget instead of failing', async () => {
    const db = store.withBudget(new DatabaseBudget(30_000));
    const read = await whileHeld(admin, async () => {
      const held = db.query<{ answer: number }>(`SELECT 42 AS answer, ${HELD} AS marker_first_read`);
      const pid = await runningBackend(admin, 'marker_first_read');
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      return { held };
    });
    expect(await read.held).toEqual([{ answer: 42, marker_first_read: '' }]);
    expect(store.connectionRetries).toBe(1);
  });

  // HAProxy cuts every session to a member at once: the pool's idle connections to it are dead too, though the pool
  // has not read their end yet. The retry must not take one of them.
  it('is answered from a new connection although every idle connection of the pool was cut in the same instant', async () => {
    const db = store.withBudget(new DatabaseBudget(30_000));
    await Promise.all(Array.from({ length: 4 }, () => db.query('SELECT pg_sleep(0.05)')));
    const retriesBefore = store.connectionRetries;
    const read = await whileHeld(admin, async () => {
      const held = db.query<{ answer: number }>(`SELECT 42 AS answer, ${HELD} AS marker_all_cut`);
      await runningBackend(admin, 'marker_all_cut');
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
      return { held };
    });
    expect(await read.held).toEqual([{ answer: 42, marker_all_cut: '' }]);
    expect(store.connectionRetries).toBe(retriesBefore + 1);
  });

  // In the instant a server dies HAProxy still routes to it: the retry's new connection is accepted, then closed.
  it('is answered although the new connection of its retry is closed as it opens: one more is tried', async () => {
    const proxy = await tcpRelay(Number(new URL(postgres.url).port));
    const url = new URL(postgres.url);
    url.port = String(proxy.port);
    const relayed = new PostgresStore(url.toString(), { poolSize: 2, connectionTimeoutMs: 800 });
    try {
      const db = relayed.withBudget(new DatabaseBudget(30_000));
      await db.query('SELECT 1');
      const read = await whileHeld(admin, async () => {
        const held = db.query<{ answer: number }>(`SELECT 42 AS answer, ${HELD} AS marker_retry_closed`);
        const pid = await runningBackend(admin, 'marker_retry_closed');
        proxy.closeNext(1);
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        return { held };
      });
      expect(await read.held).toEqual([{ answer: 42, marker_retry_closed: '' }]);
      expect(relayed.connectionRetries).toBe(2);
    } finally {
      await relayed.close();
      await new Promise((resolve) => proxy.server.close(resolve));
    }
  });

  it('is retried once only: a second loss answers 503 (StoreUnavailableError)', async () => {
    const db = store.withBudget(new DatabaseBudget(30_000));
    // Its rejection is heard at once: it may come before the test gets to await it (the second loss lands
    // while the admin's terminate is still being answered), and unheard it is an unhandled rejection.
    const read = await whileHeld(admin, async () => {
      const held = db.query(`SELECT ${HELD} AS marker_second_read`).then(
        () => 'answered',
        (error: unknown) => error,
      );
      const first = await runningBackend(admin, 'marker_second_read');
      await admin.query('SELECT pg_terminate_backend($1)', [first]);
      let second = first;
      for (let i = 0; i < 400 && second === first; i += 1) second = await runningBackend(admin, 'marker_second_read');
      await admin.query('SELECT pg_terminate_backend($1)', [second]);
      return { held };
    });
    expect(await read.held).toMatchObject({ name: 'StoreUnavailableError' });
  });
});
