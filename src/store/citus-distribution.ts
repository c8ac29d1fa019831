import { DomainError } from '../domain/domain-error.js';
import { pendingMigrations } from './migrate.js';
import type { Queryable, Store } from './store.js';

/**
 * The sharding plan (docs/scaling.md "Sharding"): these tables are kept
 * whole on every node (reference tables) — small, read by id or hash at
 * authentication or once per process, never listed. Every other table of
 * the schema holds one organization per row (an org_id column) and is
 * distributed by it, all co-located, so a statement constrained by
 * `org_id = $n` reads and writes one shard, joins included.
 */
export const REFERENCE_TABLES: readonly string[] = ['organizations', 'api_keys', 'schema_migrations', 'installation_secrets', 'portal_sessions'];

/** The distribution column of every distributed table. */
export const DISTRIBUTION_COLUMN = 'org_id';

export type Placement = 'reference' | 'distributed';

export interface TablePlan {
  readonly table: string;
  readonly placement: Placement;
}

/** Every table of the current schema with where the plan puts it; a table the plan cannot place is an error naming it. */
export async function planOf(db: Queryable): Promise<TablePlan[]> {
  const tables = await db.query<{ name: string; has_org_id: boolean }>(
    `SELECT c.relname::text AS name,
            EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = '${DISTRIBUTION_COLUMN}' AND NOT a.attisdropped) AS has_org_id
       FROM pg_class c
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      ORDER BY c.relname`,
  );
  const unplaced = tables.filter((t) => !REFERENCE_TABLES.includes(t.name) && !t.has_org_id).map((t) => t.name);
  if (unplaced.length > 0) {
    throw new DomainError(
      `table ${unplaced.join(', ')} has no ${DISTRIBUTION_COLUMN} column and is not a reference table of the plan (src/store/citus-distribution.ts): ` +
        'nothing was changed',
    );
  }
  const placed = tables.map((t): TablePlan => ({ table: t.name, placement: REFERENCE_TABLES.includes(t.name) ? 'reference' : 'distributed' }));
  // Reference tables first, in the plan's order (organizations before the tables that refer to it).
  const rank = (plan: TablePlan) => (plan.placement === 'reference' ? REFERENCE_TABLES.indexOf(plan.table) : REFERENCE_TABLES.length);
  return placed.sort((a, b) => rank(a) - rank(b) || a.table.localeCompare(b.table));
}

export interface DistributionStep {
  readonly table: string;
  readonly placement: Placement;
  /** What this run did: `created`, or `already` when the table was already placed so. */
  readonly done: 'created' | 'already';
}

export interface DistributionReport {
  readonly citusVersion: string;
  readonly workers: number;
  readonly shardCount: number;
  readonly steps: readonly DistributionStep[];
  /** Foreign keys dropped before the tables were placed and added back after (none on a second run). */
  readonly foreignKeysReadded: readonly string[];
}

interface CitusTableRow {
  name: string;
  kind: string;
  column: string | null;
  colocation: string;
}

interface ForeignKeyRow {
  table_name: string;
  name: string;
  definition: string;
}

/**
 * Applies the sharding plan on a Citus coordinator: reference tables, then
 * every other table distributed by org_id and co-located with the others.
 * Idempotent: a table already placed as planned is left alone, so a second
 * run (or a run after a migration added a table) places only what is new.
 *
 * Foreign keys between tables not yet placed are dropped first and added
 * back once every table is placed: Citus turns a local table that refers to
 * a new reference table into a "Citus local" table on its own, which can
 * then no longer be distributed (its identity column).
 */
