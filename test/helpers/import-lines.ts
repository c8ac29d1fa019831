import { Readable } from 'node:stream';
import { importJsonl, type ImportOptions, type ImportSummary } from '../../src/import/index.js';
import type { Store } from '../../src/store/store.js';

/** Runs an import of these lines (objects are JSON-encoded, strings taken as they are). */
export function importLines(
  store: Store,
  orgUid: string,
  lines: readonly (string | object)[],
  options?: ImportOptions,
): Promise<ImportSummary> {
  const text = lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n');
  return importJsonl(store, orgUid, Readable.from([Buffer.from(text)]), options);
}

/** The database's clock as the API writes timestamps: a time before whatever the next call changes. */
export async function databaseNow(store: Store): Promise<string> {
  const [row] = await store.query<{ now: string }>(`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS now`);
  return row?.now ?? '';
}

/** Every row of every table in the current schema, as text: what "the database" holds. */
export async function dumpAllTables(store: Store): Promise<string> {
  const tables = await store.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  const parts: string[] = [];
  for (const { table_name } of tables) {
    const rows = await store.query<{ row: string }>(`SELECT t::text AS row FROM "${table_name}" t ORDER BY 1`);
    parts.push(`${table_name}:\n${rows.map((r) => r.row).join('\n')}`);
  }
  return parts.join('\n');
}

export const SAMPLE_LINES = [
  {
    object: 'payment_method',
    uid: 'pm_1',
    entity: 'ent_1',
    type: 'ACH',
    currency: 'USD',
    account_number: '000123456789',
    created_at: '2024-05-01T10:00:00.123456Z',
    updated_at: '2024-05-02T08:00:00Z',
  },
  {
    object: 'credit_limit',
    uid: 'cl_1',
    entity: 'ent_1',
    currency: 'USD',
    capacity: '50000.00',
    rate: '0.0005',
    created_at: '2024-05-01T10:00:00Z',
  },
  { object: 'drawdown', id: 'dd_1', limit: 'cl_1', amount: '1200.00' },
  { object: 'repayment', id: 'rp_1', limit: 'cl_1', amount: '200.00' },
] as const;
