import type { Config } from './config.js';
import { LedgerWriter } from './ledger/ledger-writer.js';
import type { FairShare } from './store/fair-share.js';
import type { Store } from './store/store.js';

/** What a process's ledger is built from: the Config's settings (a test gives its own). */
export type LedgerSettings = Pick<Config, 'idempotencyKeyTtlHours' | 'databaseRequestBudgetMs' | 'writeQueueWaitMs' | 'writeConcurrency' | 'databasePoolSize'>;

/** What the ledger is connected to in a serving node. */
export interface LedgerWiring {
  /** The node's FairShare, which its reads use too: told when the database answered. */
  readonly share?: FairShare | undefined;
  /** Told when a write of an organization was recorded: the node's event publisher. */
  readonly recorded?: ((orgId: string) => void) | undefined;
}

/**
 * The process's one ledger, and the one place a LedgerWriter is built: `serve`
 * builds it once (server.ts) and hands it to the app, a command builds it
 * once (cli/with-ledger.ts), and the tests build the app's through it
 * (test/helpers/app.ts). Every money movement of the process, and every event
 * it records, goes through the ledger built here.
 */
export function nodeLedger(store: Store, settings: LedgerSettings, wiring: LedgerWiring = {}): LedgerWriter {
  return new LedgerWriter(store, {
    idempotencyTtlHours: settings.idempotencyKeyTtlHours,
    transactionBudgetMs: settings.databaseRequestBudgetMs,
    // Two connections of the pool stay free for reads.
    queue: { maxWaitMs: settings.writeQueueWaitMs, concurrency: settings.writeConcurrency || Math.max(1, settings.databasePoolSize - 2) },
    share: wiring.share,
    recorded: wiring.recorded,
  });
}
