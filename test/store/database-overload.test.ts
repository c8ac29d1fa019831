import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { isUnavailableSqlstate } from '../../src/store/unavailable-sqlstates.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const binDir = postgresBinDir();

describe('which SQLSTATEs mean the database cannot serve now', () => {
  it.each(['08006', '08001', '53000', '53100', '53200', '53300', '53400', '57P01', '57P02', '57P03', '57P04', '57P05', '57014'])('%s is unavailability (503)', (code) => {
    expect(isUnavailableSqlstate(code)).toBe(true);
  });
  it.each(['42601', '22P02', '23505', '40001', '57000', '5300', undefined])('%s is not', (code) => {
    expect(isUnavailableSqlstate(code)).toBe(false);
  });
});

// A PostgreSQL of this test's own with room for only four sessions.
describe.runIf(binDir)('when PostgreSQL has no connection slot left (SQLSTATE 53300)', () => {
  const MAX_CONNECTIONS = 4;
  let server: TempPostgres;
  let store: PostgresStore;
  let app: FastifyInstance;
  let tenant: Tenant;
  const hogs: pg.Client[] = [];

  beforeAll(async () => {
    server = await createTempPostgres(binDir ?? '', { settings: { max_connections: MAX_CONNECTIONS, superuser_reserved_connections: 0 } });
    store = new PostgresStore(server.url, { poolSize: 2, connectionTimeoutMs: 2000 });
    await migrate(store);
    tenant = await createTenant(store);
    await insertPaymentMethods(store, tenant.org.id, [paymentMethod()]);
    app = await buildApp({ store });
  });
  afterAll(async () => {
    await Promise.all(hogs.map((client) => client.end().catch(() => {})));
    await app?.close();
    await store?.close();
    await server?.destroy();
  });

  it('answers 503 problem+json with Retry-After (not 500), and 200 again once slots free up', async () => {
    // Empty the app's pool, then let other clients take every slot.
    await store.pool.end();
    store = new PostgresStore(server.url, { poolSize: 2, connectionTimeoutMs: 2000 });
    app = await buildApp({ store });
    for (let i = 0; i < MAX_CONNECTIONS; i++) {
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      hogs.push(client);
    }

    const refused = await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json()).toMatchObject({ code: 'service_unavailable', status: 503 });
    expect(refused.body).not.toMatch(/too many clients|53300/);

    await Promise.all(hogs.splice(0).map((client) => client.end()));
    const served = await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
    expect(served.statusCode).toBe(200);
  });

  it('treats a session ended by an administrator (57P01) as unavailability', async () => {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      const sleeping = store.query('SELECT pg_sleep(60)');
      const outcome = sleeping.then(() => undefined, (error: unknown) => error);
      // Wait until the sleep runs, then end its session.
      let ended = false;
      for (let i = 0; i < 1500 && !ended; i++) {
        const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' AND state = 'active'");
        if (rows[0]) {
          await admin.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
          ended = true;
          continue;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(ended, 'the sleep was seen running and its session ended').toBe(true);
      const error = await outcome;
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(((error as Error).cause as { code?: string }).code).toBe('57P01');
    } finally {
      await admin.end();
    }
  });
});
