import { loadConfig } from '../../config.js';
import { assertSchemaMatches } from '../../listing/schema-check.js';
import { RESOURCES } from '../../resources/index.js';
import { migrate } from '../../store/migrate.js';
import { openStore } from '../../store/open-store.js';
import { print, type OutputOptions } from '../output.js';
import { compileForQuickStart } from '../quick-start.js';

/** `migrate`: brings the schema up to date, then checks it against the resource definitions. */
export async function runMigrate(options: OutputOptions): Promise<void> {
  const config = loadConfig();
  compileForQuickStart();
  const store = await openStore(config.store, { poolSize: 1, lockWaitMs: config.pgliteLockTimeoutMs, pgliteSharedBuffers: config.pgliteSharedBuffers });
  try {
    const applied = await migrate(store);
    await assertSchemaMatches(store, RESOURCES);
    const names = applied.map((m) => `${String(m.version).padStart(3, '0')}_${m.name}`);
    print(
      options,
      { database: store.description, applied: names },
      names.length > 0 ? `applied ${names.join(', ')} to ${store.description}` : `${store.description} is up to date`,
    );
  } finally {
    await store.close();
  }
}
