import { ApiError, type ParamError } from '../domain/errors.js';
import { truncate } from '../domain/truncate.js';
import { buildPageLinks } from '../listing/page-links.js';
import { PAGE_SIZE } from '../listing/query-parser.js';

/**
 * A page of a short list served without the list engine: its number, the rows to skip and take. A page
 * number beyond 2^53 is kept as the float it reads as: past the last page of any list, it is refused
 * (page_out_of_range) before its offset is used.
 */
export interface NumberedPage {
  readonly page: number;
  readonly offset: number;
  readonly limit: number;
  readonly params: ReadonlyArray<readonly [string, string]>;
}

/**
 * The query of a list that takes only `page` (webhook endpoints, delivery
 * attempts): an integer ≥ 1, default 1. Anything else, or `page` twice, is a
 * 422 naming it, as the other lists refuse an unknown parameter.
 */
export function parseNumberedPage(rawQuery: string, path: string): NumberedPage {
  const params = [...new URLSearchParams(rawQuery)];
  const errors: ParamError[] = [];
  let page = 1;
  let seen = false;
  for (const [param, raw] of params) {
    if (param !== 'page') {
      errors.push({ param, detail: `${truncate(param)} is not a parameter of ${path}; it takes only page (${PAGE_SIZE} items a page)` });
    } else if (seen) {
      if (!errors.some((error) => error.param === 'page')) errors.push({ param, detail: 'page was given more than once; give each parameter at most once' });
    } else if (/^[0-9]+$/.test(raw) && Number(raw) >= 1) {
      page = Number(raw);
      seen = true;
    } else {
      errors.push({ param, detail: `page must be an integer of 1 or more, got '${truncate(raw)}'` });
      seen = true;
    }
  }
  if (errors.length > 0) throw ApiError.invalidParameters(errors);
  return { page, offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE, params };
}

/** What the answer sets (a Fastify reply is one). */
export interface LinkHeaderTarget {
  header(name: 'link', value: string): unknown;
}

/**
 * The page envelope of the other lists (count, next, previous, items; a
 * Link header), or 404 page_out_of_range past the last page.
 */
export function numberedPageEnvelope<T>(
  reply: LinkHeaderTarget,
  collectionUrl: string,
  query: NumberedPage,
  result: { readonly count: number; readonly items: readonly T[] },
): { count: number; next: string | null; previous: string | null; items: readonly T[] } {
  const lastPage = Math.max(1, Math.ceil(result.count / PAGE_SIZE));
  if (query.page > lastPage) {
    throw new ApiError(
      'page_out_of_range',
      `page ${Number.isSafeInteger(query.page) ? query.page : `beyond ${Number.MAX_SAFE_INTEGER}`} is past the last page; the last page is ${lastPage} (${result.count} matching ${result.count === 1 ? 'record' : 'records'})`,
      { extensions: { last_page: lastPage, count: result.count } },
    );
  }
  const links = buildPageLinks(collectionUrl, query.params, query.page, lastPage);
  reply.header('link', links.header);
  return { count: result.count, next: links.next, previous: links.previous, items: result.items };
}
