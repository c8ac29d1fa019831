import fc from 'fast-check';
import { expect, it } from 'vitest';
import { json, useApp, type Page } from '../helpers/app.js';
import { insertCreditLimits, insertPaymentMethods, type CreditLimitRow, type PaymentMethodRow } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

/*
 * The API against a plain in-memory model of filtering, ordering and paging,
 * on random data and random parameter combinations. Timestamps come from a
 * small pool so that ties (and the id tie-breaker) are common.
 */

const INSTANTS = [
  '2024-05-01T00:00:00.000000Z',
  '2024-05-01T10:00:00.123456Z',
  '2024-05-01T10:00:00.123457Z',
  '2024-05-01T23:59:59.999999Z',
  '2024-05-02T00:00:00.000000Z',
  '2024-05-03T08:30:00.500000Z',
];
const DATES = ['2024-04-30', '2024-05-01', '2024-05-02', '2024-05-03'];
const ENTITIES = ['ent_a', 'ent_B', 'ent_c'];
const CURRENCIES = ['USD', 'EUR', 'JPY'];
const TYPES = ['ACH', 'SEPA', 'BACS', 'WIRE', 'CARD'];
const AMOUNTS = ['0.00', '0.01', '100.00', '100.50', '99999.99'];

type Row = Record<string, string>;

const instant = fc.constantFrom(...INSTANTS);
const boundValue = fc.oneof(instant, fc.constantFrom(...DATES));

const methodRow = fc.record({
  entity: fc.constantFrom(...ENTITIES),
  type: fc.constantFrom(...TYPES),
  currency: fc.constantFrom(...CURRENCIES),
  last_2: fc.constantFrom('00', '42', '99'),
  created_at: instant,
  updated_at: instant,
});

const limitRow = fc
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

interface Scenario {
  path: 'methods' | 'limits';
  orderings: string[];
  numeric: Set<string>;
}

const scenarios: Scenario[] = [
  { path: 'methods', orderings: ['created_at', 'updated_at', 'currency', 'type', 'entity'], numeric: new Set() },
  { path: 'limits', orderings: ['created_at', 'updated_at', 'capacity', 'outstanding', 'balance', 'entity'], numeric: new Set(['capacity', 'outstanding', 'balance']) },
];

/** A parameter that is absent three times out of four, so results are rarely empty. */
function sometimes<T>(value: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: value, weight: 1 });
}

function queryArbitrary(scenario: Scenario): fc.Arbitrary<Record<string, string>> {
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
function expectedRecords(rows: Row[], query: Record<string, string>, numeric: Set<string>): Row[] {
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

function rangeIsEmpty(query: Record<string, string>): boolean {
  const lower = (v: string) => (v.length === 10 ? `${v}T00:00:00.000000Z` : v);
  const upper = (v: string) => (v.length === 10 ? `${v}T23:59:59.999999Z` : v);
  return (
    (!!query.created_from && !!query.created_to && lower(query.created_from) > upper(query.created_to)) ||
    (!!query.updated_from && !!query.updated_to && lower(query.updated_from) > upper(query.updated_to))
  );
}

describeEachStore('list endpoints against an in-memory model', (store) => {
  const app = useApp(store);

  for (const scenario of scenarios) {
    it(`GET /api/${scenario.path}/ matches the model for random data and queries`, async () => {
      let orderedComparisons = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array((scenario.path === 'methods' ? methodRow : limitRow) as fc.Arbitrary<Record<string, string>>, { minLength: 3, maxLength: 34 }),
          fc.array(fc.tuple(queryArbitrary(scenario), fc.oneof(fc.constant(0), fc.nat({ max: 4 }))), { minLength: 1, maxLength: 4 }),
          async (generated, queries) => {
            const tenant = await createTenant(store());
            const rows: Row[] = generated.map((row, i) => ({ ...row, uid: `${scenario.path}_${i}`, id: String(i) }));
            if (scenario.path === 'methods') await insertPaymentMethods(store(), tenant.org.id, rows as unknown as PaymentMethodRow[]);
            else await insertCreditLimits(store(), tenant.org.id, rows as unknown as CreditLimitRow[]);
            const modelRows = rows.map((row) =>
              scenario.path === 'limits' ? { ...row, balance: (Number(row.capacity) - Number(row.outstanding)).toFixed(2) } : row,
            );

            for (const [query, pageOffset] of queries) {
              const params = Object.entries(query) as [string, string][];
              const search = new URLSearchParams(params);
              const base = `/api/${scenario.path}/?${search.toString()}`;
              const headers = { authorization: tenant.authorization };
              if (rangeIsEmpty(query)) {
                const response = await app().inject({ url: base, headers });
                expect(response.statusCode).toBe(422);
                continue;
              }
              const expected = expectedRecords(modelRows, query, scenario.numeric);
              const lastPage = Math.max(1, Math.ceil(expected.length / 10));
              const page = 1 + pageOffset;
              const response = await app().inject({ url: `${base}&page=${page}`, headers });
              if (page > lastPage) {
                expect(response.statusCode).toBe(404);
                expect(json(response)).toMatchObject({ code: 'page_out_of_range', last_page: lastPage });
                continue;
              }
              expect(response.statusCode).toBe(200);
              const body = json<Page>(response);
              expect(body.count).toBe(expected.length);
              expect(body.items.map((item) => item.uid)).toEqual(expected.slice((page - 1) * 10, page * 10).map((row) => row.uid));
              if (body.items.length >= 2) orderedComparisons += 1;
              expect(body.next !== null).toBe(page < lastPage);
              expect(body.previous !== null).toBe(page > 1);
              if (scenario.path === 'limits') {
                for (const item of body.items) {
                  const row = modelRows.find((r) => r.uid === item.uid)!;
                  expect(item.balance).toBe(Number(row.balance));
                  expect(item.outstanding).toBe(Number(row.outstanding));
                }
              }
            }
          },
        ),
        { numRuns: 60 },
      );
      // Guard against a vacuous property: most queries must compare real orderings.
      expect(orderedComparisons).toBeGreaterThan(30);
    });
  }

  it('pages through 35 records sharing one created_at with no duplicate or gap, both ways', async () => {
    const tenant = await createTenant(store());
    const rows = Array.from({ length: 35 }, (_, i) => ({
      uid: `same_${i}`,
      entity: 'ent_same',
      type: 'ACH',
      currency: 'USD',
      last_2: '11',
      created_at: '2024-05-01T10:00:00.123456Z',
      updated_at: '2024-05-01T10:00:00.123456Z',
    }));
    await insertPaymentMethods(store(), tenant.org.id, rows);
    for (const orderBy of ['-created_at', 'created_at', 'updated_at', '-entity']) {
      const seen: string[] = [];
      for (let page = 1; page <= 4; page += 1) {
        const response = await app().inject({ url: `/api/methods/?order_by=${orderBy}&page=${page}`, headers: { authorization: tenant.authorization } });
        seen.push(...json<Page>(response).items.map((item) => String(item.uid)));
      }
      expect(seen).toHaveLength(35);
      expect(new Set(seen).size).toBe(35);
      const inIdOrder = rows.map((row) => row.uid);
      expect(seen).toEqual(orderBy.startsWith('-') ? [...inIdOrder].reverse() : inIdOrder);
    }
  });
});
