import { request as httpRequest } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { TransactionInterruptedError } from '../../src/store/transaction-interrupted.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const binDir = postgresBinDir();

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function eventually<T>(attempt: () => Promise<T | undefined>, tries = 400, pauseMs = 25): Promise<T> {
  for (let i = 0; i < tries; i += 1) {
    const value = await attempt();
    if (value !== undefined) return value;
    await pause(pauseMs);
  }
  throw new Error('condition never became true');
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error('the transaction resolved'),
    (error: unknown) => error,
  );
}

/** Waits until the backend `pid` has exited (its FATAL sent, its socket closed). */
async function backendGone(admin: pg.Client, pid: number): Promise<void> {
  await eventually(async () => {
    const { rows } = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
    return rows.length === 0 ? true : undefined;
  });
}

// A PostgreSQL of this file's own: backends are terminated and the server is shut down under the store.
describe.runIf(binDir)('a transaction whose connection dies', () => {
  let postgres: TempPostgres;
  let store: PostgresStore;
  let admin: pg.Client;

  beforeAll(async () => {
    postgres = await createTempPostgres(binDir ?? '');
    store = new PostgresStore(postgres.url, { poolSize: 4, connectionTimeoutMs: 800 });
    await store.exec(`
      CREATE TABLE written (id int);
      CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NULL; END $$;
      CREATE TABLE slow_at_commit (id int);
      CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON slow_at_commit DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION slow_commit();`);
    admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end().catch(() => {});
    await store?.close();
    await postgres?.destroy();
  });

  /**
   * A transaction that writes, then waits for `gate` between two statements; resolves its backend's pid once it waits.
   * `failure`: what it rejected with, handled from the start (it may reject while the test awaits something else).
   */
  function transactionHeldOpen(gate: Promise<void>) {
    const backend = deferred<number>();
    const failure = rejection(store.transaction(async (tx) => {
      const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await tx.query('INSERT INTO written VALUES (1)');
      backend.resolve(row?.pid ?? 0);
      await gate;
      await tx.query('INSERT INTO written VALUES (2)');
    }));
    return { backend: backend.promise, failure };
  }

  it('rejects, without crashing the process, when its backend is terminated between two statements; nothing was committed', async () => {
    const gate = deferred();
    const held = transactionHeldOpen(gate.promise);
    const pid = await held.backend;
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await backendGone(admin, pid);
    // Give the FATAL time to reach the idle client: the event that crashed the process arrives here.
    await pause(200);
    gate.resolve();
    const error = await held.failure;
    expect(error).toBeInstanceOf(TransactionInterruptedError);
    expect(error).toMatchObject({ stage: 'in-transaction', outcomeUnknown: false });
    expect((await admin.query('SELECT count(*)::int AS n FROM written')).rows[0]).toEqual({ n: 0 });
    // The broken connection was discarded: the next transaction commits.
    await store.transaction(async (tx) => tx.query('SELECT 1'));
  });

  it('says the outcome is unknown when its backend is terminated after COMMIT was sent', async () => {
    // Handled from the start: the FATAL can reach the store before the admin's answer reaches the test.
    const failure = rejection(store.transaction(async (tx) => {
      await tx.query('INSERT INTO slow_at_commit VALUES (1)');
    }));
    // COMMIT runs the deferred trigger, which sleeps: the commit is in flight.
    const pid = await eventually(async () => {
      const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE query = 'COMMIT' AND state = 'active'");
      return rows[0]?.pid;
    });
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const error = await failure;
    expect(error).toBeInstanceOf(TransactionInterruptedError);
    expect(error).toMatchObject({ stage: 'commit-sent', outcomeUnknown: true });
  });

  it('rejects when the server is shut down (fast) between two statements, and commits again once it is back', async () => {
    const gate = deferred();
    const held = transactionHeldOpen(gate.promise);
    await held.backend;
    await admin.end();
    await postgres.stop();
    await pause(200);
    gate.resolve();
    const error = await held.failure;
    expect(error).toMatchObject({ stage: 'in-transaction', outcomeUnknown: false });
    // Down: a transaction is refused before anything is sent.
    expect(await rejection(store.transaction(async (tx) => tx.query('SELECT 1')))).toMatchObject({ stage: 'before-begin' });
    await postgres.start();
    admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await store.transaction(async (tx) => tx.query('INSERT INTO written VALUES (3)'));
    expect((await admin.query('SELECT array_agg(id)::text AS ids FROM written')).rows[0]).toEqual({ ids: '{3}' });
  });
});

