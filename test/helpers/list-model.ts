import fc from 'fast-check';
import type { ResourceDefinition } from '../../src/listing/resource-definition.js';
import { fixtureFor } from './fixtures/index.js';
import { DATES, ENTITIES, instant, INSTANTS } from './fixtures/pools.js';

/*
 * A plain in-memory model of the list endpoints' filtering and ordering, and
 * random data and queries for it. Timestamps come from a small pool so that
 * ties (and the id tie-breaker) are common.
 */

export { DATES, ENTITIES, instant, INSTANTS };
export const CURRENCIES = ['USD', 'EUR', 'JPY'];
export const TYPES = ['ACH', 'SEPA', 'BACS', 'WIRE', 'CARD'];
export const AMOUNTS = ['0.00', '0.01', '100.00', '100.50', '99999.99'];

export type Row = Record<string, string>;

export const boundValue = fc.oneof(instant, fc.constantFrom(...DATES));

export const methodRow = fc.record({
  entity: fc.constantFrom(...ENTITIES),
  type: fc.constantFrom(...TYPES),
  currency: fc.constantFrom(...CURRENCIES),
  last_2: fc.constantFrom('00', '42', '99'),
  created_at: instant,
  updated_at: instant,
});

export const limitRow = fc
  .record({
    entity: fc.constantFrom(...ENTITIES),
    currency: fc.constantFrom(...CURRENCIES),
    capacity: fc.constantFrom(...AMOUNTS.slice(2)),
    drawnShare: fc.constantFrom(0, 0.5, 1),
    rate: fc.constantFrom('0.0005', '0.0001'),
    created_at: instant,
    updated_at: instant,
  })
  .map(({ drawnShare, ...row }) => ({ ...row, outstanding: (Number(row.capacity) * drawnShare).toFixed(2) }));

export interface Scenario {
  path: 'methods' | 'limits';
  orderings: string[];
  numeric: Set<string>;
}

export const scenarios: Scenario[] = [
  { path: 'methods', orderings: ['created_at', 'updated_at', 'currency', 'type', 'entity'], numeric: new Set() },
  { path: 'limits', orderings: ['created_at', 'updated_at', 'capacity', 'outstanding', 'balance', 'entity'], numeric: new Set(['capacity', 'outstanding', 'balance']) },
];

/** A parameter that is absent three times out of four, so results are rarely empty. */
export function sometimes<T>(value: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: value, weight: 1 });
}

export function queryArbitrary(scenario: Scenario): fc.Arbitrary<Record<string, string>> {
  return fc
    .record({
      created_from: sometimes(boundValue),
      created_to: sometimes(boundValue),
      updated_from: sometimes(boundValue),
      updated_to: sometimes(boundValue),
      entity: sometimes(fc.constantFrom(...ENTITIES, 'ent_none')),
      currency: scenario.path === 'methods' ? sometimes(fc.constantFrom('usd', 'EUR', 'Jpy')) : fc.constant(undefined),
      order_by: fc.option(fc.constantFrom(...scenario.orderings.flatMap((field) => [field, `-${field}`]))),
    })
    .map((query) => Object.fromEntries(Object.entries(query).filter(([, value]) => value != null)) as Record<string, string>);
}

/** The model: inclusive bounds, a date as its whole day, AND, (field, id) ordering. */
export function expectedRecords(rows: Row[], query: Record<string, string>, numeric: Set<string>): Row[] {
  const lower = (v: string) => (v.length === 10 ? `${v}T00:00:00.000000Z` : v);
  const upper = (v: string) => (v.length === 10 ? `${v}T23:59:59.999999Z` : v);
  const matching = rows.filter(
    (row) =>
      (!query.created_from || row.created_at! >= lower(query.created_from)) &&
      (!query.created_to || row.created_at! <= upper(query.created_to)) &&
      (!query.updated_from || row.updated_at! >= lower(query.updated_from)) &&
      (!query.updated_to || row.updated_at! <= upper(query.updated_to)) &&
      (!query.entity || row.entity === query.entity) &&
      (!query.currency || row.currency === query.currency.toUpperCase()),
  );
  const orderBy = query.order_by ?? '-created_at';
  const descending = orderBy.startsWith('-');
  const field = orderBy.replace(/^-/, '');
  const compare = (a: Row, b: Row) => {
    const x = a[field]!;
    const y = b[field]!;
    const byField = numeric.has(field) ? Number(x) - Number(y) : x < y ? -1 : x > y ? 1 : 0;
    return byField !== 0 ? byField : Number(a.id) - Number(b.id);
  };
  const sorted = [...matching].sort(compare);
  return descending ? sorted.reverse() : sorted;
}

