import type { PageAnchor } from './list-cache.js';
import { pageKeyOf, rowIdOf, type ResourceDefinition, type FieldDefinition } from './resource-definition.js';
import { PAGE_SIZE, type ListQuery } from './query-parser.js';
import { selectExpression, selectList } from './record-rendering.js';

export interface SqlQuery {
  readonly text: string;
  readonly values: unknown[];
}

/** The hidden column of a combined row holding the page row's id (null when the page is empty). */
export const ROW_ID_COLUMN = '_row_id';

export interface ListSql {
  /** The exact count of matching records, as text in `count`. */
  readonly count: SqlQuery;
  /** The page's rows, in order. */
  readonly page: SqlQuery;
  /**
   * Count and page in one statement and one round trip: the count on every
   * row, the page's rows in order (one row with a null `_row_id` if the page
   * is empty). Both halves read the same snapshot.
   */
  readonly combined: SqlQuery;
  /**
   * Statements that also read the organization's table version in the same
   * snapshot (`version` on every row), for resources with `countedRows`.
   */
  readonly versioned?: VersionedListSql;
}

export interface VersionedListSql {
  /** `count` and `version`. */
  readonly count: SqlQuery;
  /** As `combined`, with `version`. */
  readonly combined: SqlQuery;
  /**
   * The page that starts `offset` rows after `anchor` (or after the start),
   * with `version`; one row with a null `_row_id` if the page is empty.
   */
  pageAfter(anchor: PageAnchor | undefined, offset: number): SqlQuery;
  /**
   * Walks `rows` rows after `anchor` (or the start) and returns every
   * `stride`-th one as `n`, `sort_key` and `row_id`, with `version` (one row
   * with null fields if there are none).
   */
  anchorWalk(anchor: PageAnchor | undefined, rows: number, stride: number): SqlQuery;
}

/**
 * SQL for one page and for the exact count of a list query. Column names come
 * only from the resource definition; every client value is a parameter.
 *
 * The statement texts depend only on the query's shape (which filters, in
 * which order, which ordering, and whether the page starts at the first
 * row), so they are built once per shape and reused: a request only lays
 * out its values.
 */
export function buildListSql(resource: ResourceDefinition, orgId: string, query: ListQuery): ListSql {
  const offset = (query.page - 1) * PAGE_SIZE;
  const texts = listTextsFor(resource, query, offset === 0);
  const values: unknown[] = [orgId, ...query.filters.map((applied) => applied.value)];
  const withOffset = (params: unknown[], rows: number) => (rows === 0 ? params : [...params, rows]);
  const count: SqlQuery = { text: texts.count, values: texts.countHasFilters ? values : [orgId] };
  const page: SqlQuery = { text: texts.page, values: withOffset(values, offset) };
  const combined: SqlQuery = { text: texts.combined, values: withOffset(values, offset) };
  const versionedTexts = texts.versioned;
  if (!versionedTexts) return { count, page, combined };

  const afterAnchor = (anchor: PageAnchor | undefined) => (anchor ? [...values, anchor.sortKey, anchor.rowId] : [...values]);
  const versioned: VersionedListSql = {
    count: { text: versionedTexts.count, values: count.values },
    combined: { text: versionedTexts.combined, values: withOffset(values, offset) },
    pageAfter: (anchor, pageOffset) => ({
      text: versionedTexts.pageAfter(anchor !== undefined, pageOffset === 0),
      values: withOffset(afterAnchor(anchor), pageOffset),
    }),
    anchorWalk: (anchor, rows, stride) => ({
      text: versionedTexts.anchorWalk(anchor !== undefined),
      values: [...afterAnchor(anchor), rows, stride],
    }),
  };
  return { count, page, combined, versioned };
}

interface ListTexts {
  readonly count: string;
  /** Whether the count statement takes the filter values (else only the organization). */
  readonly countHasFilters: boolean;
  readonly page: string;
  readonly combined: string;
  readonly versioned?: {
    readonly count: string;
    readonly combined: string;
    pageAfter(anchored: boolean, startsAtAnchor: boolean): string;
    anchorWalk(anchored: boolean): string;
  };
}

// Shapes are few in practice (a handful of filter combinations and
// orderings per resource); past this bound a shape is built per request
// rather than remembered, so hostile parameter orders cannot grow memory.
const MAX_SHAPES_PER_RESOURCE = 1024;
const shapesByResource = new WeakMap<ResourceDefinition, Map<string, ListTexts>>();

