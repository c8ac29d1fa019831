import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Store } from './store.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// Any constant works; it only has to be the same in every process.
const MIGRATION_LOCK_KEY = 4_815_162_342;
const UNDEFINED_TABLE = '42P01';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The versioned migrations shipped in `src/store/migrations/NNN_name.sql`, in order. */
export async function loadMigrations(): Promise<Migration[]> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file)).sort();
  return Promise.all(
    files.map(async (file) => ({
      version: Number(file.slice(0, 3)),
      name: file.slice(4, -4),
      sql: await readFile(MIGRATIONS_DIR + file, 'utf8'),
    })),
  );
}

/**
 * Brings the schema up to date. Each migration runs in its own transaction
 * with its version recorded; concurrent callers serialize on an advisory lock,
 * so several instances starting at once apply each migration exactly once.
 * Returns the versions applied by this call.
 */
export async function migrate(store: Store): Promise<Migration[]> {
  const migrations = await loadMigrations();
  const applied: Migration[] = [];
  for (const migration of migrations) {
    const ran = await store.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      await tx.query(
        `CREATE TABLE IF NOT EXISTS schema_migrations (
           version integer PRIMARY KEY,
           name text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const done = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [migration.version]);
      if (done.length > 0) return false;
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      return true;
    });
    if (ran) applied.push(migration);
  }
  return applied;
}

/** The migrations not yet applied (all of them on an empty database). */
export async function pendingMigrations(store: Store): Promise<Migration[]> {
  const migrations = await loadMigrations();
  const rows = await store.query<{ version: number }>('SELECT version FROM schema_migrations').catch((error: unknown) => {
    // No table yet is an empty database; anything else (the database away) is not "every migration pending".
    if ((error as { code?: unknown }).code === UNDEFINED_TABLE) return [];
    throw error;
  });
  const done = new Set(rows.map((row) => row.version));
  return migrations.filter((migration) => !done.has(migration.version));
}
