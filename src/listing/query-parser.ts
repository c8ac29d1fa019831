import { ApiError, type ParamError } from '../domain/errors.js';
import { collectionPathOf, type FilterDefinition, type ResourceDefinition } from './resource-definition.js';
import { truncate } from '../domain/truncate.js';

export const PAGE_SIZE = 10;

export interface AppliedFilter {
  readonly filter: FilterDefinition;
  /** The normalized value, passed to SQL as a parameter. */
  readonly value: string;
}

export interface Ordering {
  readonly field: string;
  readonly descending: boolean;
}

export interface ListQuery {
  readonly filters: readonly AppliedFilter[];
  readonly ordering: Ordering;
  readonly page: number;
  /**
   * The raw `cursor` parameter of a keyset page (empty: the first row of the
   * ordering); undefined for a numbered page. Checked against the list it is
   * bound to by `decodeCursor`.
   */
  readonly cursor?: string | undefined;
  /** A nested collection's parent uid, once scopeToParent has found it (cursors name the list by it). */
  readonly parentUid?: string | undefined;
  /** The client's parameters in their order, for building next/previous links. */
  readonly params: ReadonlyArray<readonly [string, string]>;
}

/**
 * Validates a raw query string against a resource's filters and orderings.
 * Reports every invalid parameter at once as a 422 `invalid_parameter`.
 */
export function parseListQuery(resource: ResourceDefinition, rawQuery: string): ListQuery {
  const params = [...new URLSearchParams(rawQuery)];
  const errors: ParamError[] = malformedEscapes(rawQuery);
  const seen = new Set<string>(errors.map((error) => error.param));
  const filtersByParam = new Map(resource.filters.map((filter) => [filter.param, filter]));
  const filters: AppliedFilter[] = [];
  let ordering = parseOrdering(resource.defaultOrdering);
  let page = 1;
  let cursor: string | undefined;

  for (const [param, raw] of params) {
    if (seen.has(param)) {
      if (!errors.some((error) => error.param === param)) {
        errors.push({ param, detail: `${param} was given more than once; give each parameter at most once` });
      }
      continue;
    }
    seen.add(param);
    const filter = filtersByParam.get(param);
    if (filter) {
      const parsed = filter.value.parse(raw);
      if (parsed.ok) filters.push({ filter, value: parsed.value });
      else errors.push({ param, detail: `${param} ${parsed.reason}, got '${truncate(raw)}'` });
    } else if (param === 'order_by') {
      const parsed = parseOrderBy(resource, raw);
      if (parsed) ordering = parsed;
      else
        errors.push({
          param,
          detail: `order_by must be one of ${describeOrderings(resource)}, got '${truncate(raw)}'`,
        });
    } else if (param === 'page') {
      if (/^[0-9]+$/.test(raw) && Number(raw) >= 1) page = Number(raw);
      else errors.push({ param, detail: `page must be an integer of 1 or more, got '${truncate(raw)}'` });
    } else if (param === 'cursor') {
      cursor = raw;
    } else {
      errors.push({ param, detail: unknownParameterDetail(resource, param) });
    }
  }

  if (cursor !== undefined && seen.has('page')) {
    errors.push({
      param: 'cursor',
      detail: 'cursor and page cannot be combined: follow a walk by cursor (next/previous links) or by page number, not both',
    });
  }
  errors.push(...rangeErrors(filters));
  if (errors.length > 0) throw ApiError.invalidParameters(errors);
  return { filters, ordering, page, cursor, params };
}

/**
 * Parameters whose name or value holds a `%` that is not an escape, or
 * escapes that are not UTF-8 (`%zz`, `%ff`): URLSearchParams would read them
 * as literal text or U+FFFD and the filter would quietly match nothing, where
 * the same bytes in the path are a 400. Only a query with a `%` is looked at.
 */
function malformedEscapes(rawQuery: string): ParamError[] {
  if (!rawQuery.includes('%')) return [];
  const errors: ParamError[] = [];
  for (const pair of rawQuery.split('&')) {
    try {
      decodeURIComponent(pair.replaceAll('+', ' '));
    } catch {
      const [[name] = ['']] = new URLSearchParams(pair);
      if (!errors.some((error) => error.param === name)) {
        errors.push({ param: name, detail: `${truncate(name) || 'a parameter'} holds a malformed percent-encoding: % must start an escape of UTF-8 (%25 for a literal %)` });
      }
    }
  }
  return errors;
}

export function parseOrdering(value: string): Ordering {
  return value.startsWith('-') ? { field: value.slice(1), descending: true } : { field: value, descending: false };
}

function parseOrderBy(resource: ResourceDefinition, raw: string): Ordering | undefined {
  const ordering = parseOrdering(raw);
  return resource.orderings.includes(ordering.field) ? ordering : undefined;
}

function describeOrderings(resource: ResourceDefinition): string {
  return resource.orderings.map((field) => `${field}`).join(', ') + ' (prefix - for descending)';
}

export function acceptedParameters(resource: ResourceDefinition): string[] {
  return [...resource.filters.map((filter) => filter.param), 'order_by', 'page', 'cursor'];
}

function unknownParameterDetail(resource: ResourceDefinition, param: string): string {
  const name = truncate(param);
  const accepted = acceptedParameters(resource).join(', ');
  if (param === 'page_size' || param === 'limit' || param === 'per_page') {
    return `${name} is not supported: pages always hold ${PAGE_SIZE} items; accepted parameters are ${accepted}`;
  }
  if (param === '') return `a parameter without a name ('=…') is not accepted; accepted parameters are ${accepted}`;
  return `${name} is not a parameter of /api/${collectionPathOf(resource)}/; accepted parameters are ${accepted}`;
}

/** A lower bound later than the upper bound on the same field can match nothing: say so. */
function rangeErrors(filters: readonly AppliedFilter[]): ParamError[] {
  const errors: ParamError[] = [];
  for (const lower of filters) {
    if (lower.filter.operator !== '>=') continue;
    const upper = filters.find((f) => f.filter.operator === '<=' && f.filter.field === lower.filter.field);
    // Canonical timestamps (fixed-width, UTC) compare correctly as strings.
    if (upper && lower.value > upper.value) {
      errors.push({
        param: lower.filter.param,
        detail: `${lower.filter.param} (${lower.value}) is later than ${upper.filter.param} (${upper.value})`,
      });
    }
  }
  return errors;
}