/** Whether a lower bound is later than the upper bound on the same field, for any of the collection's range filters (a 422). */
export function rangeIsEmptyFor(resource: ResourceDefinition, query: Record<string, string>): boolean {
  const lower = (v: string) => (v.length === 10 ? `${v}T00:00:00.000000Z` : v);
  const upper = (v: string) => (v.length === 10 ? `${v}T23:59:59.999999Z` : v);
  return resource.filters.some((from) => {
    if (from.operator !== '>=' || query[from.param] === undefined) return false;
    const to = resource.filters.find((candidate) => candidate.operator === '<=' && candidate.field === from.field);
    return to !== undefined && query[to.param] !== undefined && lower(query[from.param]!) > upper(query[to.param]!);
  });
}

export function rangeIsEmpty(query: Record<string, string>): boolean {
  const lower = (v: string) => (v.length === 10 ? `${v}T00:00:00.000000Z` : v);
  const upper = (v: string) => (v.length === 10 ? `${v}T23:59:59.999999Z` : v);
  return (
    (!!query.created_from && !!query.created_to && lower(query.created_from) > upper(query.created_to)) ||
    (!!query.updated_from && !!query.updated_to && lower(query.updated_from) > upper(query.updated_to))
  );
}


/** A random query for any collection, with the stored value each equality filter matches. */
export interface ModelQuery {
  readonly query: Record<string, string>;
  readonly matches: Record<string, string>;
}

export function definitionQueryArbitrary(resource: ResourceDefinition): fc.Arbitrary<ModelQuery> {
  const fixture = fixtureFor(resource);
  const parts: Record<string, fc.Arbitrary<readonly [string, string] | undefined>> = {};
  for (const filter of resource.filters) {
    if (filter.operator === '=') {
      const values = fixture.equalityValues[filter.param];
      if (!values) throw new Error(`test/helpers/fixtures/${resource.path}.ts: no equalityValues for filter ${filter.param}`);
      parts[filter.param] = sometimes(values);
    } else parts[filter.param] = sometimes(boundValue.map((value) => [value, value] as const));
  }
  parts.order_by = sometimes(fc.constantFrom(...resource.orderings.flatMap((field) => [field, `-${field}`])).map((value) => [value, value] as const));
  return fc.record(parts).map((picked) => {
    const entries = Object.entries(picked).filter((entry): entry is [string, readonly [string, string]] => entry[1] !== undefined);
    return {
      query: Object.fromEntries(entries.map(([param, [raw]]) => [param, raw])),
      matches: Object.fromEntries(entries.map(([param, [, stored]]) => [param, stored])),
    };
  });
}

/**
 * The model row's insertion position, the order of its row id (the
 * tie-breaker); a row without it uses `id` (collections whose row id is id).
 */
export const ORDER_KEY = '_order';

/** The model for any collection: inclusive time bounds (a date as its whole day), exact equality, AND, (field, id) ordering. */
export function expectedForDefinition(resource: ResourceDefinition, rows: Row[], { query, matches }: ModelQuery): Row[] {
  const lower = (v: string) => (v.length === 10 ? `${v}T00:00:00.000000Z` : v);
  const upper = (v: string) => (v.length === 10 ? `${v}T23:59:59.999999Z` : v);
  const columnOf = (field: string) => resource.fields[field]?.column ?? field;
  const matching = rows.filter((row) =>
    resource.filters.every((filter) => {
      const raw = query[filter.param];
      if (raw === undefined) return true;
      const value = row[columnOf(filter.field)]!;
      if (filter.operator === '>=') return value >= lower(raw);
      if (filter.operator === '<=') return value <= upper(raw);
      return value === matches[filter.param];
    }),
  );
  const orderBy = query.order_by ?? resource.defaultOrdering;
  const field = orderBy.replace(/^-/, '');
  const numeric = resource.fields[field]?.type === 'decimal';
  const column = columnOf(field);
  const compare = (a: Row, b: Row) => {
    const x = a[column]!;
    const y = b[column]!;
    const byField = numeric ? Number(x) - Number(y) : x < y ? -1 : x > y ? 1 : 0;
    return byField !== 0 ? byField : Number(a[ORDER_KEY] ?? a.id) - Number(b[ORDER_KEY] ?? b.id);
  };
  const sorted = [...matching].sort(compare);
  return orderBy.startsWith('-') ? sorted.reverse() : sorted;
}
