import { ApiError } from '../http/errors.js';
import type { Queryable } from '../store/store.js';
import { PAGE_SIZE, type ListQuery } from './query-parser.js';
import type { ResourceDefinition } from './resource-definition.js';
import { serializeRecord, type ApiRecord } from './serialize.js';
import { buildListSql, buildRetrieveSql } from './sql.js';

const PARALLEL_PAGE_LIMIT = 100;

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
  const countQuery = db.query<{ count: string }>(sql.count.text, sql.count.values);
  const fetchPage = () => db.query<Record<string, string>>(sql.page.text, sql.page.values);
  // Near the start, fetch the page alongside the count to save a round trip.
  // Further in, count first: a page past the end would otherwise scan the
  // whole index for nothing.
  const early = query.page <= PARALLEL_PAGE_LIMIT ? fetchPage() : undefined;
  early?.catch(() => {});
  const count = Number((await countQuery)[0]?.count ?? 0);
  const lastPage = Math.max(1, Math.ceil(count / PAGE_SIZE));
  if (query.page > lastPage) {
    throw new ApiError(
      'page_out_of_range',
      `page ${query.page} is past the last page; the last page is ${lastPage} (${count} matching ${count === 1 ? 'record' : 'records'})`,
      { extensions: { last_page: lastPage, count } },
    );
  }
  const pageRows = await (early ?? fetchPage());
  return { count, lastPage, items: pageRows.map((row) => serializeRecord(resource, row)) };
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
  const [row] = await db.query<Record<string, string>>(sql.text, sql.values);
  if (!row) throw notFound();
  return serializeRecord(resource, row);
}
