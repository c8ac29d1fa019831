import { ApiError } from '../domain/errors.js';
import type { Queryable } from '../store/store.js';
import { PAGE_SIZE, type ListQuery } from './query-parser.js';
import type { ResourceDefinition } from './resource-definition.js';
import { serializeRecord, type ApiRecord } from './record-rendering.js';
import type { CachedList, ListCache, PageAnchor } from './list-cache.js';
import { buildListSql, buildRetrieveSql, ROW_ID_COLUMN, type ListSql, type VersionedListSql } from './sql.js';

const ONE_STATEMENT_PAGE_LIMIT = 100;
// The engine's statement texts come from a small fixed set of shapes.
const PREPARE = { prepare: true } as const;

export interface ListResult {
  readonly count: number;
  readonly lastPage: number;
  readonly items: ApiRecord[];
}

/**
 * One page of an organization's records and the exact count of all that
 * match. A page past the last one is a 404 naming the last page.
 *
 * With a cache, counts and deep-page anchors computed at a version of the
 * organization's table are reused while the version stays the same (see
 * ListCache): a filtered list stops counting its matches on every request,
 * and a deep page starts from a remembered row instead of skipping every
 * row before it.
 */
export async function listRecords(
  db: Queryable,
  resource: ResourceDefinition,
  orgId: string,
  query: ListQuery,
  cache?: ListCache,
): Promise<ListResult> {
  const sql = buildListSql(resource, orgId, query);
  if (cache && sql.versioned && countIsRemembered(resource, query)) {
    const result = await listWithCache(db, resource, query, sql.versioned, cache, cacheKey(resource, orgId, query));
    if (result) return result;
  }
  return listWithoutCache(db, resource, query, sql);
}

async function listWithoutCache(db: Queryable, resource: ResourceDefinition, query: ListQuery, sql: ListSql): Promise<ListResult> {
  if (query.page <= ONE_STATEMENT_PAGE_LIMIT) {
    // Near the start, count and page in one statement: one round trip.
    const rows = await db.query<Record<string, string | null>>(sql.combined.text, sql.combined.values, PREPARE);
    const count = Number(rows[0]?.count ?? 0);
    const lastPage = checkPage(query, count);
    return { count, lastPage, items: pageItems(resource, rows) };
  }
  // Further in, count first: a page past the end would otherwise walk the
  // whole index for nothing.
  const [countRow] = await db.query<{ count: string }>(sql.count.text, sql.count.values, PREPARE);
  const count = Number(countRow?.count ?? 0);
  const lastPage = checkPage(query, count);
  const pageRows = await db.query<Record<string, string>>(sql.page.text, sql.page.values, PREPARE);
  return { count, lastPage, items: pageRows.map((row) => serializeRecord(resource, row)) };
}

/**
 * The list through the cache; undefined when the table's version moved
 * between two of its statements (the caller then answers without it).
 */
async function listWithCache(
  db: Queryable,
  resource: ResourceDefinition,
  query: ListQuery,
  sql: VersionedListSql,
  cache: ListCache,
  key: string,
): Promise<ListResult | undefined> {
  const offset = (query.page - 1) * PAGE_SIZE;
  let list = cache.peek(key);
  if (list?.count === undefined || query.page > lastPageOf(list.count)) {
    if (query.page <= ONE_STATEMENT_PAGE_LIMIT) {
      const rows = await db.query<Record<string, string | null>>(sql.combined.text, sql.combined.values, PREPARE);
      const count = Number(rows[0]?.count ?? 0);
      cache.at(key, rows[0]?.version ?? '0').count = count;
      return { count, lastPage: checkPage(query, count), items: pageItems(resource, rows) };
    }
    const [row] = await db.query<{ count: string; version: string }>(sql.count.text, sql.count.values, PREPARE);
    list = cache.at(key, row?.version ?? '0');
    list.count = Number(row?.count ?? 0);
  }
  const count = list.count;
  const lastPage = checkPage(query, count);

  const stride = cache.options.anchorStride;
  const ordering = `${query.ordering.descending ? '-' : ''}${query.ordering.field}`;
  let anchor: PageAnchor | undefined;
  if (offset >= stride && pagesAreAnchored(resource, query)) {
    anchor = await anchorFor(db, sql, list, ordering, Math.floor(offset / stride) * stride, stride);
    if (!anchor) return forget(cache, key);
  }
  const page = sql.pageAfter(anchor, offset - (anchor?.offset ?? 0));
  const rows = await db.query<Record<string, string | null>>(page.text, page.values, PREPARE);
  if (rows[0]?.version !== list.version) return forget(cache, key);
  return { count, lastPage, items: pageItems(resource, rows) };
}

