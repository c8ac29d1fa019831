import type { CursorPosition } from './cursor.js';
import { PAGE_SIZE, type ListQuery } from './query-parser.js';
import { pageKeyOf, rowIdOf, type ResourceDefinition } from './resource-definition.js';
import { selectExpression, selectList } from './record-rendering.js';
import { castOf, countTextOf, fieldOf, ROW_ID_COLUMN, whereOf, type SqlQuery } from './sql.js';

/** The hidden columns of a keyset page's rows: the sort key as exact text (for the next cursor). */
export const CURSOR_KEY_COLUMN = '_cursor_key';

/**
 * One statement for a keyset page: on every row the exact `count` and
 * `behind` (whether any matching row lies on the other side of the
 * position, i.e. whether there is a page back), then up to PAGE_SIZE + 1
 * rows from the position onwards in scan order (the extra row says whether
 * there is a page further on); one row with a null `_row_id` when none.
 *
 * The rows come from a row comparison `(column, id) > ($k, $id)` (or `<`,
 * by direction), which the (org_id, column, id) index starts its scan at:
 * a page deep in the list costs what the first page costs.
 */
export function buildCursorPageSql(resource: ResourceDefinition, orgId: string, query: ListQuery, position: CursorPosition | undefined): SqlQuery {
  const values: unknown[] = [orgId, ...query.filters.map((applied) => applied.value)];
  if (position) values.push(position.sortKey, position.rowId);
  return { text: cursorTextFor(resource, query, position), values };
}

/** Whether the statement scans the index backwards (a descending order walked forwards, or an ascending one walked back). */
export function scansDescending(query: ListQuery, position: CursorPosition | undefined): boolean {
  return query.ordering.descending !== (position?.direction === 'before');
}

// As in sql.ts: few shapes in practice, bounded against hostile variety.
const MAX_SHAPES_PER_RESOURCE = 1024;
const shapesByResource = new WeakMap<ResourceDefinition, Map<string, string>>();

function cursorTextFor(resource: ResourceDefinition, query: ListQuery, position: CursorPosition | undefined): string {
  let shapes = shapesByResource.get(resource);
  if (!shapes) {
    shapes = new Map();
    shapesByResource.set(resource, shapes);
  }
  const descending = scansDescending(query, position);
  const key = [
    query.filters.map((applied) => applied.filter.param).join(','),
    query.ordering.field,
    descending ? 'desc' : 'asc',
    position ? (position.inclusive ? 'inclusive' : 'exclusive') : 'start',
  ].join('|');
  let text = shapes.get(key);
  if (text === undefined) {
    text = buildCursorText(resource, query, descending, position && { inclusive: position.inclusive });
    if (shapes.size < MAX_SHAPES_PER_RESOURCE) shapes.set(key, text);
  }
  return text;
}

function buildCursorText(resource: ResourceDefinition, query: ListQuery, descending: boolean, position: { inclusive: boolean } | undefined): string {
  const where = whereOf(resource, query);
  const sortField = fieldOf(resource, query.ordering.field);
  const column = sortField.column;
  const rowId = rowIdOf(resource);
  const pageKey = pageKeyOf(resource);
  const direction = descending ? 'DESC' : 'ASC';
  const keyParam = query.filters.length + 2;
  const positionValue = `($${keyParam}${castOf(sortField)}, $${keyParam + 1}::bigint)`;
  const ahead = (descending ? '<' : '>') + (position?.inclusive ? '=' : '');
  const behind = (descending ? '>' : '<') + (position?.inclusive ? '' : '=');
  const pageWhere = position ? `${where} AND (${column}, ${rowId}) ${ahead} ${positionValue}` : where;
  const behindText = position ? `EXISTS (SELECT 1 FROM ${resource.table} WHERE ${where} AND (${column}, ${rowId}) ${behind} ${positionValue})` : 'false';
  const pageColumns = [...Object.keys(resource.fields).map((name) => `p."${name}"`), `p.${CURSOR_KEY_COLUMN}`, `p.${ROW_ID_COLUMN}`].join(', ');
  // Deferred join as in sql.ts: the ids from the index alone, then only
  // those rows (of the organization: `t.org_id = $1`, as in sql.ts). `_sort_value` orders the result (a driver would parse it
  // into a Date if it were returned); `_cursor_key` is its exact text.
  return (
    `SELECT c.count, (${behindText}) AS behind, ${pageColumns} FROM (${countTextOf(resource, query)}) c ` +
    `LEFT JOIN LATERAL (SELECT ${selectList(resource, 't')}, ${selectExpression(`t.${column}`, sortField)} AS ${CURSOR_KEY_COLUMN}, ` +
    `t.${column} AS _sort_value, t.${rowId}::text AS ${ROW_ID_COLUMN} FROM ${resource.table} t ` +
    `JOIN (SELECT ${pageKey} FROM ${resource.table} WHERE ${pageWhere} ORDER BY ${column} ${direction}, ${rowId} ${direction} LIMIT ${PAGE_SIZE + 1}) page USING (${pageKey}) WHERE t.org_id = $1) p ON true ` +
    `ORDER BY p._sort_value ${direction}, p.${ROW_ID_COLUMN}::bigint ${direction}`
  );
}
