import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { insertCreditLimits, creditLimit } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

interface Page {
  count: number;
  next: string | null;
  items: { uid: string; balance: number }[];
}

describeEachStore('pages near the start and deep pages', (store) => {
  let app: FastifyInstance;
  let tenant: Tenant;
  // More than 100 pages, so both the one-statement path (pages 1–100) and
  // the count-first path (deeper pages) are exercised.
  const TOTAL = 1013;
  const expected: string[] = [];

  beforeAll(async () => {
    app = await buildApp({ store: store() });
    tenant = await createTenant(store());
    const rows = Array.from({ length: TOTAL }, (_, i) =>
      // Capacities repeat, so the order relies on the id tie-breaker too.
      creditLimit({ uid: `cl_deep_${i}`, capacity: `${1000 + (i % 7)}.00` }),
    );
    await insertCreditLimits(store(), tenant.org.id, rows);
    // Inserted in order, so ids ascend with i: -balance is capacity desc, then id desc.
    expected.push(
      ...rows
        .map((row, i) => ({ uid: row.uid, capacity: Number(row.capacity), i }))
        .sort((a, b) => b.capacity - a.capacity || b.i - a.i)
        .map((row) => row.uid),
    );
  });
  afterAll(async () => {
    await app.close();
  });

  const page = async (n: number) => {
    const response = await app.inject({ url: `/api/limits/?order_by=-balance&page=${n}`, headers: { authorization: tenant.authorization } });
    return { status: response.statusCode, body: response.json<Page>() };
  };

  it.each([1, 2, 100, 101, 102])('serves page %i in order with the exact count', async (n) => {
    const { status, body } = await page(n);
    expect(status).toBe(200);
    expect(body.count).toBe(TOTAL);
    expect(body.items.map((item) => item.uid)).toEqual(expected.slice((n - 1) * 10, n * 10));
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
      expect(body).toMatchObject({ code: 'page_out_of_range', last_page: 102, count: TOTAL });
    }
    const empty = await createTenant(store());
    const response = await app.inject({ url: '/api/limits/?page=2', headers: { authorization: empty.authorization } });
    expect(response.json()).toMatchObject({ code: 'page_out_of_range', last_page: 1, count: 0 });
  });

  it('returns an empty first page for an organization with nothing matching', async () => {
    const response = await app.inject({ url: '/api/limits/?entity=nobody', headers: { authorization: tenant.authorization } });
    expect(response.json()).toEqual({ count: 0, next: null, previous: null, items: [] });
  });
});
