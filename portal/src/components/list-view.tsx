import type { ComponentChildren } from 'preact';
import { api, type Page } from '../lib/api';
import type { Location } from '../lib/router';
import { ProblemError } from '../lib/session';
import { useLoad } from '../lib/use-api';
import { FilterForm, type FilterSpec } from './filter-form';
import { Pager } from './pager';
import { LoadingStatus, ProblemAlert, ScrollTable } from './status';

export interface Column<T> {
  label: string;
  cell: (item: T) => ComponentChildren;
  /** Numbers align right. */
  numeric?: boolean;
}

export interface ListSpec<T> {
  title: string;
  /** What one record is called, plural ("credit limits"). */
  noun: string;
  route: string;
  apiPath: string;
  filters: readonly FilterSpec[];
  orderBy: readonly string[];
  columns: readonly Column<T>[];
  intro?: ComponentChildren;
}

/** The query the API gets: the address's own, only the parameters this list takes (cursor kept even when empty). */
export function apiQuery(query: URLSearchParams, names: readonly string[]): string {
  const params = new URLSearchParams();
  for (const name of names) {
    const value = query.get(name);
    if (value === null) continue;
    if (value !== '' || name === 'cursor') params.set(name, value);
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** A collection: its filters as a form, the page as a table with a caption, the exact count, and paging. */
export function ListView<T>({ spec, location }: { spec: ListSpec<T>; location: Location }) {
  const names = [...spec.filters.map((filter) => filter.name), 'order_by', 'page', 'cursor'];
  const path = `${spec.apiPath}${apiQuery(location.query, names)}`;
  const result = useLoad(path, (signal) => api<Page<T>>(path, { signal }));
  const problem = result.error instanceof ProblemError ? result.error : undefined;
  const page = result.error ? undefined : result.data;
  const countText = page ? `${page.count.toLocaleString('en-US')} ${spec.noun} match.` : undefined;
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">{spec.title}</h1>
      {spec.intro}
      <FilterForm
        key={location.search}
        route={spec.route}
        query={location.query}
        filters={spec.filters}
        orderBy={spec.orderBy}
        problem={problem}
        label={`Filter ${spec.noun}`}
      />
      <LoadingStatus loading={result.loading} done={countText} />
      <ProblemAlert error={result.error} />
      {page ? (
        <>
          <ScrollTable label={`${spec.title}, scrollable`}>
            <table class="records">
              <caption>
                {spec.title}: {page.count.toLocaleString('en-US')} in all
                {location.query.has('cursor') ? ', by cursor' : `, page ${location.query.get('page') ?? '1'} of ${Math.max(1, Math.ceil(page.count / 10))}`}
              </caption>
              <thead>
                <tr>
                  {spec.columns.map((column) => (
                    <th scope="col" class={column.numeric ? 'num' : undefined} key={column.label}>
                      {column.label}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {page.items.length === 0 ? (
                  <tr>
                    <td colSpan={spec.columns.length}>No {spec.noun} match these filters.</td>
                  </tr>
                ) : (
                  page.items.map((item, index) => (
                    <tr key={index}>
                      {spec.columns.map((column, c) =>
                        c === 0 ? (
                          <th scope="row" key={column.label}>
                            {column.cell(item)}
                          </th>
                        ) : (
                          <td class={column.numeric ? 'num' : undefined} key={column.label}>
                            {column.cell(item)}
                          </td>
                        ),
                      )}
                    </tr>
                  ))
                )}
              </tbody>
            </table>
          </ScrollTable>
          <Pager route={spec.route} query={location.query} page={page} label={`${spec.title} pages`} />
        </>
      ) : null}
    </section>
  );
}
