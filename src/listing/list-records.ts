import { ApiError } from '../http/errors.js';
import type { Queryable } from '../store/store.js';
import { PAGE_SIZE, type ListQuery } from './query-parser.js';
import type { ResourceDefinition } from './resource-definition.js';
import { serializeRecord, type ApiRecord } from './serialize.js';
import { buildListSql, buildRetrieveSql, ROW_ID_COLUMN } from './sql.js';

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
 */
export async function listRecords(
  db: Queryable,
  resource: ResourceDefinition,
  orgId: string,
  query: ListQuery,
): Promise<ListResult> {
  const sql = buildListSql(resource, orgId, query);
  if (query.page <= ONE_STATEMENT_PAGE_LIMIT) {
    // Near the start, count and page in one statement: one round trip.
    const rows = await db.query<Record<string, string | null>>(sql.combined.text, sql.combined.values, PREPARE);
    const count = Number(rows[0]?.count ?? 0);
    const lastPage = checkPage(query, count);
    const items = rows.filter((row) => row[ROW_ID_COLUMN] !== null).map((row) => serializeRecord(resource, row));
    return { count, lastPage, items };
  }
  // Further in, count first: a page past the end would otherwise walk the
  // whole index for nothing.
  const [countRow] = await db.query<{ count: string }>(sql.count.text, sql.count.values, PREPARE);
  const count = Number(countRow?.count ?? 0);
  const lastPage = checkPage(query, count);
  const pageRows = await db.query<Record<string, string>>(sql.page.text, sql.page.values, PREPARE);
  return { count, lastPage, items: pageRows.map((row) => serializeRecord(resource, row)) };
}

/** The last page for `count` records; a page past it is a 404 naming it. */
function checkPage(query: ListQuery, count: number): number {
  const lastPage = Math.max(1, Math.ceil(count / PAGE_SIZE));
  if (query.page > lastPage) {
    throw new ApiError(
      'page_out_of_range',
      `page ${query.page} is past the last page; the last page is ${lastPage} (${count} matching ${count === 1 ? 'record' : 'records'})`,
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
