import { DomainError } from '../domain/domain-error.js';

export type LedgerErrorCode = 'limit_not_found' | 'insufficient_balance' | 'repayment_exceeds_outstanding' | 'id_conflict' | 'invalid_entry';

/** A drawdown or repayment that was refused; nothing was changed. */
export class LedgerError extends DomainError {
  readonly code: LedgerErrorCode;

  constructor(code: LedgerErrorCode, message: string) {
    super(message);
    this.name = 'LedgerError';
    this.code = code;
  }
}
