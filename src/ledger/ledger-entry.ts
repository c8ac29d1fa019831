import { randomUUID } from 'node:crypto';

export const LEDGER_KINDS = ['drawdown', 'repayment'] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];

/** A validated drawdown or repayment, as a command or an import line gives it. */
export interface LedgerEntryInput {
  readonly kind: LedgerKind;
  /** Idempotency key, unique within the organization. */
  readonly id: string;
  /** uid of the credit limit. */
  readonly limit: string;
  /** Canonical positive decimal, at most two decimal places. */
  readonly amount: string;
  /** RFC 3339 time of the entry; absent means now. */
  readonly at?: string | undefined;
  /** The API key that wrote it (HTTP writes); absent for the CLI and the import, which hold no key. */
  readonly keyId?: string | undefined;
  /** The caller's own reference (1–255 characters), if any. */
  readonly reference?: string | undefined;
}

export function newLedgerId(kind: LedgerKind): string {
  return `${kind === 'drawdown' ? 'dd' : 'rp'}_${randomUUID().replaceAll('-', '')}`;
}
