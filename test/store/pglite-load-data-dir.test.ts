import { expect, it } from 'vitest';
import { loadMigrations } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open-store.js';
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

// PGLITE_SHARED_BUFFERS reaches the embedded server (the test suite's CLI processes start faster with 16MB).
it('starts the embedded store with the configured shared_buffers', async () => {
  const store = await openStore({ kind: 'pglite', dataDir: undefined }, { pgliteSharedBuffers: '24MB' });
  try {
    const [row] = await store.query<{ shared_buffers: string }>('SHOW shared_buffers');
    expect(row?.shared_buffers).toBe('24MB');
  } finally {
    await store.close();
  }
});
