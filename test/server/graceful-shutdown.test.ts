import { request as httpRequest } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const binDir = postgresBinDir();

/** GET on a fresh connection (no keep-alive reuse): status and body, or the connection error. */
function get(url: string, authorization?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false, headers: authorization ? { authorization } : {} }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function eventually<T>(attempt: () => Promise<T | undefined>, tries = 200, pauseMs = 50): Promise<T> {
  for (let i = 0; i < tries; i += 1) {
    const value = await attempt();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  throw new Error('condition never became true');
}

describe.runIf(binDir)('lending-api serve on SIGTERM', () => {
  let postgres: TempPostgres;
  let tenant: Tenant;
  let server: SpawnedServer | undefined;

  beforeAll(async () => {
    postgres = await createTempPostgres(binDir ?? '');
    const store = new PostgresStore(postgres.url, { poolSize: 2 });
    await migrate(store);
    tenant = await createTenant(store);
    await insertPaymentMethods(store, tenant.org.id, [paymentMethod(), paymentMethod()]);
    await store.close();
  });
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await postgres?.destroy();
  });

  it('stops accepting, finishes the request in flight, closes the pool and exits 0', async () => {
    // No per-request database budget: the request must stay in flight, blocked on a lock, for as long as the test needs.
    server = await spawnServer([], { DATABASE_URL: postgres.url, DATABASE_REQUEST_BUDGET_MS: '0' });
    const running = server;
    expect((await get(`${running.url}/readyz`)).status).toBe(200);

    // Hold a lock the list query needs, so a request stays in flight for as long as the test wants.
    const locker = new pg.Client({ connectionString: postgres.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE payment_methods IN ACCESS EXCLUSIVE MODE');
    const slow = get(`${running.url}/api/methods/`, tenant.authorization);
    // The request is in flight once its query waits for that lock.
    await eventually(async () => {
      const { rows } = await locker.query<{ waiting: string }>(
        "SELECT count(*)::text AS waiting FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
      );
      return rows[0]?.waiting !== '0' ? true : undefined;
    });

    running.child.kill('SIGTERM');
    // A connection racing the close may be accepted and then reset; soon the port refuses outright.
    const refused = await eventually(() =>
      get(`${running.url}/healthz`).then(
        () => undefined,
        (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : error.code),
      ),
    );
    expect(refused).toBe('ECONNREFUSED');

    await locker.query('COMMIT');
    await locker.end();
    const finished = await slow;
    expect(finished.status).toBe(200);
    expect(JSON.parse(finished.body)).toMatchObject({ count: 2 });

    expect(await running.exited).toBe(0);
    expect(running.stderr()).toContain('SIGTERM received');

    // The pool was closed: no connection from the server is left on the database.
    const check = new pg.Client({ connectionString: postgres.url });
    await check.connect();
    const { rows } = await check.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
    );
    await check.end();
    expect(rows[0]?.n).toBe('0');
  });
});
