import type { ImportRecord } from './import-record.js';
import { RECORD_KINDS } from './record-kinds.js';

/**
 * The session-private staging table each batch of valid lines is COPYed into
 * before its set-based merge; emptied after every batch. ON COMMIT DROP: it
 * disappears with the transaction, committed or not. Its record columns are
 * the union of every importable collection's (a line leaves the others
 * NULL). For ledger lines, uid holds the entry's id.
 */
export const STAGING_TABLE = 'import_stage';

/**
 * The ledger lines whose credit limit was not found when their batch was
 * staged (the file may define it further on): looked up once more at the
 * end, and each line still without one is reported.
 */
export const LEDGER_UNRESOLVED_TABLE = 'import_ledger_unresolved';

const RECORD_COLUMNS = RECORD_KINDS.stagingColumns;

export const CREATE_STAGING_TABLE = `CREATE TEMP TABLE ${STAGING_TABLE} (
  line bigint NOT NULL,
  object text NOT NULL,
  uid text COLLATE "C" NOT NULL,
${RECORD_COLUMNS.map((column) => `  ${column.name} ${column.sqlType},\n`).join('')}  limit_uid text COLLATE "C",
  amount numeric(15, 2),
  created_at timestamptz,
  updated_at timestamptz,
  at timestamptz
) ON COMMIT DROP`;

export const CREATE_LEDGER_UNRESOLVED_TABLE = `CREATE TEMP TABLE ${LEDGER_UNRESOLVED_TABLE} (
  line bigint NOT NULL,
  limit_uid text COLLATE "C" NOT NULL
) ON COMMIT DROP`;

/**
 * The first line of each ledger id in the file, with its limit's id: kept
 * batch by batch (batches come in file order, so the first batch to hold an
 * id holds its first line).
 */
export const LEDGER_FIRST_TABLE = 'import_ledger_first';

export const CREATE_LEDGER_FIRST_TABLE = `CREATE TEMP TABLE ${LEDGER_FIRST_TABLE} (
  line bigint NOT NULL,
  id text COLLATE "C" PRIMARY KEY,
  kind text NOT NULL,
  amount numeric(15, 2),
  at timestamptz,
  limit_uid text COLLATE "C" NOT NULL,
  limit_id bigint
) ON COMMIT DROP`;

export const EMPTY_STAGING_TABLE = `TRUNCATE ${STAGING_TABLE}`;

export const STAGING_COPY_TARGET = `${STAGING_TABLE} (line, object, uid, ${RECORD_COLUMNS.map((column) => `${column.name}, `).join('')}limit_uid, amount, created_at, updated_at, at)`;

const NULL = '\\N';
const NO_RECORD_COLUMNS = `\t${NULL}`.repeat(RECORD_COLUMNS.length);

/**
 * One row of COPY text format. Identifiers and texts were checked to hold
 * no control characters, so a backslash is the only character that needs
 * escaping.
 */
export function toCopyRow(line: number, record: ImportRecord): string {
  if (record.line === 'ledger') {
    return `${line}\t${record.object}\t${escape(record.id)}${NO_RECORD_COLUMNS}\t${escape(record.limit)}\t${record.amount}\t${NULL}\t${NULL}\t${record.at ?? NULL}\n`;
  }
  let row = `${line}\t${record.kind.object}\t${escape(record.uid)}`;
  for (const slot of record.kind.stagingSlots) row += slot < 0 ? `\t${NULL}` : `\t${escape(record.values[slot] ?? '')}`;
  return `${row}\t${NULL}\t${NULL}\t${record.created_at ?? NULL}\t${record.updated_at ?? NULL}\t${NULL}\n`;
}

function escape(value: string): string {
  return value.includes('\\') ? value.replaceAll('\\', '\\\\') : value;
}
