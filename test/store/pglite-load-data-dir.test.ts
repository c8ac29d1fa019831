import { expect, it } from 'vitest';
import { loadMigrations } from '../../src/store/migrate.js';
import { PgliteStore } from '../../src/store/pglite-store.js';
import { pgliteTemplate } from '../helpers/pglite-template.js';

// Every PGlite test store starts from the migrated template: a store opened
// from a dump must hold what was dumped, not a fresh cluster (regression: the
// dump was silently ignored, so each store ran initdb and every migration).
it('opens an in-memory PGlite from a dump with the dumped schema and rows', async () => {
  const store = await PgliteStore.open(undefined, undefined, await pgliteTemplate());
  try {
    const applied = await store.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    expect(applied.map((row) => row.version)).toEqual((await loadMigrations()).map((migration) => migration.version));
  } finally {
    await store.close();
  }
});
