import { entryOperation, LIMIT_BALANCE_VIEW, type LedgerResult } from './entry-operation.js';
import type { LedgerEntryInput } from './ledger-entry.js';
import type { LedgerWriter } from './ledger-writer.js';

/**
 * Records a drawdown or repayment given without an Idempotency-Key (the CLI,
 * tests, scripts) through the process's ledger. Idempotent by the entry's
 * id: one already recorded with the same content is a no-op that reports the
 * limit as it is now (`applied: false`); with other content it is an
 * `id_conflict`. A refusal throws a LedgerError having changed nothing.
 */
export async function applyLedgerEntry(ledger: LedgerWriter, orgId: string, entry: LedgerEntryInput): Promise<LedgerResult> {
  const answer = await ledger.write({ operation: entryOperation(LIMIT_BALANCE_VIEW, { ...entry, orgId, idGivenByCaller: true }) });
  if (!answer.value) throw new Error(`ledger entry ${entry.id}: the ledger answered ${answer.status} without a result`);
  return answer.value;
}
