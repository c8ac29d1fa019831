import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { RESOURCES } from '../../src/resources/index.js';
import { fixtureFor, insertRecords, keyFieldOf, listPathOf, modelRecord, sampleRecords } from '../helpers/fixtures/index.js';
import { expectedForDefinition, ORDER_KEY, type Row } from '../helpers/list-model.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

interface Page {
  count: number;
  next: string | null;
  items: Record<string, string>[];
}

describeEachStore('pages near the start and deep pages', (store) => {
  for (const resource of RESOURCES) {
    const listPath = listPathOf(resource);
    const key = keyFieldOf(resource);
    describe(listPath, () => {
      let app: FastifyInstance;
      let tenant: Tenant;
      // More than 100 pages, so both the one-statement path (pages 1–100) and
      // the count-first path (deeper pages) are exercised.
      const TOTAL = 1013;
      // The collection's last ordering, descending: its values repeat (small
      // fixture pools), so the order relies on the id tie-breaker too.
      const orderBy = `-${resource.orderings.at(-1)!}`;
      const expected: string[] = [];
      let rows: Row[] = [];

      beforeAll(async () => {
        app = await buildApp({ store: store() });
        tenant = await createTenant(store());
        rows = sampleRecords(resource, TOTAL, 7, `${resource.path}_deep`);
        await insertRecords(store(), resource, tenant.org.id, rows);
        // Inserted in order, so ids ascend with the array index.
        const modelRows = rows.map((row, i): Row => ({
          ...modelRecord(resource, row),
          [ORDER_KEY]: String(i),
        }));
        expected.push(
          ...expectedForDefinition(resource, modelRows, {
            query: { order_by: orderBy },
            matches: {},
          }).map((row) => row[key]!),
        );
      });
      afterAll(async () => {
        await app.close();
      });

      const page = async (n: number) => {
        const response = await app.inject({
          url: `${listPath}?order_by=${orderBy}&page=${n}`,
          headers: { authorization: tenant.authorization },
        });
        return { status: response.statusCode, body: response.json<Page>() };
      };

      it('orders by a field with ties, so the id tie-breaker matters', () => {
        const field = resource.fields[orderBy.slice(1)]!;
        const values = rows.map((row) => modelRecord(resource, row)[field.column]);
        expect(new Set(values).size).toBeLessThan(TOTAL);
        expect(expected).toHaveLength(TOTAL);
      });

      it.each([1, 2, 100, 101, 102])('serves page %i in order with the exact count', async (n) => {
        const { status, body } = await page(n);
        expect(status).toBe(200);
        expect(body.count).toBe(TOTAL);
        expect(body.items.map((item) => item[key])).toEqual(expected.slice((n - 1) * 10, n * 10));
      });

      it('serves a short last page with no next link', async () => {
        const { body } = await page(102);
        expect(body.items).toHaveLength(3);
        expect(body.next).toBeNull();
      });

      it('answers 404 naming the last page for a page past the end, near the start or deep', async () => {
        for (const n of [103, 5000]) {
          const { status, body } = await page(n);
          expect(status).toBe(404);
          expect(body).toMatchObject({
            code: 'page_out_of_range',
            last_page: 102,
            count: TOTAL,
          });
        }
        const empty = await createTenant(store());
        await insertRecords(store(), resource, empty.org.id, []);
        const response = await app.inject({
          url: `${listPath}?page=2`,
          headers: { authorization: empty.authorization },
        });
        expect(response.statusCode).toBe(404);
        expect(response.json()).toMatchObject({
          code: 'page_out_of_range',
          last_page: 1,
          count: 0,
        });
      });

      it('returns an empty first page for an organization with nothing matching', async () => {
        // An equality filter of the collection, with a valid value (from the
        // fixture) that no inserted record has.
        // A collection without one (ledger entries) gives a time range after every record.
        const filter = resource.filters.find((candidate) => candidate.operator === '=');
        let search = 'created_from=2999-01-01';
        if (filter) {
          const column = resource.fields[filter.field]!.column;
          const stored = new Set(rows.map((row) => modelRecord(resource, row)[column]));
          const candidates = fc.sample(fixtureFor(resource).equalityValues[filter.param]!, { seed: 1, numRuns: 200 });
          const unused = candidates.find(([, value]) => !stored.has(value));
          if (!unused) throw new Error(`test/helpers/fixtures/${resource.path}.ts: no ${filter.param} value that matches nothing`);
          expect(filter.value.parse(unused[0]).ok).toBe(true);
          search = new URLSearchParams({ [filter.param]: unused[0] }).toString();
        }
        const response = await app.inject({
          url: `${listPath}?${search}`,
          headers: { authorization: tenant.authorization },
        });
        expect(response.statusCode).toBe(200);
        expect(response.json()).toEqual({
          count: 0,
          next: null,
          previous: null,
          items: [],
        });
      });
    });
  }
});
