import type { ImportRecord } from './import-record.js';

/**
 * The session-private staging table every valid line is COPYed into before
 * one set-based merge. ON COMMIT DROP: it disappears with the transaction,
 * committed or not. For ledger lines, uid holds the entry's id.
 */
export const STAGING_TABLE = 'import_stage';

export const CREATE_STAGING_TABLE = `CREATE TEMP TABLE ${STAGING_TABLE} (
  line bigint NOT NULL,
  object text NOT NULL,
  uid text NOT NULL,
  entity text,
  type text,
  currency text,
  last_2 text,
  capacity numeric(15, 2),
  rate numeric(10, 8),
  limit_uid text,
  amount numeric(15, 2),
  created_at timestamptz,
  updated_at timestamptz,
  at timestamptz
) ON COMMIT DROP`;

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
