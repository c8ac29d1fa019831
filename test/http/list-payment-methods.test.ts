import { beforeAll, expect, it } from 'vitest';
import { allPages, json, useApp, type Page } from '../helpers/app.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

describeEachStore('GET /api/methods/', (store) => {
  const app = useApp(store);
  let tenant: Tenant;
  const get = (url: string, headers: Record<string, string> = {}) =>
    app().inject({ url, headers: { authorization: tenant.authorization, ...headers } });

  beforeAll(async () => {
    tenant = await createTenant(store());
    const rows = Array.from({ length: 23 }, (_, i) =>
      paymentMethod({
        uid: `pm_${String(i).padStart(2, '0')}`,
        entity: `ent_${i % 3}`,
        currency: ['USD', 'EUR', 'GBP'][i % 3] ?? 'USD',
        type: ['ACH', 'SEPA', 'BACS', 'WIRE', 'CARD'][i % 5] ?? 'ACH',
        created_at: `2024-05-${String(1 + i).padStart(2, '0')}T10:00:00.${String(100000 + i).padStart(6, '0')}Z`,
        updated_at: `2024-06-${String(1 + (i % 7)).padStart(2, '0')}T08:00:00.000001Z`,
      }),
    );
    await insertPaymentMethods(store(), tenant.org.id, rows);
  });

  it('returns the first 10 records, newest first, with an exact count and absolute links', async () => {
    const response = await get('/api/methods/');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const page = json<Page>(response);
    expect(page.count).toBe(23);
    expect(page.items.map((item) => item.uid)).toEqual(['pm_22', 'pm_21', 'pm_20', 'pm_19', 'pm_18', 'pm_17', 'pm_16', 'pm_15', 'pm_14', 'pm_13']);
    expect(page.previous).toBeNull();
    expect(page.next).toBe('http://localhost:80/api/methods/?page=2');
    expect(response.headers.link).toBe('<http://localhost:80/api/methods/?page=2>; rel="next", <http://localhost:80/api/methods/?page=1>; rel="first"');
  });

  it('serializes every field, with six fractional digits on timestamps', async () => {
    const page = json<Page>(await get('/api/methods/?order_by=created_at'));
    expect(page.items[0]).toEqual({
      uid: 'pm_00',
      entity: 'ent_0',
      type: 'ACH',
      currency: 'USD',
      last_2: '42',
      created_at: '2024-05-01T10:00:00.100000Z',
      updated_at: '2024-06-01T08:00:00.000001Z',
    });
  });

  it('keeps every other parameter in next and previous links, in the Link header too', async () => {
    const response = await get('/api/methods/?order_by=created_at&page=2&created_to=2024-05-31');
    const page = json<Page>(response);
    expect(page.items.map((item) => item.uid)).toEqual(['pm_10', 'pm_11', 'pm_12', 'pm_13', 'pm_14', 'pm_15', 'pm_16', 'pm_17', 'pm_18', 'pm_19']);
    expect(page.previous).toBe('http://localhost:80/api/methods/?order_by=created_at&created_to=2024-05-31&page=1');
    expect(page.next).toBe('http://localhost:80/api/methods/?order_by=created_at&created_to=2024-05-31&page=3');
    expect(response.headers.link).toContain('rel="prev"');
    expect(response.headers.link).toContain('<http://localhost:80/api/methods/?order_by=created_at&created_to=2024-05-31&page=1>; rel="first"');
  });

  it('returns fewer items on the last page and no next link', async () => {
    const page = json<Page>(await get('/api/methods/?page=3'));
    expect(page.items).toHaveLength(3);
    expect(page.next).toBeNull();
    expect(page.previous).toBe('http://localhost:80/api/methods/?page=2');
  });

  it('answers a page past the last with 404 page_out_of_range naming the last page', async () => {
    const response = await get('/api/methods/?page=4');
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = json(response);
    expect(problem).toMatchObject({ status: 404, code: 'page_out_of_range', last_page: 3, count: 23 });
    expect(problem.detail).toContain('the last page is 3');
    const huge = await get('/api/methods/?page=99999999999999999999');
    expect(huge.statusCode).toBe(404);
    expect(json(huge).detail).toBe('page beyond 9007199254740991 is past the last page; the last page is 3 (23 matching records)');
    expect(json(await get(`/api/methods/?page=${'9'.repeat(400)}`)).detail).toMatch(/^page beyond 9007199254740991 is past/);
  });

  it('answers page 1 of an empty result with 200 and no items', async () => {
    const response = await get('/api/methods/?entity=nobody');
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ count: 0, next: null, previous: null, items: [] });
    expect(response.headers.link).toBe('<http://localhost:80/api/methods/?entity=nobody&page=1>; rel="first"');
    expect(json(await get('/api/methods/?entity=nobody&page=2'))).toMatchObject({ code: 'page_out_of_range', last_page: 1 });
  });

  it('filters by entity and by currency in any letter case, combined with AND', async () => {
    const byEntity = json<Page>(await get('/api/methods/?entity=ent_1'));
    expect(byEntity.count).toBe(8);
    expect(byEntity.items.every((item) => item.entity === 'ent_1')).toBe(true);
    const byCurrency = json<Page>(await get('/api/methods/?currency=eur'));
    expect(byCurrency.count).toBe(8);
    expect(byCurrency.items.every((item) => item.currency === 'EUR')).toBe(true);
    expect(json<Page>(await get('/api/methods/?currency=EUR&entity=ent_1')).count).toBe(8);
    expect(json<Page>(await get('/api/methods/?currency=usd&entity=ent_1')).count).toBe(0);
  });

  it('takes only ASCII letters in a currency: ſ and ı are not s and i, though JavaScript upper-cases them to S and I', async () => {
    for (const currency of ['e%C5%BFr', '%C4%B1ls', 'eu%C5%BF']) {
      const response = await get(`/api/methods/?currency=${currency}`);
      expect(response.statusCode, currency).toBe(422);
      expect(json(response), currency).toMatchObject({ errors: [{ param: 'currency', detail: expect.stringMatching(/three-letter ISO 4217/) }] });
    }
  });

  it('treats created and updated ranges as inclusive at microsecond precision', async () => {
    const exact = '2024-05-03T10:00:00.100002Z';
    expect(json<Page>(await get(`/api/methods/?created_from=${exact}&created_to=${exact}`)).items.map((i) => i.uid)).toEqual(['pm_02']);
    expect(json<Page>(await get('/api/methods/?created_from=2024-05-03T10:00:00.100003Z&created_to=2024-05-04')).items.map((i) => i.uid)).toEqual(['pm_03']);
    expect(json<Page>(await get('/api/methods/?created_to=2024-05-03T10:00:00.100001999Z&order_by=created_at')).items.map((i) => i.uid)).toEqual(['pm_00', 'pm_01']);
    expect(json<Page>(await get('/api/methods/?created_from=2024-05-03T10:00:00.100001001Z&created_to=2024-05-03')).items.map((i) => i.uid)).toEqual(['pm_02']);
    expect(json<Page>(await get('/api/methods/?updated_from=2024-06-07&updated_to=2024-06-07')).count).toBe(3);
  });

  it('reads a date alone as the whole UTC day and an offset in any form', async () => {
    expect(json<Page>(await get('/api/methods/?created_from=2024-05-05&created_to=2024-05-05')).items.map((i) => i.uid)).toEqual(['pm_04']);
    // 12:00:00.100004+02:00 is 10:00:00.100004Z; the + arrives unencoded, as a space.
    expect(json<Page>(await get('/api/methods/?created_from=2024-05-05T12:00:00.100004+02:00&created_to=2024-05-05T12:00:00.100004%2B02:00')).count).toBe(1);
    expect(json<Page>(await get('/api/methods/?created_from=2024-05-05T05:00:00.100004-05:00&created_to=2024-05-05T10:00:00.100004')).count).toBe(1);
  });

  it('matches a boundary copied from a response, inclusively', async () => {
    const first = json<Page>(await get('/api/methods/?order_by=-updated_at'));
    const record = first.items[3];
    expect(record).toBeDefined();
    const created = String(record?.created_at);
    const updated = String(record?.updated_at);
    const both = json<Page>(await get(`/api/methods/?created_from=${created}&created_to=${created}&updated_from=${updated}&updated_to=${updated}`));
    expect(both.items.map((item) => item.uid)).toEqual([record?.uid]);
  });

  it.each(['created_at', 'updated_at', 'currency', 'type', 'entity'])('orders by %s both ways with the id as tie-breaker', async (field) => {
    const ascending = (await allPages(app(), `/api/methods/?order_by=${field}`, tenant.authorization)).flatMap((p) => p.items);
    const descending = (await allPages(app(), `/api/methods/?order_by=-${field}`, tenant.authorization)).flatMap((p) => p.items);
    expect(ascending).toHaveLength(23);
    const values = ascending.map((item) => String(item[field]));
    expect(values).toEqual([...values].sort());
    // Same values in uid (= insertion) order ascending, reversed descending.
    expect(descending.map((item) => item.uid)).toEqual(ascending.map((item) => item.uid).reverse());
  });

  it('accepts the collection path with or without a trailing slash', async () => {
    const withSlash = json<Page>(await get('/api/methods/?currency=gbp'));
    const without = json<Page>(await get('/api/methods?currency=gbp'));
    expect(without.count).toBe(withSlash.count);
    expect(without.next).toBe(withSlash.next);
  });

  it('retrieves one record by uid, with or without a trailing slash', async () => {
    const response = await get('/api/methods/pm_07/');
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ uid: 'pm_07', entity: 'ent_1', currency: 'EUR', type: 'BACS' });
    expect(json(await get('/api/methods/pm_07'))).toEqual(json(response));
    const missing = await get('/api/methods/pm_missing/');
    expect(missing.statusCode).toBe(404);
    expect(json(missing)).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('refuses a parameter on a record URL with 422 naming it, as a list refuses an unknown one', async () => {
    const response = await get('/api/methods/pm_07/?expand=entity&x=1');
    expect(response.statusCode).toBe(422);
    expect(json(response)).toMatchObject({
      code: 'invalid_parameter',
      errors: [
        { param: 'expand', detail: "'expand' is not a parameter: a single record's URL takes none" },
        { param: 'x', detail: "'x' is not a parameter: a single record's URL takes none" },
      ],
    });
    expect((await get('/api/methods/pm_07/?')).statusCode).toBe(200);
  });
});
