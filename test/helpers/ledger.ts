import { DEFAULT_IDEMPOTENCY_KEY_TTL_HOURS } from '../../src/config.js';
import { DEFAULT_WRITE_QUEUE_WAIT_MS, type LedgerWriter } from '../../src/ledger/ledger-writer.js';
import { nodeLedger, type LedgerSettings } from '../../src/node-ledger.js';
import { DEFAULT_DATABASE_SHARE } from '../../src/store/fair-share.js';
import type { Store } from '../../src/store/store.js';

/**
 * A test's ledger settings: the defaults of the config, except no transaction budget (a test
 * that wants one gives it), so a busy machine does not turn a test's write into a 503.
 */
export const TEST_LEDGER_SETTINGS: LedgerSettings = {
  idempotencyKeyTtlHours: DEFAULT_IDEMPOTENCY_KEY_TTL_HOURS,
  databaseRequestBudgetMs: 0,
  writeQueueWaitMs: DEFAULT_WRITE_QUEUE_WAIT_MS,
  writeConcurrency: 0,
  databasePoolSize: DEFAULT_DATABASE_SHARE.slots,
};

const ledgers = new WeakMap<Store, LedgerWriter>();

/** The ledger of a test's store: one per store, as a process builds one on the store it opens. */
export function ledgerOf(store: Store): LedgerWriter {
  let ledger = ledgers.get(store);
  if (!ledger) ledgers.set(store, (ledger = anotherProcessLedger(store)));
  return ledger;
}

/** A ledger of its own, as another process would build (nodeLedger): its writes meet the others' in the database only, not in one queue. */
export function anotherProcessLedger(store: Store): LedgerWriter {
  return nodeLedger(store, TEST_LEDGER_SETTINGS);
}
