import type { Command } from 'commander';
import { loadConfig } from '../../config.js';
import { migrate } from '../../store/migrate.js';
import { openStore } from '../../store/open-store.js';
import { print, type OutputOptions } from '../output.js';
import { compileForQuickStart } from '../quick-start.js';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('bring the database schema up to date')
    .option('--json', 'machine-readable output')
    .action(async (options: OutputOptions) => {
      const config = loadConfig();
      compileForQuickStart();
      // Loaded here, not at the top: the definitions pull in TypeBox, which `--help` need not load.
      const [{ assertSchemaMatches }, { RESOURCES }] = await Promise.all([import('../../listing/schema-check.js'), import('../../resources/index.js')]);
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
    });
}
