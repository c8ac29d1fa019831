export { applyLedgerEntry, WAIT_FOR_SYNCHRONOUS_STANDBY, type LedgerResult } from './apply-ledger-entry.js';
export { LEDGER_KINDS, newLedgerId, type LedgerEntryInput, type LedgerKind } from './ledger-entry.js';
export { LedgerError, type LedgerErrorCode } from './ledger-error.js';
export { parseAmount } from './amount.js';
