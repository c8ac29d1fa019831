import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIST_CACHE, ListCache } from '../../src/listing/list-cache.js';
import { listRecords } from '../../src/listing/list-records.js';
import { parseListQuery } from '../../src/listing/query-parser.js';
import { paymentMethods } from '../../src/resources/payment-methods.js';
import type { Store } from '../../src/store/store.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { openPostgresTestStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

const url = process.env.DATABASE_URL ?? '';

// Plan caching is PostgreSQL's: PGlite runs the same statements, but this
// suite reads pg_prepared_statements of one pooled connection.
describe.runIf(/^postgres(ql)?:/.test(url))('prepared list statements on PostgreSQL', () => {
  let store: Store;
  let orgId: string;

  beforeAll(async () => {
    // One connection, so every statement is prepared in the session we inspect.
    store = await openPostgresTestStore(url, 1);
    const tenant = await createTenant(store);
    orgId = tenant.org.id;
    const rows = Array.from({ length: 3000 }, (_, i) =>
      paymentMethod({ uid: `pm_plan_${i}`, entity: `ent_${i % 600}`, currency: i % 3 === 0 ? 'EUR' : 'USD' }),
    );
    await insertPaymentMethods(store, orgId, rows);
    await store.query('ANALYZE payment_methods');
  });
  afterAll(async () => {
    await store.close();
  });

  const plans = async (marker: string) =>
    store.query<{ generic_plans: string; custom_plans: string }>(
      `SELECT generic_plans::text, custom_plans::text FROM pg_prepared_statements WHERE statement LIKE $1`,
      [`%${marker}%`],
    );

  // A statement whose OFFSET is a parameter is costed as skipping a tenth of
  // the matching rows, so PostgreSQL would plan page 1 again on every request.
  it('serves page 1 from a generic plan instead of planning it on every request', async () => {
    const resource = paymentMethods;
    for (const [rawQuery, cache] of [
      ['', new ListCache(DEFAULT_LIST_CACHE)],
      ['currency=usd', undefined],
      ['entity=ent_7&order_by=-updated_at', undefined],
    ] as const) {
      for (let i = 0; i < 12; i++) await listRecords(store, resource, orgId, parseListQuery(resource, rawQuery), cache);
    }
    // The statements each request ran (a cached list's first request runs another, once).
    const pageOne = (await plans('LIMIT 10)')).filter((s) => Number(s.generic_plans) + Number(s.custom_plans) > 5);
    expect(pageOne.length).toBeGreaterThanOrEqual(3);
    for (const statement of pageOne) {
      expect(Number(statement.generic_plans)).toBeGreaterThan(0);
      // The first five executions are always custom plans; the rest reuse the generic one.
      expect(Number(statement.custom_plans)).toBeLessThanOrEqual(5);
    }
  });

  it('still answers a later page through a statement with an OFFSET parameter', async () => {
    const resource = paymentMethods;
    const result = await listRecords(store, resource, orgId, parseListQuery(resource, 'page=3'));
    expect(result.items).toHaveLength(10);
    expect(await plans('LIMIT 10 OFFSET $')).not.toHaveLength(0);
  });
});
