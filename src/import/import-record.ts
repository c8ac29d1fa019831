import { LEDGER_KINDS, type LedgerKind } from '../ledger/ledger-entry.js';
import { RECORD_KINDS, type RecordKind } from './record-kinds.js';

/** A validated import line, with canonical values ready for staging. */
export type ImportRecord =
  | {
      readonly line: 'record';
      readonly kind: RecordKind;
      readonly uid: string;
      /** Canonical values of `kind.columns`, in that order; null for an optional field not given. */
      readonly values: readonly (string | null)[];
      readonly created_at: string | undefined;
      readonly updated_at: string | undefined;
    }
  | {
      readonly line: 'ledger';
      readonly object: LedgerKind;
      readonly id: string;
      readonly limit: string;
      readonly amount: string;
      readonly at: string | undefined;
    };

/** Every `object` an import line may name: the importable collections' and the ledger's. */
export const IMPORT_OBJECTS: readonly string[] = [...RECORD_KINDS.kinds.map((kind) => kind.object), ...LEDGER_KINDS];
