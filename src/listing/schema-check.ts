import { collectionPathOf, rowIdOf, type FieldType, type ResourceDefinition } from './resource-definition.js';
import type { Queryable } from '../store/store.js';
import { eventTriggerProblems } from './event-trigger-check.js';

/**
 * A resource definition that the database schema cannot serve as declared.
 * Start-up (`serve`) and `migrate` stop with it rather than answer wrong
 * counts or scan a table.
 */
export class SchemaMismatchError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`the database schema does not match the resource definitions:\n  - ${problems.join('\n  - ')}`);
    this.name = 'SchemaMismatchError';
  }
}

/** The trigger functions of migrations 003, 005 and 006, by the event each one must handle. */
const ROW_COUNT_TRIGGERS = {
  row_counts_add_inserted: 'INSERT',
  row_counts_subtract_deleted: 'DELETE',
  row_counts_reset: 'TRUNCATE',
  row_counts_bump_changed: 'UPDATE',
} as const;

/** PostgreSQL type categories (pg_type.typcategory) each field type reads correctly from. */
const COMPATIBLE_TYPES: Record<FieldType, (type: ColumnRow) => boolean> = {
  string: (column) => column.category === 'S',
  timestamp: (column) => column.type === 'timestamptz',
  decimal: (column) => column.category === 'N',
  json: (column) => column.type === 'jsonb',
};

interface ColumnRow {
  num: number;
  name: string;
  type: string;
  category: string;
}
interface IndexRow {
  name: string;
  keys: string;
  key_count: number;
  unique: boolean;
}
interface TriggerRow {
  function: string;
  type: number;
  args: string;
}

/** Throws a SchemaMismatchError naming every collection, field and what is missing. */
export async function assertSchemaMatches(db: Queryable, resources: readonly ResourceDefinition[]): Promise<void> {
  const problems: string[] = [];
  for (const resource of resources) problems.push(...(await schemaProblems(db, resource)));
  if (problems.length > 0) throw new SchemaMismatchError(problems);
}

/** What the schema lacks to serve `resource` as declared (empty when it matches). */
export async function schemaProblems(db: Queryable, resource: ResourceDefinition): Promise<string[]> {
  const where = `collection /api/${collectionPathOf(resource)}/ (table ${resource.table})`;
  const problems = definitionProblems(resource).map((problem) => `${where}: ${problem}`);
  const [table] = await db.query<{ oid: string | null }>('SELECT to_regclass($1)::oid::text AS oid', [resource.table]);
  if (!table?.oid) return [...problems, `${where}: the table does not exist`];

  const columns = await db.query<ColumnRow>(
    `SELECT a.attnum AS num, a.attname AS name, t.typname AS type, t.typcategory AS category
       FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
      WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped`,
    [table.oid],
  );
  const columnByName = new Map(columns.map((column) => [column.name, column]));
  const rowId = rowIdOf(resource);
  for (const required of [rowId, 'org_id']) {
    if (!columnByName.has(required)) problems.push(`${where}: column ${required} is missing (every collection's table has its row id and org_id)`);
  }
  const rowIdColumn = columnByName.get(rowId);
  if (rowIdColumn && rowIdColumn.type !== 'int8') {
    problems.push(`${where}: row id column ${rowId} is ${rowIdColumn.type}; the engine breaks ties and finds page rows by a unique bigint`);
  }
  const parentColumn = resource.parent?.column;
  if (parentColumn !== undefined && !columnByName.has(parentColumn)) {
    problems.push(`${where}: parent column ${parentColumn} is missing`);
  }
  for (const [name, field] of Object.entries(resource.fields)) {
    const column = columnByName.get(field.column);
    if (!column) problems.push(`${where}: field ${name}: column ${field.column} is missing`);
    else if (!COMPATIBLE_TYPES[field.type](column)) {
      problems.push(`${where}: field ${name}: column ${field.column} is ${column.type}, which a ${field.type} field cannot read`);
    }
  }

  const columnByNum = new Map(columns.map((column) => [column.num, column.name]));
  const indexes = await db.query<IndexRow>(
    `SELECT c.relname AS name, i.indkey::text AS keys, i.indnkeyatts AS key_count, i.indisunique AS unique
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
      WHERE i.indrelid = $1::oid AND am.amname = 'btree' AND i.indpred IS NULL AND i.indisvalid`,
    [table.oid],
  );
  const keysOf = (index: IndexRow) => index.keys.split(' ').slice(0, index.key_count).map((num) => columnByNum.get(Number(num)));
  if (rowIdColumn && !indexes.some((index) => index.unique && keysOf(index)[0] === rowId)) {
    problems.push(`${where}: row id column ${rowId}: no unique B-tree index leads with it (it must be unique, and page rows are found by it)`);
  }
  // Every list is one organization's (and, nested, one parent's): its indexes lead with those columns.
  const prefix = parentColumn === undefined ? ['org_id'] : ['org_id', parentColumn];
  const servedKeys = new Set(
    indexes
      .map(keysOf)
      .filter((keys) => prefix.every((column, i) => keys[i] === column) && keys[prefix.length] !== undefined)
      .map((keys) => keys[prefix.length]),
  );
  const needIndex = (what: string, field: string) => {
    const column = resource.fields[field]?.column;
    if (column && columnByName.has(column) && !servedKeys.has(column)) {
      problems.push(`${where}: ${what}: no B-tree index on (${prefix.join(', ')}, ${column}, …) serves it`);
    }
  };
  for (const field of resource.orderings) needIndex(`order_by ${field}`, field);
  for (const filter of resource.filters) needIndex(`filter ${filter.param}`, filter.field);

  if (resource.countedRows) problems.push(...(await rowCountProblems(db, resource, table.oid)).map((problem) => `${where}: ${problem}`));
  problems.push(...(await eventTriggerProblems(db, resource, table.oid, new Set(columnByName.keys()))).map((problem) => `${where}: ${problem}`));
  return problems;
}

