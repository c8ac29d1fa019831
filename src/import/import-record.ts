import type { LedgerKind } from '../ledger/ledger-entry.js';

/** A validated import line, with canonical values ready for staging. */
export type ImportRecord =
  | {
      readonly object: 'payment_method';
      readonly uid: string;
      readonly entity: string;
      readonly type: string;
      readonly currency: string;
      readonly last_2: string;
      readonly created_at: string | undefined;
      readonly updated_at: string | undefined;
    }
  | {
      readonly object: 'credit_limit';
      readonly uid: string;
      readonly entity: string;
      readonly currency: string;
      readonly capacity: string;
      readonly rate: string;
      readonly created_at: string | undefined;
      readonly updated_at: string | undefined;
    }
  | {
      readonly object: LedgerKind;
      readonly id: string;
      readonly limit: string;
      readonly amount: string;
      readonly at: string | undefined;
    };

export const IMPORT_OBJECTS = ['payment_method', 'credit_limit', 'drawdown', 'repayment'] as const;
export type ImportObject = (typeof IMPORT_OBJECTS)[number];
