export interface PageLinks {
  readonly next: string | null;
  readonly previous: string | null;
  readonly first: string;
  /** RFC 8288 `Link` header value with next, prev and first. */
  readonly header: string;
}

/**
 * Absolute links to the neighbouring pages that keep every other parameter
 * of the request, in the client's order.
 */
export function buildPageLinks(
  collectionUrl: string,
  params: ReadonlyArray<readonly [string, string]>,
  page: number,
  lastPage: number,
): PageLinks {
  const linkTo = (target: number) => withParam(collectionUrl, params, 'page', String(target));
  const next = page < lastPage ? linkTo(page + 1) : null;
  const previous = page > 1 ? linkTo(page - 1) : null;
  return withHeader(next, previous, linkTo(1));
}

/**
 * Links of a keyset page: the same parameters with `cursor` set to the
 * cursor after the last row (next) or before the first (previous); `first`
 * is the empty cursor, the start of the walk.
 */
export function buildCursorLinks(
  collectionUrl: string,
  params: ReadonlyArray<readonly [string, string]>,
  cursors: { readonly next: string | null; readonly previous: string | null },
): PageLinks {
  const linkTo = (cursor: string) => withParam(collectionUrl, params, 'cursor', cursor);
  return withHeader(cursors.next === null ? null : linkTo(cursors.next), cursors.previous === null ? null : linkTo(cursors.previous), linkTo(''));
}

function withParam(collectionUrl: string, params: ReadonlyArray<readonly [string, string]>, name: string, value: string): string {
  const search = new URLSearchParams(params.filter(([param]) => param !== name) as [string, string][]);
  search.set(name, value);
  return `${collectionUrl}?${search.toString()}`;
}

function withHeader(next: string | null, previous: string | null, first: string): PageLinks {
  const header = [
    next && `<${next}>; rel="next"`,
    previous && `<${previous}>; rel="prev"`,
    `<${first}>; rel="first"`,
  ]
    .filter(Boolean)
    .join(', ');
  return { next, previous, first, header };
}