/** Mistakes inside the definition itself. */
function definitionProblems(resource: ResourceDefinition): string[] {
  const problems: string[] = [];
  const known = (field: string) => field in resource.fields;
  for (const field of resource.orderings) if (!known(field)) problems.push(`order_by ${field}: no such field`);
  for (const filter of resource.filters) if (!known(filter.field)) problems.push(`filter ${filter.param}: no field ${filter.field}`);
  if (!resource.orderings.includes(resource.defaultOrdering.replace(/^-/, ''))) {
    problems.push(`default ordering ${resource.defaultOrdering} is not one of the orderings`);
  }
  for (const field of resource.volatileFields ?? []) if (!known(field)) problems.push(`volatile field ${field}: no such field`);
  if (!resource.parent && !('uid' in resource.fields)) problems.push('field uid is missing (it is the lookup key)');
  if (resource.parent && resource.countedRows) {
    problems.push("countedRows: a nested collection's lists are one parent's, which the organization's row count does not give");
  }
  return problems;
}

/** countedRows needs the row-count triggers, and volatileFields must name the columns their version trigger leaves out. */
async function rowCountProblems(db: Queryable, resource: ResourceDefinition, tableOid: string): Promise<string[]> {
  const triggers = await db.query<TriggerRow>(
    `SELECT p.proname AS function, t.tgtype AS type, encode(t.tgargs, 'escape') AS args
       FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
      WHERE t.tgrelid = $1::oid AND NOT t.tgisinternal AND t.tgenabled <> 'D'`,
    [tableOid],
  );
  const problems: string[] = [];
  // A table with unversioned columns compares its versioned ones in a function generated for it (migration 013).
  const generated = `${resource.table}_bump_changed`;
  const runs = (trigger: TriggerRow, fn: string) =>
    trigger.function === fn || (fn === 'row_counts_bump_changed' && trigger.function === generated);
  for (const [fn, event] of Object.entries(ROW_COUNT_TRIGGERS)) {
    if (!triggers.some((trigger) => runs(trigger, fn))) {
      problems.push(`countedRows: no ${event} trigger running ${fn}() (install them with SELECT row_counts_track('${resource.table}', …))`);
    }
  }
  const versionTrigger = triggers.find((trigger) => runs(trigger, 'row_counts_bump_changed'));
  if (!versionTrigger) return problems;
  const unversioned = new Set(versionTrigger.args.split('\\000').filter((arg) => arg !== ''));
  if (versionTrigger.function === generated) {
    const [source] = await db.query<{ current: boolean }>(
      `SELECT p.prosrc = row_counts_version_source($1::oid::regclass, $2::text[]) AS current
         FROM pg_proc p WHERE p.proname = $3 AND p.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = $1::oid)`,
      [tableOid, [...unversioned], generated],
    );
    if (!source?.current) {
      problems.push(
        `${generated}() compares the columns the table had when it was generated, not the ones it has now, so a change to a newer column would not move the table version ` +
          `(install it again: SELECT row_counts_version_trigger('${resource.table}', '{${[...unversioned].join(',')}}'))`,
      );
    }
  }
  const volatileColumns = new Set((resource.volatileFields ?? []).map((field) => resource.fields[field]?.column ?? field));
  for (const column of volatileColumns) {
    if (!unversioned.has(column)) problems.push(`volatileFields: column ${column} moves the table version; its trigger does not list it`);
  }
  for (const column of unversioned) {
    const field = Object.entries(resource.fields).find(([, candidate]) => candidate.column === column)?.[0];
    if (field && !volatileColumns.has(column)) {
      problems.push(`volatileFields: field ${field} is missing (the version trigger leaves column ${column} out)`);
    }
  }
  return problems;
}
