import { loadConfig, type Config } from '../config.js';
import { migrate } from '../store/migrate.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { compileForBulk, compileForQuickStart } from './quick-start.js';

/**
 * Opens the store named by DATABASE_URL for one command and closes it after.
 * The embedded store is migrated on open, like `serve` does; PostgreSQL is
 * migrated only by `lending-api migrate`. A `bulk` command (an import of any
 * size) keeps V8's optimizing compiler for the embedded store, started later;
 * the others start quicker without it.
 */
export async function withStore<T>(fn: (store: Store, config: Config) => Promise<T>, options: { bulk?: boolean } = {}): Promise<T> {
  const config = loadConfig();
  if (options.bulk) compileForBulk();
  else compileForQuickStart();
  const store = await openStore(config.store, { poolSize: 2, lockWaitMs: config.pgliteLockTimeoutMs, pgliteSharedBuffers: config.pgliteSharedBuffers });
  try {
    if (store.kind === 'pglite') await migrate(store);
    return await fn(store, config);
  } finally {
    await store.close();
  }
}