function listTextsFor(resource: ResourceDefinition, query: ListQuery, firstRow: boolean): ListTexts {
  let shapes = shapesByResource.get(resource);
  if (!shapes) {
    shapes = new Map();
    shapesByResource.set(resource, shapes);
  }
  const ordering = `${query.ordering.descending ? '-' : ''}${query.ordering.field}`;
  const key = `${query.filters.map((applied) => applied.filter.param).join(',')}|${ordering}|${firstRow ? 1 : 0}`;
  let texts = shapes.get(key);
  if (!texts) {
    texts = buildListTexts(resource, query, firstRow);
    if (shapes.size < MAX_SHAPES_PER_RESOURCE) shapes.set(key, texts);
  }
  return texts;
}

/**
 * The statement texts of one shape. Parameters: $1 the organization, then
 * one per filter in the query's order, then (pageAfter, anchorWalk) the
 * anchor's sort key and id when anchored, then the offset (none when the
 * page starts at the first row) or, for anchorWalk, rows and stride.
 */
function buildListTexts(resource: ResourceDefinition, query: ListQuery, firstRow: boolean): ListTexts {
  const filterParams = query.filters.length + 1;
  const where = whereOf(resource, query);
  const direction = query.ordering.descending ? 'DESC' : 'ASC';
  const orderColumn = fieldOf(resource, query.ordering.field).column;
  const rowId = rowIdOf(resource);
  const pageKey = pageKeyOf(resource);
  const orderBy = `${orderColumn} ${direction}, ${rowId} ${direction}`;

  const counter = (column: 'row_count' | 'version') => counterText(resource, column);
  const countText = countTextOf(resource, query);
  // Deferred join: find the page's ids from the index alone, then read only
  // those ten rows, so a deep page does not fetch every row it skips. The
  // offset is a parameter so the set of statement texts stays small enough
  // to prepare once per connection. A page that starts at the first row
  // (page 1, or right at an anchor) has no OFFSET at all: PostgreSQL costs
  // an unknown OFFSET as a tenth of the matching rows, so with one it would
  // never settle on a generic plan and would plan the statement again on
  // every execution (measured: two thirds of page 1's database time).
  // The outer table is constrained by the organization too (`t.org_id = $1`),
  // though the ids already are its: on a distributed PostgreSQL sharded by
  // org_id (docs/scaling.md) every table a statement reads must name the
  // organization, or the join scatters to every shard.
  const pageText = (condition: string, offsetParam: number | undefined, extraColumns = '') =>
    `SELECT ${selectList(resource, 't')}${extraColumns} FROM ${resource.table} t ` +
    `JOIN (SELECT ${pageKey} FROM ${resource.table} WHERE ${condition} ORDER BY ${orderBy} ` +
    `LIMIT ${PAGE_SIZE}${offsetParam === undefined ? '' : ` OFFSET $${offsetParam}`}) page USING (${pageKey}) WHERE t.org_id = $1`;
  // The page's fields and row id next to `leading` columns, in order; one row
  // with a null row id if the page is empty. The sort key only orders the
  // rows (returned, a driver would parse every timestamp into a Date for
  // nothing).
  const pageColumns = [...Object.keys(resource.fields).map((name) => `p."${name}"`), `p.${ROW_ID_COLUMN}`].join(', ');
  const besidePage = (leading: string, from: string, condition: string, offsetParam: number | undefined) =>
    `SELECT ${leading}, ${pageColumns} FROM ${from} ` +
    `LEFT JOIN LATERAL (${pageText(condition, offsetParam, `, t.${orderColumn} AS _sort_key, t.${rowId} AS ${ROW_ID_COLUMN}`)}) p ON true ` +
    `ORDER BY p._sort_key ${direction}, p.${ROW_ID_COLUMN} ${direction}`;
  const offsetParam = firstRow ? undefined : filterParams + 1;
  const texts = {
    count: countText,
    countHasFilters: countText.includes('$2'),
    page: `${pageText(where, offsetParam)} ORDER BY t.${orderColumn} ${direction}, t.${rowId} ${direction}`,
    combined: besidePage('c.count', `(${countText}) c`, where, offsetParam),
  };
  if (!resource.countedRows) return texts;

  const version = counter('version');
  const comparison = query.ordering.descending ? '<' : '>';
  const sortKeyCast = castOf(fieldOf(resource, query.ordering.field));
  // Rows after an anchor: a row comparison the index on (org_id, field, id)
  // starts its scan at, so the walk begins at the anchor.
  const afterAnchor = (anchored: boolean) =>
    anchored ? `${where} AND (${orderColumn}, ${rowId}) ${comparison} ($${filterParams + 1}${sortKeyCast}, $${filterParams + 2}::bigint)` : where;
  const paramsAfter = (anchored: boolean) => filterParams + (anchored ? 2 : 0);
  const built = new Map<string, string>();
  const once = (variant: string, build: () => string) => {
    let text = built.get(variant);
    if (text === undefined) {
      text = build();
      built.set(variant, text);
    }
    return text;
  };
  const sortKey = selectExpression(`w.${orderColumn}`, fieldOf(resource, query.ordering.field));
  return {
    ...texts,
    versioned: {
      count: `SELECT c.count, v.version FROM (${countText}) c CROSS JOIN (${version}) v`,
      combined: besidePage('c.count, v.version', `(${countText}) c CROSS JOIN (${version}) v`, where, offsetParam),
      pageAfter: (anchored, startsAtAnchor) =>
        once(`page ${anchored} ${startsAtAnchor}`, () =>
          besidePage('v.version', `(${version}) v`, afterAnchor(anchored), startsAtAnchor ? undefined : paramsAfter(anchored) + 1),
        ),
      anchorWalk: (anchored) =>
        once(`walk ${anchored}`, () => {
          const rowsParam = paramsAfter(anchored) + 1;
          return (
            `SELECT v.version, a.* FROM (${version}) v LEFT JOIN LATERAL (` +
            `SELECT w.n::text AS n, ${sortKey} AS sort_key, w.${rowId}::text AS row_id FROM (` +
            `SELECT ${orderColumn}, ${rowId}, row_number() OVER (ORDER BY ${orderBy}) AS n FROM ${resource.table} ` +
            `WHERE ${afterAnchor(anchored)} ORDER BY ${orderBy} LIMIT $${rowsParam}) w ` +
            `WHERE w.n % $${rowsParam + 1} = 0) a ON true ORDER BY a.n::bigint`
          );
        }),
    },
  };
}