export async function distribute(store: Store): Promise<DistributionReport> {
  const [citus] = await store.query<{ version: string | null }>(
    `SELECT (SELECT extversion FROM pg_extension WHERE extname = 'citus') AS version`,
  );
  if (!citus?.version) {
    throw new DomainError(
      `${store.description} has no citus extension: distribute runs on a Citus coordinator (CREATE EXTENSION citus there, and add the workers with citus_add_node); nothing was changed`,
    );
  }
  const [role] = await store.query<{ coordinator: boolean; workers: string; shard_count: string }>(
    `SELECT citus_is_coordinator() AS coordinator,
            (SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0)::text AS workers,
            current_setting('citus.shard_count') AS shard_count`,
  );
  if (!role?.coordinator) throw new DomainError(`${store.description} is not the Citus coordinator: run distribute against the coordinator; nothing was changed`);
  if (Number(role.workers) === 0) {
    throw new DomainError(`the Citus coordinator at ${store.description} has no active worker (add them with citus_add_node first); nothing was changed`);
  }
  const pending = await pendingMigrations(store);
  if (pending.length > 0) {
    throw new DomainError(`${pending.length} migration(s) not applied yet (first: ${String(pending[0]!.version).padStart(3, '0')}_${pending[0]!.name}): run lending-api migrate first; nothing was changed`);
  }
  const plan = await planOf(store);

  const report = await store.transaction(async (tx) => {
    // Sequential: one transaction both creates shards and adds foreign keys to reference tables.
    await tx.exec("SET LOCAL citus.enable_unsafe_triggers = on; SET LOCAL citus.multi_shard_modify_mode = 'sequential'");
    const placed = new Map((await citusTables(tx)).map((row) => [row.name, row]));
    const misplaced = plan.filter((p) => {
      const row = placed.get(p.table);
      if (!row || row.kind === 'local') return false;
      return p.placement === 'reference' ? row.kind !== 'reference' : row.kind !== 'distributed' || row.column !== DISTRIBUTION_COLUMN;
    });
    if (misplaced.length > 0) {
      throw new DomainError(
        `already placed otherwise than the plan: ${misplaced.map((p) => `${p.table} (${placed.get(p.table)!.kind})`).join(', ')}; undo it (undistribute_table) and run distribute again; nothing was changed`,
      );
    }
    const toPlace = plan.filter((p) => !placed.has(p.table) || placed.get(p.table)!.kind === 'local');
    const toPlaceNames = new Set(toPlace.map((p) => p.table));

    const foreignKeys = await tx.query<ForeignKeyRow>(
      `SELECT c.conrelid::regclass::text AS table_name, c.conname::text AS name, pg_get_constraintdef(c.oid) AS definition
         FROM pg_constraint c
        WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace
        ORDER BY c.conrelid::regclass::text, c.conname`,
    );
    const dropped = foreignKeys.filter((fk) => toPlaceNames.has(fk.table_name));
    for (const fk of dropped) await tx.exec(`ALTER TABLE ${quoteIdentifier(fk.table_name)} DROP CONSTRAINT ${quoteIdentifier(fk.name)}`);

    let colocateWith = [...placed.values()].find((row) => row.kind === 'distributed')?.name;
    const steps: DistributionStep[] = [];
    for (const table of plan) {
      if (!toPlaceNames.has(table.table)) {
        steps.push({ ...table, done: 'already' });
        continue;
      }
      if (table.placement === 'reference') {
        await tx.query('SELECT create_reference_table($1::regclass)', [table.table]);
      } else {
        await tx.query(`SELECT create_distributed_table($1::regclass, $2, colocate_with => $3)`, [table.table, DISTRIBUTION_COLUMN, colocateWith ?? 'default']);
        colocateWith ??= table.table;
      }
      steps.push({ ...table, done: 'created' });
    }
    for (const fk of dropped) {
      await tx.exec(`ALTER TABLE ${quoteIdentifier(fk.table_name)} ADD CONSTRAINT ${quoteIdentifier(fk.name)} ${fk.definition}`);
    }

    const after = await citusTables(tx);
    const groups = new Set(after.filter((row) => row.kind === 'distributed').map((row) => row.colocation));
    if (groups.size > 1) throw new DomainError(`the distributed tables are in ${groups.size} co-location groups, not one; nothing was changed`);
    return {
      citusVersion: citus.version!,
      workers: Number(role.workers),
      shardCount: Number(role.shard_count),
      steps,
      foreignKeysReadded: dropped.map((fk) => `${fk.table_name}.${fk.name}`),
    };
  });
  // Every later session of this database, migrations included, may create
  // and replace the row-count triggers on the distributed tables.
  const [database] = await store.query<{ name: string }>('SELECT current_database() AS name');
  await store.exec(`ALTER DATABASE ${quoteIdentifier(database!.name)} SET citus.enable_unsafe_triggers = on`);
  return report;
}

async function citusTables(db: Queryable): Promise<CitusTableRow[]> {
  return db.query<CitusTableRow>(
    `SELECT c.relname::text AS name,
            CASE p.partmethod WHEN 'h' THEN 'distributed' WHEN 'n' THEN CASE WHEN p.repmodel = 't' THEN 'reference' ELSE 'local' END ELSE p.partmethod::text END AS kind,
            CASE WHEN p.partmethod = 'h' THEN column_to_column_name(p.logicalrelid, p.partkey) END AS column,
            p.colocationid::text AS colocation
       FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
      WHERE c.relnamespace = current_schema()::regnamespace`,
  );
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
