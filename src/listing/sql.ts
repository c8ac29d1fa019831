import type { ResourceDefinition, FieldDefinition } from './resource-definition.js';
import { PAGE_SIZE, type ListQuery } from './query-parser.js';

export interface SqlQuery {
  readonly text: string;
  readonly values: unknown[];
}

/**
 * SQL for one page and for the exact count of a list query. Column names come
 * only from the resource definition; every client value is a parameter.
 */
export function buildListSql(resource: ResourceDefinition, orgId: string, query: ListQuery) {
  const values: unknown[] = [orgId];
  const conditions = ['org_id = $1'];
  for (const { filter, value } of query.filters) {
    const field = fieldOf(resource, filter.field);
    values.push(value);
    const placeholder = field.type === 'timestamp' ? `$${values.length}::timestamptz` : `$${values.length}`;
    conditions.push(`${field.column} ${filter.operator} ${placeholder}`);
  }
  const where = conditions.join(' AND ');
  const direction = query.ordering.descending ? 'DESC' : 'ASC';
  const orderColumn = fieldOf(resource, query.ordering.field).column;
  const orderBy = `${orderColumn} ${direction}, id ${direction}`;
  const offset = (query.page - 1) * PAGE_SIZE;

  const count = buildCountSql(resource, orgId, query, where, values);
  // Deferred join: find the page's ids from the index alone, then read only
  // those ten rows, so a deep page does not fetch every row it skips. The
  // offset is a parameter so the set of statement texts stays small enough
  // to prepare once per connection.
  const page: SqlQuery = {
    text:
      `SELECT ${selectList(resource, 't')} FROM ${resource.table} t ` +
      `JOIN (SELECT id FROM ${resource.table} WHERE ${where} ORDER BY ${orderBy} ` +
      `LIMIT ${PAGE_SIZE} OFFSET $${values.length + 1}) page USING (id) ` +
      `ORDER BY t.${orderColumn} ${direction}, t.id ${direction}`,
    values: [...values, offset],
  };
  return { count, page };
}

/**
 * The exact count. With no filter it is the organization's whole table,
 * whose count triggers keep in `row_counts` (one primary-key lookup, however
 * many rows); with filters it counts the matching index entries.
 */
function buildCountSql(
  resource: ResourceDefinition,
  orgId: string,
  query: ListQuery,
  where: string,
  values: unknown[],
): SqlQuery {
  if (query.filters.length === 0 && resource.countedRows) {
    return {
      text: 'SELECT coalesce((SELECT row_count FROM row_counts WHERE table_name = $1 AND org_id = $2), 0)::text AS count',
      values: [resource.table, orgId],
    };
  }
  return { text: `SELECT count(*)::text AS count FROM ${resource.table} WHERE ${where}`, values };
}

export function buildRetrieveSql(resource: ResourceDefinition, orgId: string, uid: string): SqlQuery {
  return {
    text: `SELECT ${selectList(resource, 't')} FROM ${resource.table} t WHERE t.org_id = $1 AND t.uid = $2`,
    values: [orgId, uid],
  };
}

/** Every field as text, so both drivers return the same exact values. */
function selectList(resource: ResourceDefinition, alias: string): string {
  return Object.entries(resource.fields)
    .map(([name, field]) => `${selectExpression(`${alias}.${field.column}`, field)} AS "${name}"`)
    .join(', ');
}

function selectExpression(column: string, field: FieldDefinition): string {
  switch (field.type) {
    case 'timestamp':
      return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
    case 'decimal':
      return `${column}::text`;
    case 'string':
      return column;
  }
}

function fieldOf(resource: ResourceDefinition, name: string): FieldDefinition {
  const field = resource.fields[name];
  if (!field) throw new Error(`resource ${resource.path} has no field ${name}`);
  return field;
}
