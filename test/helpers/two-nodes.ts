import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { spawnServer, type SpawnedServer } from './spawn-server.js';
import { createTempPostgres } from './temp-postgres.js';
import { createTenant, type Tenant } from './tenants.js';

/** Two real `serve` processes with their default settings (rate limits off) on a PostgreSQL of the test's own. */
export interface TwoNodes {
  /** The test's own connection, for seeding and checking. */
  readonly store: PostgresStore;
  /** A write-scoped tenant the seed gave records to. */
  readonly tenant: Tenant;
  readonly servers: readonly SpawnedServer[];
  stop(): Promise<void>;
}

/**
 * Starts the PostgreSQL (its pg_stat_database counts only this test's deadlocks), migrates it, creates the
 * tenant, lets `seed` give it records, then starts both processes.
 */
/**
 * No database budget and no queue wait a write could outlast: for tests that model what writes do to the money,
 * where a slow machine answering 503 overloaded or 504 outcome_unknown would be a failure of the machine, not the model.
 */
export const UNBOUNDED_WAITS: Readonly<Record<string, string>> = { DATABASE_REQUEST_BUDGET_MS: '0', WRITE_QUEUE_WAIT_MS: '600000' };

export async function startTwoNodes(
  binDir: string,
  tenantName: string,
  seed: (store: PostgresStore, tenant: Tenant) => Promise<void>,
  extraEnv: Record<string, string> = {},
): Promise<TwoNodes> {
  const pg = await createTempPostgres(binDir);
  const store = new PostgresStore(pg.url, { poolSize: 2 });
  await migrate(store);
  const tenant = await createTenant(store, tenantName, 'write');
  await seed(store, tenant);
  const env = { DATABASE_URL: pg.url, RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0', ...extraEnv };
  // Both at once: on a busy machine one after the other took twice as long. One that does not start ends the other.
  const started = await Promise.allSettled([spawnServer([], env), spawnServer([], env)]);
  const servers = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  const refused = started.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (refused) {
    for (const server of servers) server.child.kill('SIGKILL');
    await Promise.all(servers.map((server) => server.exited));
    await store.close();
    await pg.destroy();
    throw refused.reason;
  }
  return {
    store,
    tenant,
    servers,
    stop: async () => {
      for (const server of servers) server.child.kill('SIGTERM');
      await Promise.all(servers.map((server) => server.exited));
      await store.close();
      await pg.destroy();
    },
  };
}
