// The floor under an import's rate on this machine: the CPU its PostgreSQL
// backend spends on the writes no import of that file can avoid — inserting
// every record into its table (with the table's indexes and triggers), every
// ledger entry into ledger_entries, and one UPDATE of each credit limit the
// entries move — with nothing else: no parsing, no staging, no lookups, no
// checks. The rows come from the schema the import just filled, copied into
// plain tables before the clock starts. An import of the file can go no
// faster than `lines / floor CPU seconds`, since one backend does all of it.
import { randomBytes } from 'node:crypto';
import { createOrganization } from '../src/organizations/organizations.js';
import { RECORD_KINDS } from '../src/import/record-kinds.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import type { Queryable } from '../src/store/store.js';

export interface FloorPhase {
  readonly label: string;
  readonly rows: number;
  readonly cpuSeconds: number;
}

export interface ImportFloor {
  readonly phases: readonly FloorPhase[];
  readonly cpuSeconds: number;
}

/** Reads the CPU seconds of the backends whose application_name is given. */
export type BackendCpu = (applicationName: string) => Promise<number>;

const LIMITS_TABLE = 'credit_limits';

/**
 * Measures the floor of an import that left its rows in `source` (schema)
 * for organization `sourceOrgId`. `prefilledTables` are loaded before the
 * clock starts (the `ledger` shape's credit limits, imported beforehand).
 */
export async function measureImportFloor(
  url: string,
  backendCpu: BackendCpu,
  source: { schema: string; orgId: string },
  prefilledTables: readonly string[] = [],
): Promise<ImportFloor> {
  const schema = `floor_${randomBytes(4).toString('hex')}`;
  const admin = new PostgresStore(url, { poolSize: 1 });
  await admin.query(`CREATE SCHEMA ${schema}`);
  const floorUrl = new URL(url);
  floorUrl.searchParams.set('application_name', schema);
  const store = new PostgresStore(floorUrl.toString(), { poolSize: 1, searchPath: schema });
  try {
    await migrate(store);
    const orgId = await organizationId(store, (await createOrganization(store, 'Floor', 'org_floor')).uid);
    const phases: FloorPhase[] = [];
    await store.transaction(async (tx) => {
      await tx.exec(`SET LOCAL work_mem = '64MB'; SET LOCAL jit = off`);
      const timed = async (label: string, rowsFrom: string, sql: string, params: unknown[]): Promise<void> => {
        const [count] = await tx.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${rowsFrom}`);
        const before = await backendCpu(schema);
        await tx.query(sql, params);
        phases.push({ label, rows: Number(count?.n ?? 0), cpuSeconds: (await backendCpu(schema)) - before });
      };
      // Loans (merge-loans.ts) are not upserted by uid: their columns are not the import line's.
      for (const kind of RECORD_KINDS.kinds.filter((candidate) => candidate.ledger === undefined)) {
        const columns = ['uid', ...kind.columns, 'created_at', 'updated_at'].join(', ');
        const insert = `INSERT INTO ${kind.table} (org_id, ${columns}) SELECT $1, ${columns} FROM ${source.schema}.${kind.table} WHERE org_id = $2 ORDER BY id`;
        const params = [orgId, source.orgId];
        if (prefilledTables.includes(kind.table)) {
          await tx.query(insert, params);
          continue;
        }
        const copy = `floor_${kind.table}`;
        await tx.query(`CREATE TEMP TABLE ${copy} ON COMMIT DROP AS SELECT ${columns} FROM ${source.schema}.${kind.table} WHERE org_id = $1 ORDER BY id`, [source.orgId]);
        await timed(`insert ${kind.table}`, copy, `INSERT INTO ${kind.table} (org_id, ${columns}) SELECT $1, ${columns} FROM ${copy}`, [orgId]);
      }
      await prepareLedger(tx, source, orgId);
      await timed('insert ledger_entries', 'floor_entries', `INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at) SELECT $1, id, limit_id, kind, amount, at FROM floor_entries ORDER BY seq`, [orgId]);
      await timed(
        `update ${LIMITS_TABLE}`,
        'floor_deltas',
        `UPDATE ${LIMITS_TABLE} l SET outstanding = l.outstanding + d.delta, updated_at = greatest(l.updated_at, now()) FROM floor_deltas d WHERE l.id = d.limit_id`,
        [],
      );
    });
    return { phases, cpuSeconds: phases.reduce((total, phase) => total + phase.cpuSeconds, 0) };
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
    await admin.close();
  }
}

/** The entries and the per-limit movements, with the floor schema's limit ids (untimed). */
async function prepareLedger(tx: Queryable, source: { schema: string; orgId: string }, orgId: string): Promise<void> {
  await tx.query(
    `CREATE TEMP TABLE floor_entries ON COMMIT DROP AS
     SELECT e.seq, e.id, l.id AS limit_id, e.kind, e.amount, e.at,
            CASE WHEN e.kind = 'drawdown' THEN e.amount ELSE -e.amount END AS delta
       FROM ${source.schema}.ledger_entries e
       JOIN ${source.schema}.${LIMITS_TABLE} s ON s.id = e.limit_id
       JOIN ${LIMITS_TABLE} l ON l.org_id = $2 AND l.uid = s.uid
      WHERE e.org_id = $1`,
    [source.orgId, orgId],
  );
  await tx.query(`CREATE TEMP TABLE floor_deltas ON COMMIT DROP AS SELECT limit_id, sum(delta) AS delta FROM floor_entries GROUP BY limit_id`);
  await tx.query('ANALYZE floor_entries');
  await tx.query('ANALYZE floor_deltas');
}

export async function organizationId(store: Queryable, uid: string): Promise<string> {
  const [row] = await store.query<{ id: string }>('SELECT id::text AS id FROM organizations WHERE uid = $1', [uid]);
  if (!row) throw new Error(`no organization ${uid}`);
  return row.id;
}
