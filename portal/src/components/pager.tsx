import type { Page } from '../lib/api';
import { href } from '../lib/router';

const PAGE_SIZE = 10;

/** Portal address of an API `next`/`previous` link: its query on this page's route. */
function portalLink(route: string, apiLink: string | null, base: URLSearchParams): string | null {
  if (!apiLink) return null;
  const api = new URL(apiLink, window.location.origin).searchParams;
  const query = new URLSearchParams(base);
  query.delete('page');
  query.delete('cursor');
  for (const name of ['page', 'cursor']) if (api.has(name)) query.set(name, api.get(name) ?? '');
  return href(route, query);
}

/** Numbered pages (first, around the current one, last) or, in a cursor walk, previous and next. */
export function Pager({ route, query, page, label }: { route: string; query: URLSearchParams; page: Page<unknown>; label: string }) {
  const previous = portalLink(route, page.previous, query);
  const next = portalLink(route, page.next, query);
  const cursorMode = query.has('cursor');
  const current = Number(query.get('page') ?? '1') || 1;
  const last = Math.max(1, Math.ceil(page.count / PAGE_SIZE));
  const numbered = (n: number) => {
    const target = new URLSearchParams(query);
    target.set('page', String(n));
    return href(route, target);
  };
  const numbers = cursorMode ? [] : [...new Set([1, current - 2, current - 1, current, current + 1, current + 2, last])].filter((n) => n >= 1 && n <= last).sort((a, b) => a - b);
  return (
    <nav class="pager" aria-label={label}>
      <ul>
        <li>{previous ? <a href={previous} rel="prev">Previous</a> : <span aria-disabled="true">Previous</span>}</li>
        {numbers.map((n, index) => (
          <li key={n}>
            {index > 0 && n - (numbers[index - 1] ?? n) > 1 ? <span aria-hidden="true">… </span> : null}
            {n === current ? (
              <a href={numbered(n)} aria-current="page">
                <span class="visually-hidden">Page </span>
                {n}
              </a>
            ) : (
              <a href={numbered(n)}>
                <span class="visually-hidden">Page </span>
                {n}
              </a>
            )}
          </li>
        ))}
        <li>{next ? <a href={next} rel="next">Next</a> : <span aria-disabled="true">Next</span>}</li>
      </ul>
    </nav>
  );
}
