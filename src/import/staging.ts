import type { ImportRecord } from './import-record.js';

/**
 * The session-private staging table each batch of valid lines is COPYed into
 * before its set-based merge; emptied after every batch. ON COMMIT DROP: it
 * disappears with the transaction, committed or not. For ledger lines, uid
 * holds the entry's id.
 */
export const STAGING_TABLE = 'import_stage';

/** Ledger lines of every batch, kept until the records are all merged. */
export const LEDGER_LINES_TABLE = 'import_ledger_lines';

export const CREATE_STAGING_TABLE = `CREATE TEMP TABLE ${STAGING_TABLE} (
  line bigint NOT NULL,
  object text NOT NULL,
  uid text COLLATE "C" NOT NULL,
  entity text COLLATE "C",
  type text COLLATE "C",
  currency text COLLATE "C",
  last_2 text COLLATE "C",
  capacity numeric(15, 2),
  rate numeric(10, 8),
  limit_uid text COLLATE "C",
  amount numeric(15, 2),
  created_at timestamptz,
  updated_at timestamptz,
  at timestamptz
) ON COMMIT DROP`;

export const CREATE_LEDGER_LINES_TABLE = `CREATE TEMP TABLE ${LEDGER_LINES_TABLE} ON COMMIT DROP AS
  SELECT line, object, uid, limit_uid, amount, at FROM ${STAGING_TABLE} WITH NO DATA`;

/** Moves a batch's ledger lines aside; records are merged straight from the batch. */
export const KEEP_LEDGER_LINES = `INSERT INTO ${LEDGER_LINES_TABLE}
  SELECT line, object, uid, limit_uid, amount, at FROM ${STAGING_TABLE} WHERE object IN ('drawdown', 'repayment')`;

export const EMPTY_STAGING_TABLE = `TRUNCATE ${STAGING_TABLE}`;

export const STAGING_COPY_TARGET = `${STAGING_TABLE} (line, object, uid, entity, type, currency, last_2, capacity, rate, limit_uid, amount, created_at, updated_at, at)`;

const NULL = '\\N';

/**
 * One row of COPY text format. Identifiers were checked to hold no control
 * characters, so a backslash is the only character that needs escaping.
 */
export function toCopyRow(line: number, record: ImportRecord): string {
  switch (record.object) {
    case 'payment_method':
      return `${line}\tpayment_method\t${escape(record.uid)}\t${escape(record.entity)}\t${record.type}\t${record.currency}\t${record.last_2}\t${NULL}\t${NULL}\t${NULL}\t${NULL}\t${record.created_at ?? NULL}\t${record.updated_at ?? NULL}\t${NULL}\n`;
    case 'credit_limit':
      return `${line}\tcredit_limit\t${escape(record.uid)}\t${escape(record.entity)}\t${NULL}\t${record.currency}\t${NULL}\t${record.capacity}\t${record.rate}\t${NULL}\t${NULL}\t${record.created_at ?? NULL}\t${record.updated_at ?? NULL}\t${NULL}\n`;
    default:
      return `${line}\t${record.object}\t${escape(record.id)}\t${NULL}\t${NULL}\t${NULL}\t${NULL}\t${NULL}\t${NULL}\t${escape(record.limit)}\t${record.amount}\t${NULL}\t${NULL}\t${record.at ?? NULL}\n`;
  }
}

function escape(value: string): string {
  return value.includes('\\') ? value.replaceAll('\\', '\\\\') : value;
}
