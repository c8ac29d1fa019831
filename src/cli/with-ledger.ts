import type { Config } from '../config.js';
import { LedgerWriter } from '../ledger/ledger-writer.js';
import type { Store } from '../store/store.js';
import { withStore } from './with-store.js';

/**
 * Opens the store for one command (withStore) and builds the process's one
 * ledger on it: every write of money the command makes goes through it,
 * with the queue, transactions and answers that `serve` gives HTTP writes.
 */
export function withLedger<T>(fn: (ledger: LedgerWriter, store: Store, config: Config) => Promise<T>): Promise<T> {
  return withStore((store, config) => fn(new LedgerWriter(store, { idempotencyTtlHours: config.idempotencyKeyTtlHours }), store, config));
}
