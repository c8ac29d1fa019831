import type { TargetedSubmitEvent } from 'preact';
import { href, navigate } from '../lib/router';
import type { ProblemError } from '../lib/session';

export interface FilterSpec {
  name: string;
  label: string;
  /** text (uids, codes), time (RFC 3339 or a date), or a choice of values. */
  kind: 'text' | 'time' | 'choice';
  choices?: readonly string[];
  hint?: string;
}

const TIME_HINT = 'Inclusive: 2025-01-31 or 2025-01-31T09:30:00Z.';

/**
 * A list's filters and ordering as a real form. Submitting puts them in the address (a new
 * history entry), which the list reads: a link to the result can be shared, Back undoes it.
 */
export function FilterForm(props: {
  route: string;
  query: URLSearchParams;
  filters: readonly FilterSpec[];
  orderBy: readonly string[];
  problem: ProblemError | undefined;
  label: string;
}) {
  const { query, problem } = props;
  const fieldError = (name: string) => problem?.errors.find((error) => error.param === name)?.detail;
  const onSubmit = (event: TargetedSubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [name, value] of new FormData(event.currentTarget)) {
      const text = String(value).trim();
      if (name === 'paging') continue;
      if (text) params.set(name, text);
    }
    // Cursor pages start from an empty cursor (SPEC §2); numbered pages from page 1.
    if (new FormData(event.currentTarget).get('paging') === 'cursor') params.set('cursor', '');
    navigate(href(props.route, params));
  };
  const control = (filter: FilterSpec) => {
    const id = `filter-${filter.name}`;
    const error = fieldError(filter.name);
    const hint = filter.hint ?? (filter.kind === 'time' ? TIME_HINT : undefined);
    const describedBy = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
    const common = { id, name: filter.name, 'aria-invalid': error ? ('true' as const) : undefined, 'aria-describedby': describedBy };
    return (
      <div class="field" key={filter.name}>
        <label for={id}>{filter.label}</label>
        {filter.kind === 'choice' ? (
          <select {...common}>
            <option value="">any</option>
            {filter.choices?.map((choice) => (
              <option value={choice} key={choice} selected={query.get(filter.name) === choice}>
                {choice}
              </option>
            ))}
          </select>
        ) : (
          <input {...common} type="text" defaultValue={query.get(filter.name) ?? ''} autocomplete="off" spellcheck={false} />
        )}
        {hint ? (
          <small id={`${id}-hint`} class="hint">
            {hint}
          </small>
        ) : null}
        {error ? (
          <small id={`${id}-error`} class="field-error">
            {error}
          </small>
        ) : null}
      </div>
    );
  };
  const orderError = fieldError('order_by');
  return (
    <form class="filters" onSubmit={onSubmit} aria-label={props.label}>
      {props.filters.map(control)}
      <div class="field">
        <label for="filter-order_by">Order by</label>
        <select
          id="filter-order_by"
          name="order_by"
          aria-invalid={orderError ? 'true' : undefined}
          aria-describedby={orderError ? 'filter-order_by-error' : undefined}
        >
          <option value="">newest first (default)</option>
          {props.orderBy.flatMap((field) => [
            <option value={field} key={field} selected={query.get('order_by') === field}>
              {field.replaceAll('_', ' ')}, ascending
            </option>,
            <option value={`-${field}`} key={`-${field}`} selected={query.get('order_by') === `-${field}`}>
              {field.replaceAll('_', ' ')}, descending
            </option>,
          ])}
        </select>
        {orderError ? (
          <small id="filter-order_by-error" class="field-error">
            {orderError}
          </small>
        ) : null}
      </div>
      <div class="field">
        <label for="filter-paging">Paging</label>
        <select id="filter-paging" name="paging">
          <option value="numbered">numbered pages</option>
          <option value="cursor" selected={query.has('cursor')}>
            cursor (stable while records change)
          </option>
        </select>
      </div>
      <div class="actions">
        <button type="submit">Apply</button>
        <a href={href(props.route)}>Clear filters</a>
      </div>
    </form>
  );
}