/**
 * The anchor at `base` rows, walking from the nearest remembered one and
 * remembering every anchor on the way; undefined if the version moved.
 */
async function anchorFor(
  db: Queryable,
  sql: VersionedListSql,
  list: CachedList,
  ordering: string,
  base: number,
  stride: number,
): Promise<PageAnchor | undefined> {
  const known = list.anchorAt(ordering, base);
  if (known) return known;
  // Concurrent first requests for one deep page share one walk: each walking
  // alone made N walks of the same index entries compete (at page 50,000 of
  // a freshly started service, 16 at once all ran out of their budget).
  return list.shareWalk(`${ordering}@${base}`, async () => {
    const from = list.nearestAnchor(ordering, base);
    const start = from?.offset ?? 0;
    const walk = sql.anchorWalk(from, base - start, stride);
    const rows = await db.query<{ version: string; n: string | null; sort_key: string | null; row_id: string | null }>(walk.text, walk.values, PREPARE);
    if (rows[0]?.version !== list.version) return undefined;
    list.addAnchors(
      ordering,
      rows.flatMap((row) => (row.n === null || row.sort_key === null || row.row_id === null ? [] : [{ offset: start + Number(row.n), sortKey: row.sort_key, rowId: row.row_id }])),
    );
    return list.anchorAt(ordering, base);
  });
}

function forget(cache: ListCache, key: string): undefined {
  cache.forget(key);
  return undefined;
}

function pageItems(resource: ResourceDefinition, rows: readonly Record<string, string | null>[]): ApiRecord[] {
  return rows.filter((row) => row[ROW_ID_COLUMN] !== null).map((row) => serializeRecord(resource, row as Record<string, string>));
}

/** Whether a list's count can be remembered per version: none of its filters is on a volatile field. */
export function countIsRemembered(resource: ResourceDefinition, query: ListQuery): boolean {
  return !query.filters.some((applied) => isVolatile(resource, applied.filter.field));
}

/** Whether a deep page of this list can start from a remembered anchor. */
export function pagesAreAnchored(resource: ResourceDefinition, query: ListQuery): boolean {
  return countIsRemembered(resource, query) && !isVolatile(resource, query.ordering.field);
}

function isVolatile(resource: ResourceDefinition, field: string): boolean {
  return resource.volatileFields?.includes(field) ?? false;
}

/** One cache entry per table, organization and filter set (orderings share it). */
function cacheKey(resource: ResourceDefinition, orgId: string, query: ListQuery): string {
  const filters = query.filters.map((applied) => `${applied.filter.param}=${applied.value}`).sort();
  return JSON.stringify([resource.table, orgId, ...filters]);
}

function lastPageOf(count: number): number {
  return Math.max(1, Math.ceil(count / PAGE_SIZE));
}

/** The last page for `count` records; a page past it is a 404 naming it. */
function checkPage(query: ListQuery, count: number): number {
  const lastPage = lastPageOf(count);
  if (query.page > lastPage) {
    throw new ApiError(
      'page_out_of_range',
      // A page too large for a double's integers (or for a double at all) is named as such, not as 1e+23 or Infinity.
      `page ${Number.isSafeInteger(query.page) ? query.page : `beyond ${Number.MAX_SAFE_INTEGER}`} is past the last page; the last page is ${lastPage} (${count} matching ${count === 1 ? 'record' : 'records'})`,
      { extensions: { last_page: lastPage, count } },
    );
  }
  return lastPage;
}

export async function retrieveRecord(
  db: Queryable,
  resource: ResourceDefinition,
  orgId: string,
  uid: string,
): Promise<ApiRecord> {
  const notFound = () => new ApiError('not_found', `no ${resource.name} with uid '${uid.slice(0, 80)}'`);
  // No stored uid contains NUL, and PostgreSQL would reject it as a parameter.
  if (uid.includes('\u0000')) throw notFound();
  const sql = buildRetrieveSql(resource, orgId, uid);
  const [row] = await db.query<Record<string, string>>(sql.text, sql.values, PREPARE);
  if (!row) throw notFound();
  return serializeRecord(resource, row);
}
