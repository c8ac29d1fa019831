import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { loggerOptions } from './logger.js';
import { migrate, pendingMigrations } from './store/migrate.js';
import { openStore } from './store/open-store.js';
import type { Store } from './store/store.js';

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly url: string;
  /** Stops accepting, lets in-flight requests finish, closes the store. */
  close(): Promise<void>;
}

/**
 * Process work: open the store, make sure the schema is current, listen.
 * The embedded store is migrated automatically; PostgreSQL must be migrated
 * with `lending-api migrate`, so a deploy never changes a shared schema by surprise.
 */
export async function startServer(config: Config, store?: Store): Promise<RunningServer> {
  const openedStore =
    store ??
    (await openStore(config.store, { poolSize: config.databasePoolSize, lockWaitMs: config.pgliteLockTimeoutMs }));
  try {
    if (openedStore.kind === 'pglite') await migrate(openedStore);
    else {
      const pending = await pendingMigrations(openedStore);
      if (pending.length > 0) {
        throw new Error(
          `the database schema is behind (${pending.length} migration(s) pending: ${pending.map((m) => `${m.version}_${m.name}`).join(', ')}); run 'lending-api migrate' first`,
        );
      }
    }
    const app = await buildApp({
      store: openedStore,
      publicUrl: config.publicUrl,
      trustProxy: config.trustProxy,
      logger: loggerOptions(config.logLevel),
      authCache: { ttlMs: config.authCacheTtlMs },
    });
    const address = await app.listen({ port: config.port, host: config.host });
    let closing: Promise<void> | undefined;
    return {
      app,
      store: openedStore,
      url: address,
      close: () => {
        closing ??= (async () => {
          await app.close();
          await openedStore.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    if (!store) await openedStore.close();
    throw error;
  }
}

/** Closes the server on SIGTERM/SIGINT, then exits 0 (1 if closing failed). */
export function closeOnSignals(server: RunningServer, log: (message: string) => void): void {
  const shutdown = (signal: NodeJS.Signals) => {
    log(`${signal} received: finishing in-flight requests, then exiting`);
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`shutdown failed: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}
