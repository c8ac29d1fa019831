import type { ImportRecord } from './import-record.js';
import { RECORD_KINDS, type RecordKinds } from './record-kinds.js';

/**
 * The session-private staging table each batch of valid lines is COPYed into
 * before its set-based merge; emptied after every batch. ON COMMIT DROP: it
 * disappears with the transaction, committed or not. Its record columns are
 * the union of every importable collection's (a line leaves the others
 * NULL). For ledger lines, uid holds the entry's id. The engine's own
 * columns are namespaced (ledger_…, and merge_… in merge-records.ts) so no
 * collection's field collides with them; record-kinds.ts refuses a field
 * that would (isEngineColumn).
 */
export const STAGING_TABLE = 'import_stage';

/**
 * The ledger lines whose credit limit was not found when their batch was
 * staged (the file may define it further on): looked up once more at the
 * end, and each line still without one is reported.
 */
export const LEDGER_UNRESOLVED_TABLE = 'import_ledger_unresolved';

/** The staging table for these collections' lines (and the ledger's). */
export function createStagingTableSql(kinds: RecordKinds): string {
  return `CREATE TEMP TABLE ${STAGING_TABLE} (
  line bigint NOT NULL,
  object text NOT NULL,
  uid text COLLATE "C" NOT NULL,
${kinds.stagingColumns.map((column) => `  ${column.name} ${column.sqlType},\n`).join('')}  ledger_limit_uid text COLLATE "C",
  ledger_amount numeric(15, 2),
  created_at timestamptz,
  updated_at timestamptz,
  ledger_at timestamptz
) ON COMMIT DROP`;
}

/** The COPY target list of createStagingTableSql's table, in toCopyRow's order. */
export function stagingCopyTarget(kinds: RecordKinds): string {
  return `${STAGING_TABLE} (line, object, uid, ${kinds.stagingColumns.map((column) => `${column.name}, `).join('')}ledger_limit_uid, ledger_amount, created_at, updated_at, ledger_at)`;
}

const RECORD_COLUMNS = RECORD_KINDS.stagingColumns;

export const CREATE_STAGING_TABLE = createStagingTableSql(RECORD_KINDS);

export const CREATE_LEDGER_UNRESOLVED_TABLE = `CREATE TEMP TABLE ${LEDGER_UNRESOLVED_TABLE} (
  line bigint NOT NULL,
  limit_uid text COLLATE "C" NOT NULL
) ON COMMIT DROP`;

/**
 * The first line of each ledger id in the file, with its limit's id: kept
 * batch by batch (batches come in file order, so the first batch to hold an
 * id holds its first line). A loan line's drawdown comes here too, with the
 * loan's uid (merge-loans.ts).
 */
export const LEDGER_FIRST_TABLE = 'import_ledger_first';

export const CREATE_LEDGER_FIRST_TABLE = `CREATE TEMP TABLE ${LEDGER_FIRST_TABLE} (
  line bigint NOT NULL,
  id text COLLATE "C" PRIMARY KEY,
  kind text NOT NULL,
  amount numeric(15, 2),
  at timestamptz,
  limit_uid text COLLATE "C" NOT NULL,
  limit_id bigint,
  loan text COLLATE "C"
) ON COMMIT DROP`;

export const EMPTY_STAGING_TABLE = `TRUNCATE ${STAGING_TABLE}`;

export const STAGING_COPY_TARGET = stagingCopyTarget(RECORD_KINDS);

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
  for (const slot of record.kind.stagingSlots) row += slot < 0 ? `\t${NULL}` : `\t${nullable(record.values[slot])}`;
  return `${row}\t${NULL}\t${NULL}\t${record.created_at ?? NULL}\t${record.updated_at ?? NULL}\t${NULL}\n`;
}

function nullable(value: string | null | undefined): string {
  return value === null || value === undefined ? NULL : escape(value);
}

function escape(value: string): string {
  return value.includes('\\') ? value.replaceAll('\\', '\\\\') : value;
}
