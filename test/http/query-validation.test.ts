import { beforeAll, expect, it } from 'vitest';
import { json, useApp } from '../helpers/app.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors: { param: string; detail: string }[];
  request_id: string;
}

describeEachStore('422 invalid_parameter', (store) => {
  const app = useApp(store);
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(store());
  });

  async function problemFor(url: string): Promise<Problem> {
    const response = await app().inject({ url, headers: { authorization: tenant.authorization } });
    expect(response.statusCode).toBe(422);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = json<Problem>(response);
    expect(problem).toMatchObject({
      type: 'https://lending-api.dev/problems/invalid-parameter',
      title: 'Invalid query parameter',
      status: 422,
      code: 'invalid_parameter',
    });
    expect(problem.request_id).toBe(response.headers['x-request-id']);
    return problem;
  }

  it.each([
    ['/api/methods/?created_from=yesterday', 'created_from', "created_from must be an ISO 8601 timestamp such as 2024-05-01T10:00:00.123456Z or a date such as 2024-05-01, got 'yesterday'"],
    ['/api/methods/?created_to=2024-02-30', 'created_to', 'created_to must be a valid calendar date'],
    ['/api/limits/?updated_from=2024-05-01T25:00:00Z', 'updated_from', 'time of day'],
    ['/api/limits/?updated_to=2024-05-01T10:00:00%2B99:00', 'updated_to', 'UTC offset'],
    ['/api/methods/?entity=', 'entity', 'entity must not be empty'],
    ['/api/methods/?entity=' + 'e'.repeat(256), 'entity', 'at most 255 characters'],
    ['/api/methods/?currency=US', 'currency', 'three-letter ISO 4217'],
    ['/api/methods/?currency=XYZ', 'currency', "currency must be an active ISO 4217 currency code, got 'XYZ'"],
    ['/api/limits/?currency=USD', 'currency', 'currency is not a parameter of /api/limits/; accepted parameters are created_from, created_to, updated_from, updated_to, entity, order_by, page, cursor'],
    ['/api/methods/?page_size=50', 'page_size', 'pages always hold 10 items'],
    ['/api/methods/?colour=blue', 'colour', 'colour is not a parameter of /api/methods/'],
    ['/api/methods/?=x', '', "a parameter without a name ('=…') is not accepted; accepted parameters are"],
    ['/api/methods/?page=0', 'page', "page must be an integer of 1 or more, got '0'"],
    ['/api/methods/?page=-1', 'page', 'page must be an integer of 1 or more'],
    ['/api/methods/?page=1.5', 'page', 'page must be an integer of 1 or more'],
    ['/api/methods/?page=two', 'page', 'page must be an integer of 1 or more'],
    ['/api/methods/?page=', 'page', 'page must be an integer of 1 or more'],
    ['/api/methods/?order_by=balance', 'order_by', 'order_by must be one of created_at, updated_at, currency, type, entity (prefix - for descending)'],
    ['/api/limits/?order_by=currency', 'order_by', 'order_by must be one of created_at, updated_at, capacity, outstanding, balance, entity'],
    ['/api/limits/?order_by=--balance', 'order_by', 'order_by must be one of'],
    ['/api/methods/?entity=a&entity=b', 'entity', 'entity was given more than once'],
    ['/api/methods/?entity=%', 'entity', 'entity holds a malformed percent-encoding'],
    ['/api/methods/?entity=%zz', 'entity', 'entity holds a malformed percent-encoding'],
    ['/api/methods/?entity=caf%E9', 'entity', 'entity holds a malformed percent-encoding: % must start an escape of UTF-8'],
    ['/api/methods/?entity=%zz&entity=b', 'entity', 'entity holds a malformed percent-encoding'],
    ['/api/methods/?page=1&page=1', 'page', 'page was given more than once'],
    ['/api/methods/?created_from=2024-05-02&created_to=2024-05-01', 'created_from', 'created_from (2024-05-02T00:00:00.000000Z) is later than created_to (2024-05-01T23:59:59.999999Z)'],
    ['/api/limits/?updated_from=2024-05-01T10:00:00.000001Z&updated_to=2024-05-01T10:00:00Z', 'updated_from', 'is later than updated_to'],
  ])('%s names %s', async (url, param, detail) => {
    const problem = await problemFor(url);
    expect(problem.errors).toHaveLength(1);
    expect(problem.errors[0]?.param).toBe(param);
    expect(problem.errors[0]?.detail).toContain(detail);
    expect(problem.detail).toContain(detail);
  });

  it('reads well-formed escapes in values: %25 is a literal %, %C3%A9 an é', async () => {
    for (const entity of ['100%25', 'caf%C3%A9', 'a+b']) {
      const response = await app().inject({ url: `/api/methods/?entity=${entity}`, headers: { authorization: tenant.authorization } });
      expect(response.statusCode, entity).toBe(200);
    }
  });

  it('reports every invalid parameter at once', async () => {
    const problem = await problemFor('/api/methods/?created_from=soon&currency=dollars&order_by=price&page=0&extra=1&entity=x&entity=y');
    expect(problem.errors.map((e) => e.param).sort()).toEqual(['created_from', 'currency', 'entity', 'extra', 'order_by', 'page']);
    expect(problem.detail).toBe('6 query parameters are invalid: created_from, currency, order_by, page, extra, entity');
  });

  it('lists at most 20 invalid parameters and shortens long names, so a long query string cannot buy a far longer answer', async () => {
    const unknown = Array.from({ length: 30 }, (_, i) => `x${i}=1`).join('&');
    const problem = await problemFor(`/api/methods/?${unknown}`);
    expect(problem.errors.map((e) => e.param)).toEqual(Array.from({ length: 20 }, (_, i) => `x${i}`));
    expect(problem.detail).toMatch(/^30 query parameters are invalid: x0, x1, .*, x19 and 10 more \(not listed\)$/);

    const long = await problemFor(`/api/methods/?${'n'.repeat(500)}=1`);
    expect(long.errors).toEqual([{ param: `${'n'.repeat(100)}…`, detail: expect.any(String) }]);
  });

  it('accepts a date range of one day and equal timestamps', async () => {
    for (const query of ['created_from=2024-05-01&created_to=2024-05-01', 'updated_from=2024-05-01T10:00:00Z&updated_to=2024-05-01T10:00:00.000000Z']) {
      const response = await app().inject({ url: `/api/methods/?${query}`, headers: { authorization: tenant.authorization } });
      expect(response.statusCode).toBe(200);
    }
  });
});
