export { applyLedgerEntry } from './apply-ledger-entry.js';
export { entryOperation, limitViewOf, type EntryWrite, type LedgerResult, type LimitView } from './entry-operation.js';
export { LedgerWriter, DEFAULT_WRITE_QUEUE_WAIT_MS, MAX_WRITES_PER_TRANSACTION, type LedgerWriteRequest, type LedgerWriterOptions, type WriteAnswer } from './ledger-writer.js';
export type { Applied, LedgerOperation, StoredRefusal, StoredRefusalCode } from './ledger-operation.js';
export { LEDGER_KINDS, newLedgerId, type LedgerEntryInput, type LedgerKind } from './ledger-entry.js';
export { LedgerError, type LedgerErrorCode } from './ledger-error.js';
export { parseAmount } from '../domain/amount.js';

/** Set with a transaction's BEGIN: its commit returns once the synchronous standby (if any) applied it (docs/scaling.md). */
export const WAIT_FOR_SYNCHRONOUS_STANDBY = 'SET LOCAL synchronous_commit = remote_apply';