/**
 * The WHERE condition of a list: the organization ($1), then each filter in
 * the query's order ($2, $3, …).
 */
export function whereOf(resource: ResourceDefinition, query: ListQuery): string {
  const conditions = ['org_id = $1'];
  query.filters.forEach(({ filter }, index) => {
    if (filter.column !== undefined) {
      conditions.push(`${filter.column} ${filter.operator} $${index + 2}`);
      return;
    }
    const field = fieldOf(resource, filter.field);
    if (filter.operator === '= any') {
      conditions.push(`${field.column} = ANY ($${index + 2}::text[])`);
      return;
    }
    const placeholder = field.type === 'timestamp' ? `$${index + 2}::timestamptz` : `$${index + 2}`;
    conditions.push(`${field.column} ${filter.operator} ${placeholder}`);
  });
  return conditions.join(' AND ');
}

/** The exact count of a list's matches as `count` (parameters as in whereOf). */
export function countTextOf(resource: ResourceDefinition, query: ListQuery): string {
  // With no filter the count is the organization's whole table, which
  // triggers keep in row_counts: one primary-key lookup however many rows.
  return query.filters.length === 0 && resource.countedRows
    ? counterText(resource, 'row_count')
    : `SELECT count(*)::text AS count FROM ${resource.table} WHERE ${whereOf(resource, query)}`;
}

/** What triggers keep per organization and table (migrations 003, 005): one primary-key lookup. */
function counterText(resource: ResourceDefinition, column: 'row_count' | 'version'): string {
  return `SELECT coalesce((SELECT ${column} FROM row_counts WHERE org_id = $1 AND table_name = '${tableName(resource)}'), 0)::text AS ${column === 'row_count' ? 'count' : column}`;
}

/** How an anchor's sort key (text from selectExpression) is read back, exactly. */
export function castOf(field: FieldDefinition): string {
  switch (field.type) {
    case 'timestamp':
      return '::timestamptz';
    case 'decimal':
      return '::numeric';
    case 'string':
      return '::text';
    case 'json':
      return '::jsonb';
  }
}

function tableName(resource: ResourceDefinition): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(resource.table)) throw new Error(`resource ${resource.path} has an unusual table name`);
  return resource.table;
}

export function buildRetrieveSql(resource: ResourceDefinition, orgId: string, uid: string): SqlQuery {
  return {
    text: `SELECT ${selectList(resource, 't')} FROM ${resource.table} t WHERE t.org_id = $1 AND t.uid = $2`,
    values: [orgId, uid],
  };
}

export function fieldOf(resource: ResourceDefinition, name: string): FieldDefinition {
  const field = resource.fields[name];
  if (!field) throw new Error(`resource ${resource.path} has no field ${name}`);
  return field;
}
