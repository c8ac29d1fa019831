import { LedgerWriter } from '../../src/ledger/ledger-writer.js';
import type { Store } from '../../src/store/store.js';

const ledgers = new WeakMap<Store, LedgerWriter>();

/** The ledger of a test's store: one per store, as a process builds one on the store it opens. */
export function ledgerOf(store: Store): LedgerWriter {
  let ledger = ledgers.get(store);
  if (!ledger) ledgers.set(store, (ledger = anotherProcessLedger(store)));
  return ledger;
}

/** A ledger of its own, as another process would build: its writes meet the others' in the database only, not in one queue. */
export function anotherProcessLedger(store: Store): LedgerWriter {
  return new LedgerWriter(store, { idempotencyTtlHours: 24 });
}
