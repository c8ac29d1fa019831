import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const binDir = postgresBinDir();

describe.runIf(binDir)('lending-api serve --workers 2', () => {
  let postgres: TempPostgres;
  let tenant: Tenant;
  let server: SpawnedServer | undefined;

  beforeAll(async () => {
    postgres = await createTempPostgres(binDir ?? '');
    const store = new PostgresStore(postgres.url, { poolSize: 1 });
    await migrate(store);
    tenant = await createTenant(store);
    await store.close();
  });
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    await postgres?.destroy();
  });

  it('serves from two worker processes on one port, sums their metrics, and exits 0 on SIGTERM', async () => {
    server = await spawnServer(['--workers', '2'], { DATABASE_URL: postgres.url, METRICS_PORT: '0', RATE_LIMIT_PER_MINUTE: '0' }, 90_000);
    const running = server;
    const requests = 12;
    for (let i = 0; i < requests; i += 1) {
      // A new connection each time, so the primary spreads them over the workers.
      const response = await fetch(`${running.url}/api/methods/`, { headers: { authorization: tenant.authorization, connection: 'close' } });
      expect(response.status).toBe(200);
    }
    expect(running.metricsUrl).toBeDefined();
    const metrics = await (await fetch(running.metricsUrl ?? '')).text();
    expect(metrics).toContain(`lending_api_http_requests_total{method="GET",route="/api/methods/",status="200"} ${requests}`);
    // Pool gauges of both workers are summed: each worker opened at least one connection.
    expect(metrics).toMatch(/lending_api_db_pool_connections\{state="total"\} [2-9]/);

    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
  });

  it('refuses several workers on the embedded store, naming WORKERS', async () => {
    const failure = await spawnServer(['--workers', '2'], { DATABASE_URL: 'pglite://memory' }).then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(failure).toContain('WORKERS above 1 needs PostgreSQL');
  });
});
