import type { Config } from '../config.js';
import type { LedgerWriter } from '../ledger/ledger-writer.js';
import { nodeLedger } from '../node-ledger.js';
import type { Store } from '../store/store.js';
import { withStore } from './with-store.js';

/**
 * Opens the store for one command (withStore) and builds the process's one
 * ledger on it (nodeLedger, as `serve` does, from the same settings): every
 * write of money the command makes goes through it, with the queue,
 * transaction budget and answers that `serve` gives HTTP writes.
 */
export function withLedger<T>(fn: (ledger: LedgerWriter, store: Store, config: Config) => Promise<T>): Promise<T> {
  return withStore((store, config) => fn(nodeLedger(store, config), store, config));
}
