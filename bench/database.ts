import pg from 'pg';
import type { Queryable } from '../src/store/store.js';

/** DATABASE_URL when it names PostgreSQL, else `lending_bench` on the local server (created if missing). */
export async function benchDatabaseUrl(): Promise<string> {
  const given = process.env.DATABASE_URL;
  if (given && /^postgres(ql)?:/.test(given)) return given;
  const server = process.env.BENCH_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', ['lending_bench']);
    if (exists.rowCount === 0) await admin.query('CREATE DATABASE lending_bench');
  } finally {
    await admin.end();
  }
  const url = new URL(server);
  url.pathname = '/lending_bench';
  return url.toString();
}

/** What the writes grow: the limits, keys and ledger, and the events, their outbox and deliveries. */
const WRITTEN_TABLES = 'credit_limits, idempotency_keys, ledger_entries, loans, row_counts, event_outbox, event_streams, events, webhook_deliveries, webhook_attempts, webhook_endpoints';

/**
 * Each write measurement starts from tables without the dead rows of the
 * runs before it: every drawdown leaves a dead version of its limit's row
 * (and of its key's), an outbox row published and deleted, and two dead
 * versions of each delivery, which only VACUUM clears. Where autovacuum is
 * off (as on the project's own machine) or behind, they pile up from run to
 * run and each run would measure a slower database than the one before.
 */
export async function vacuumWrittenTables(db: Queryable): Promise<void> {
  await db.exec(`VACUUM (ANALYZE) ${WRITTEN_TABLES}`);
}