/** POSTs a drawdown of 1.00: its status, a refusal's code and, if recorded, its entry's id. */
function post(url: string, authorization: string, key: string): Promise<{ status: number; code?: string; id?: string }> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ amount: '1.00' });
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { authorization, 'content-type': 'application/json', 'idempotency-key': key, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status === 201) resolve({ status, id: (JSON.parse(text) as { entry: { id: string } }).entry.id });
          else resolve({ status, code: (JSON.parse(text) as { code?: string }).code ?? 'none' });
        });
      },
    );
    // A refused or reset connection: the node is gone (the test then fails on its exit).
    req.on('error', () => resolve({ status: 0 }));
    req.end(body);
  });
}

// A real `serve` process under a write load while its database connections are killed mid-transaction.
describe.runIf(binDir)('serve under write load when its database connections die', () => {
  let postgres: TempPostgres;
  let tenant: Tenant;
  let server: SpawnedServer | undefined;

  beforeAll(async () => {
    postgres = await createTempPostgres(binDir ?? '');
    const store = new PostgresStore(postgres.url, { poolSize: 2 });
    await migrate(store);
    tenant = await createTenant(store, 'Test Lender', 'write');
    await insertCreditLimits(
      store,
      tenant.org.id,
      Array.from({ length: 8 }, (_, i) => creditLimit({ uid: `cl_load_${i}`, capacity: '1000000.00' })),
    );
    await store.close();
  });
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await postgres?.destroy();
  });

  it('keeps running through terminated backends and a fast shutdown, answers 201, 503 or 504 outcome_unknown, and serves again', async () => {
    server = await spawnServer([], { DATABASE_URL: postgres.url, DATABASE_POOL_SIZE: '8', RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0' });
    const running = server;
    let exited: number | string | undefined;
    void running.exited.then((code) => (exited = code));
    /** Answers by status and code ('201', '503 service_unavailable', …). */
    const statuses = new Map<string, number>();
    const acknowledged: string[] = [];
    let writing = true;
    let sequence = 0;
    const writer = async (n: number) => {
      for (let i = 0; writing && i < 100_000; i += 1) {
        const key = `w${n}-${(sequence += 1)}`;
        const { status, code, id } = await post(`${running.url}/api/limits/cl_load_${n}/drawdowns/`, tenant.authorization, key);
        const answer = code === undefined ? String(status) : `${status} ${code}`;
        statuses.set(answer, (statuses.get(answer) ?? 0) + 1);
        if (id) acknowledged.push(id);
      }
    };
    const writers = Array.from({ length: 8 }, (_, n) => writer(n));

    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    // Kill the node's connections while its write transactions sit between two statements, again and again.
    let terminated = 0;
    for (let round = 0; round < 2000 && terminated < 10; round += 1) {
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
          WHERE state = 'idle in transaction' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      );
      terminated += rows[0]?.n ?? 0;
    }
    await admin.end();
    expect(terminated).toBeGreaterThanOrEqual(10);

    // A fast shutdown under the same load, then the database back.
    await postgres.stop();
    await pause(500);
    await postgres.start();
    const servedAgain = await eventually(async () => {
      const { status } = await post(`${running.url}/api/limits/cl_load_0/drawdowns/`, tenant.authorization, `after-${Date.now()}`);
      return status === 201 ? true : undefined;
    });
    writing = false;
    await Promise.all(writers);

    expect(servedAgain).toBe(true);
    expect(exited).toBeUndefined();
    expect(running.child.exitCode).toBeNull();
    expect(running.stderr()).not.toMatch(/unhandled 'error' event/i);
    // Every answer was an answer: the write recorded (201), refused having run nothing (503), or — its connection
    // lost after COMMIT was sent — outcome_unknown (504, retry with the key); never a dropped connection or a 500.
    const honest = new Set(['201', '503 service_unavailable', '504 outcome_unknown']);
    expect([...statuses.keys()].filter((answer) => !honest.has(answer))).toEqual([]);
    expect(statuses.get('503 service_unavailable') ?? 0).toBeGreaterThan(0);
    // Every acknowledged drawdown is recorded.
    const check = new pg.Client({ connectionString: postgres.url });
    await check.connect();
    const { rows } = await check.query<{ id: string }>('SELECT id FROM ledger_entries WHERE org_id = $1', [tenant.org.id]);
    await check.end();
    const recorded = new Set(rows.map((row) => row.id));
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(acknowledged.filter((id) => !recorded.has(id))).toEqual([]);
  });
});
