import fc from 'fast-check';
import { expect, it } from 'vitest';
import { json, useApp, type Page } from '../helpers/app.js';
import { expectedRecords, instant, limitRow, methodRow, queryArbitrary, rangeIsEmpty, scenarios, type Row, type Scenario } from '../helpers/list-model.js';
import { insertCreditLimits, insertPaymentMethods, type CreditLimitRow, type PaymentMethodRow } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import type { Store } from '../../src/store/store.js';

/*
 * Remembered counts and deep-page anchors (ListCache) against the in-memory
 * model, while rows are inserted, changed and deleted between requests. The
 * anchor stride is 3 rows, so every page after the first starts from an
 * anchor, and every query is asked twice, so the second answer comes from
 * what the first remembered. Ledger-style updates of credit limits (amounts
 * and updated_at only) do not move the table's version: lists by those
 * fields must never be served from the cache, and the others stay right.
 */

type Operation =
  | { kind: 'query'; query: Record<string, string>; page: number }
  | { kind: 'insert'; row: Row }
  | { kind: 'update'; index: number; row: Row }
  | { kind: 'delete'; index: number }
  | { kind: 'ledger'; index: number; share: number; at: string };

function operations(scenario: Scenario): fc.Arbitrary<Operation[]> {
  const row = (scenario.path === 'methods' ? methodRow : limitRow) as fc.Arbitrary<Row>;
  const writes: fc.Arbitrary<Operation>[] = [
    fc.record({ kind: fc.constant('insert' as const), row }),
    fc.record({ kind: fc.constant('update' as const), index: fc.nat(), row }),
    fc.record({ kind: fc.constant('delete' as const), index: fc.nat() }),
  ];
  if (scenario.path === 'limits') {
    writes.push(fc.record({ kind: fc.constant('ledger' as const), index: fc.nat(), share: fc.constantFrom(0, 0.25, 1), at: instant }));
  }
  const query = fc.record({ kind: fc.constant('query' as const), query: queryArbitrary(scenario), page: fc.integer({ min: 1, max: 5 }) });
  return fc.array(fc.oneof({ arbitrary: query, weight: 3 }, ...writes.map((arbitrary) => ({ arbitrary, weight: 1 }))), {
    minLength: 6,
    maxLength: 18,
  });
}

describeEachStore('remembered counts and page anchors against the model, across writes', (store) => {
  const app = useApp(store, { listCache: { entries: 50, anchorStride: 3, maxAnchors: 10_000 } });

  for (const scenario of scenarios) {
    it(`GET /api/${scenario.path}/ stays exact while rows are inserted, changed and deleted`, async () => {
      let anchoredAnswers = 0;
      let answersAfterWrites = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array((scenario.path === 'methods' ? methodRow : limitRow) as fc.Arbitrary<Row>, { minLength: 15, maxLength: 45 }),
          operations(scenario),
          async (initial, steps) => {
            const tenant = await createTenant(store());
            const model = new Model(scenario, store(), tenant);
            await model.insert(initial);
            // Every write is followed by the lists asked so far: the same
            // lists, now possibly remembered at an older version.
            const asked: Extract<Operation, { kind: 'query' }>[] = [];
            for (const step of steps) {
              if (step.kind === 'query') {
                if (rangeIsEmpty(step.query)) continue;
                asked.push(step);
                await check(step);
                continue;
              }
              await model.apply(step);
              for (const earlier of asked.slice(-6)) {
                await check(earlier);
                answersAfterWrites += 1;
              }
            }

            async function check(step: Extract<Operation, { kind: 'query' }>): Promise<void> {
              const expected = expectedRecords(model.rows(), step.query, scenario.numeric);
              const lastPage = Math.max(1, Math.ceil(expected.length / 10));
              const url = `/api/${scenario.path}/?${new URLSearchParams({ ...step.query, page: String(step.page) }).toString()}`;
              // Twice: the second answer comes from what the first remembered.
              for (let ask = 0; ask < 2; ask += 1) {
                const response = await app().inject({ url, headers: { authorization: tenant.authorization } });
                if (step.page > lastPage) {
                  expect(response.statusCode).toBe(404);
                  continue;
                }
                expect(response.statusCode).toBe(200);
                const body = json<Page>(response);
                expect(body.count).toBe(expected.length);
                expect(body.items.map((item) => item.uid)).toEqual(expected.slice((step.page - 1) * 10, step.page * 10).map((r) => r.uid));
                if (step.page > 1) anchoredAnswers += 1;
              }
            }
          },
        ),
        { numRuns: 25 },
      );
      // Not vacuous: deep pages and answers after writes were compared.
      expect(anchoredAnswers).toBeGreaterThan(10);
      expect(answersAfterWrites).toBeGreaterThan(30);
    });
  }
});

