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
  const linkTo = (target: number) => {
    const search = new URLSearchParams(params.filter(([name]) => name !== 'page') as [string, string][]);
    search.set('page', String(target));
    return `${collectionUrl}?${search.toString()}`;
  };
  const next = page < lastPage ? linkTo(page + 1) : null;
  const previous = page > 1 ? linkTo(page - 1) : null;
  const first = linkTo(1);
  const header = [
    next && `<${next}>; rel="next"`,
    previous && `<${previous}>; rel="prev"`,
    `<${first}>; rel="first"`,
  ]
    .filter(Boolean)
    .join(', ');
  return { next, previous, first, header };
}