/** The rows of one organization, in the database and in memory, changed the same way. */
class Model {
  private readonly byUid = new Map<string, Row>();
  private nextId = 0;

  constructor(
    private readonly scenario: Scenario,
    private readonly store: Store,
    private readonly tenant: Tenant,
  ) {}

  private get table(): string {
    return this.scenario.path === 'methods' ? 'payment_methods' : 'credit_limits';
  }

  rows(): Row[] {
    return [...this.byUid.values()].map((row) =>
      this.scenario.path === 'limits' ? { ...row, balance: (Number(row.capacity) - Number(row.outstanding)).toFixed(2) } : row,
    );
  }

  async insert(rows: readonly Row[]): Promise<void> {
    const added = rows.map((row) => {
      const id = this.nextId++;
      return { ...row, uid: `${this.scenario.path}_${id}`, id: String(id) };
    });
    if (this.scenario.path === 'methods') await insertPaymentMethods(this.store, this.tenant.org.id, added as unknown as PaymentMethodRow[]);
    else await insertCreditLimits(this.store, this.tenant.org.id, added as unknown as CreditLimitRow[]);
    for (const row of added) this.byUid.set(row.uid!, row);
  }

  async apply(step: Exclude<Operation, { kind: 'query' }>): Promise<void> {
    if (step.kind === 'insert') return this.insert([step.row]);
    const uids = [...this.byUid.keys()];
    if (uids.length === 0) return;
    const uid = uids[step.index % uids.length]!;
    const current = this.byUid.get(uid)!;
    const where = 'WHERE org_id = $1 AND uid = $2';
    if (step.kind === 'delete') {
      await this.store.query(`DELETE FROM ${this.table} ${where}`, [this.tenant.org.id, uid]);
      this.byUid.delete(uid);
    } else if (step.kind === 'ledger') {
      const outstanding = (Number(current.capacity) * step.share).toFixed(2);
      await this.store.query(`UPDATE credit_limits SET outstanding = $3, updated_at = $4 ${where}`, [this.tenant.org.id, uid, outstanding, step.at]);
      this.byUid.set(uid, { ...current, outstanding, updated_at: step.at });
    } else if (this.scenario.path === 'methods') {
      const { entity, type, currency, created_at, updated_at } = step.row;
      await this.store.query(`UPDATE payment_methods SET entity = $3, type = $4, currency = $5, created_at = $6, updated_at = $7 ${where}`, [
        this.tenant.org.id,
        uid,
        entity,
        type,
        currency,
        created_at,
        updated_at,
      ]);
      this.byUid.set(uid, { ...current, entity: entity!, type: type!, currency: currency!, created_at: created_at!, updated_at: updated_at! });
    } else {
      const { entity, capacity, outstanding, created_at, updated_at } = step.row;
      await this.store.query(
        `UPDATE credit_limits SET entity = $3, capacity = $4, outstanding = $5, created_at = $6, updated_at = $7 ${where}`,
        [this.tenant.org.id, uid, entity, capacity, outstanding, created_at, updated_at],
      );
      this.byUid.set(uid, { ...current, entity: entity!, capacity: capacity!, outstanding: outstanding!, created_at: created_at!, updated_at: updated_at! });
    }
  }
}
