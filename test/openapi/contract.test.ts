import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';
import type { JsonObject } from '../../src/openapi/json-schema.js';
import { OpenApiContract } from '../helpers/openapi-contract.js';
import { RESOURCES } from '../../src/resources/index.js';
import { insertRecords, keyFieldOf, listPathOf, sampleRecords } from '../helpers/fixtures/index.js';
import { collectionPathOf } from '../../src/listing/resource-definition.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { basicAuthorization, createTenant, type Tenant } from '../helpers/tenants.js';
import { unreachableStore } from '../helpers/unreachable-store.js';

const document = lendingApiDocument();
const contract = new OpenApiContract(document);

interface DocumentedParameter {
  name: string;
  in: string;
  description?: string;
  schema: { enum?: string[] };
}
type Operation = { parameters?: DocumentedParameter[] };
const paths = document.paths as Record<string, { get?: Operation }>;
const collectionPaths = Object.keys(paths).filter((path) => /^\/api\/[a-z-]+\/$/.test(path));
/** Lists nested under one record: `/api/limits/{uid}/entries/` (not the POST-only write paths beside them). */
const nestedPaths = Object.keys(paths).filter((path) => /^\/api\/[a-z-]+\/\{uid\}\/[a-z-]+\/$/.test(path) && paths[path]?.get !== undefined);
/** Every documented list, and the URL of one that has records (a nested list's is under the parent the fixtures create). */
const lists = [...collectionPaths, ...nestedPaths].map((template) => {
  const resource = RESOURCES.find((candidate) => `/api/${collectionPathOf(candidate)}/` === template);
  return { template, url: resource ? listPathOf(resource) : template, resource };
});

function expectConforms(method: string, template: string, response: LightMyRequestResponse) {
  expect(contract.check(method, template, response), `${method} ${template} → ${response.statusCode} ${response.body}`).toEqual([]);
}

describeEachStore('responses match the OpenAPI document', (store) => {
  let app: FastifyInstance;
  let tenant: Tenant;
  const uids: Record<string, string> = {};

  beforeAll(async () => {
    app = await buildApp({ store: store() });
    tenant = await createTenant(store());
    for (const resource of RESOURCES) {
      const records = sampleRecords(resource, 12);
      await insertRecords(store(), resource, tenant.org.id, records);
      uids[`/api/${resource.path}/`] = records[0]![keyFieldOf(resource)]!;
    }
    // The records' events, in the log: more than a page of them.
    await publishAllEvents(store(), tenant.org.id);
    const [event] = await store().query<{ uid: string }>('SELECT uid FROM events WHERE org_id = $1 LIMIT 1', [tenant.org.id]);
    uids['/api/events/'] = event!.uid;
  });
  afterAll(async () => {
    await app.close();
  });

  /** `null` sends no credentials. */
  const get = (url: string, authorization: string | null = tenant.authorization) =>
    app.inject({ method: 'GET', url, headers: authorization === null ? {} : { authorization } });

  it('answers writes (201, its replay, 409, 403, 422, 400) as documented', async () => {
    const writer = await createTenant(store(), 'Contract writer', 'write');
    const limitUid = 'cl_contract_write';
    await insertCreditLimits(store(), writer.org.id, [creditLimit({ uid: limitUid, capacity: '100.00', outstanding: '0.00' })]);
    const template = '/api/limits/{uid}/drawdowns/';
    const post = (body: string, headers: Record<string, string> = {}, authorization = writer.authorization) =>
      app.inject({ method: 'POST', url: `/api/limits/${limitUid}/drawdowns/`, payload: body, headers: { authorization, 'content-type': 'application/json', ...headers } });
    const created = await post('{"amount":"60.00","reference":"contract"}', { 'idempotency-key': 'contract-1' });
    expect(created.statusCode).toBe(201);
    expectConforms('POST', template, created);
    const replayed = await post('{"amount":"60.00","reference":"contract"}', { 'idempotency-key': 'contract-1' });
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expectConforms('POST', template, replayed);
    const refused = await post('{"amount":"60.00"}', { 'idempotency-key': 'contract-2' });
    expect(refused.statusCode).toBe(409);
    expectConforms('POST', template, refused);
    const readOnly = await post('{"amount":"1.00"}', { 'idempotency-key': 'contract-3' }, tenant.authorization);
    expect(readOnly.statusCode).toBe(403);
    expectConforms('POST', template, readOnly);
    const invalid = await post('{"amount":"1.001","colour":"red"}', { 'idempotency-key': 'contract-4' });
    expect(invalid.statusCode).toBe(422);
    expectConforms('POST', template, invalid);
    const keyless = await post('{"amount":"1.00"}');
    expect(keyless.statusCode).toBe(400);
    expectConforms('POST', template, keyless);
  });

  it('answers loan writes (201, its replay, 409, 404, 422) as documented', async () => {
    const writer = await createTenant(store(), 'Contract lender', 'write');
    await insertCreditLimits(store(), writer.org.id, [creditLimit({ uid: 'cl_contract_loan', capacity: '100.00', outstanding: '0.00' })]);
    await insertPaymentMethods(store(), writer.org.id, [paymentMethod({ uid: 'pm_contract_loan' }), paymentMethod({ uid: 'pm_contract_eur', currency: 'EUR' })]);
    const post = (url: string, body: unknown, key: string) =>
      app.inject({ method: 'POST', url, payload: JSON.stringify(body), headers: { authorization: writer.authorization, 'content-type': 'application/json', 'idempotency-key': key } });
    const loan = { credit_limit: 'cl_contract_loan', payment_method: 'pm_contract_loan', principal: '60.00' };
    const created = await post('/api/loans/', loan, 'contract-loan-1');
    expect(created.statusCode).toBe(201);
    expectConforms('POST', '/api/loans/', created);
    expectConforms('POST', '/api/loans/', await post('/api/loans/', loan, 'contract-loan-1'));
    const refused = await post('/api/loans/', loan, 'contract-loan-2');
    expect(refused.statusCode).toBe(409);
    expectConforms('POST', '/api/loans/', refused);
    const mismatch = await post('/api/loans/', { ...loan, payment_method: 'pm_contract_eur' }, 'contract-loan-3');
    expect(mismatch.statusCode).toBe(422);
    expectConforms('POST', '/api/loans/', mismatch);
    const missing = await post('/api/loans/', { ...loan, credit_limit: 'cl_none' }, 'contract-loan-4');
    expect(missing.statusCode).toBe(404);
    expectConforms('POST', '/api/loans/', missing);
    const uid = (JSON.parse(created.body) as { loan: { uid: string } }).loan.uid;
    const template = '/api/loans/{uid}/repayments/';
    const repaid = await post(`/api/loans/${uid}/repayments/`, { amount: '10.00' }, 'contract-loan-5');
    expect(repaid.statusCode).toBe(201);
    expectConforms('POST', template, repaid);
    const tooMuch = await post(`/api/loans/${uid}/repayments/`, { amount: '60.00' }, 'contract-loan-6');
    expect(tooMuch.statusCode).toBe(409);
    expectConforms('POST', template, tooMuch);
  });

  it('documents exactly the collections the server serves', () => {
    expect([...collectionPaths, ...nestedPaths].sort()).toEqual([...RESOURCES.map((resource) => `/api/${collectionPathOf(resource)}/`), '/api/events/'].sort());
  });

  for (const { template: path, url: listUrl, resource } of lists) {
    const itemPath = `${path}{uid}/`;
    const lastOrdering = `-${resource?.orderings.at(-1) ?? 'created_at'}`;
    describe(`GET ${path}`, () => {
      it('answers pages (first, middle, last and empty) that match the page schema', async () => {
        for (const url of [listUrl, `${listUrl}?page=2`, `${listUrl}?order_by=${lastOrdering}&page=1`, `${listUrl}?created_from=2999-01-01`, `${listUrl}?cursor=`]) {
          const response = await get(url);
          expect(response.statusCode, url).toBe(200);
          expectConforms('GET', path, response);
        }
      });

      it('accepts the examples written in every parameter description, and pre-fills none of them', async () => {
        let tried = 0;
        for (const parameter of (paths[path]!.get!.parameters ?? []).filter((parameter) => parameter.in === 'query')) {
          // Try it out in /docs pre-fills `example`: examples live in the description instead.
          expect(parameter, parameter.name).not.toHaveProperty('example');
          expect(parameter.schema, parameter.name).not.toHaveProperty('examples');
          for (const example of examplesIn(parameter.description ?? '')) {
            const response = await get(`${listUrl}?${new URLSearchParams({ [parameter.name]: example })}`);
            // page's example (2) may be past the last page of a small result; that 404 is documented too.
            expect([200, 404], `${parameter.name}=${example}: ${response.body}`).toContain(response.statusCode);
            expectConforms('GET', path, response);
            tried += 1;
          }
        }
        expect(tried).toBeGreaterThan(5);
      });

      it('accepts every documented order_by value and refuses one outside the enum', async () => {
        const orderBy = (paths[path]!.get!.parameters ?? []).find((parameter) => parameter.name === 'order_by');
        for (const value of orderBy?.schema.enum ?? []) {
          const response = await get(`${listUrl}?order_by=${encodeURIComponent(value)}`);
          expect(response.statusCode, value).toBe(200);
        }
        const refused = await get(`${listUrl}?order_by=uid`);
        expect(refused.statusCode).toBe(422);
        expectConforms('GET', path, refused);
      });

      it('answers 422 with every invalid parameter, as documented', async () => {
        const response = await get(`${listUrl}?created_from=yesterday&page=0&page_size=50`);
        expect(response.statusCode).toBe(422);
        expect(response.json().errors.map((error: { param: string }) => error.param).sort()).toEqual(['created_from', 'page', 'page_size']);
        expectConforms('GET', path, response);
      });

      it('answers 404 page_out_of_range past the last page, as documented', async () => {
        const response = await get(`${listUrl}?page=99`);
        expect(response.json().code).toBe('page_out_of_range');
        expectConforms('GET', path, response);
      });

      it('answers 401 with WWW-Authenticate without or with wrong credentials, as documented', async () => {
        for (const authorization of [null, basicAuthorization(tenant.org.uid, 'lak_wrong')]) {
          const response = await get(listUrl, authorization);
          expect(response.statusCode).toBe(401);
          expectConforms('GET', path, response);
        }
      });

      if (path !== listUrl) {
        it('answers 404 not_found naming an unknown parent record, as documented', async () => {
          const response = await get(path.replace('{uid}', 'nope_404'));
          expect(response.statusCode).toBe(404);
          expect(response.json()).toMatchObject({ code: 'not_found', detail: expect.stringContaining("uid 'nope_404'") });
          expectConforms('GET', path, response);
        });
      }
    });

    // A nested collection has no item route (documented or served).
    if (path !== listUrl) {
      it(`answers 405 with Allow for other methods on ${path}, as documented`, async () => {
        const response = await app.inject({ method: 'DELETE', url: listUrl, headers: { authorization: tenant.authorization } });
        expect(response.statusCode).toBe(405);
        expectConforms('DELETE', path, response);
      });
      continue;
    }

    describe(`GET ${itemPath}`, () => {
      it('answers the record, matching its schema', async () => {
        const response = await get(`${path}${uids[path]}/`);
        expect(response.statusCode).toBe(200);
        expectConforms('GET', itemPath, response);
      });

      it('answers 404 not_found for an unknown uid, as documented', async () => {
        const response = await get(`${path}nope_404/`);
        expect(response.json().code).toBe('not_found');
        expectConforms('GET', itemPath, response);
      });

      it('answers 401 without credentials, as documented', async () => {
        const response = await get(`${path}${uids[path]}/`, null);
        expect(response.statusCode).toBe(401);
        expectConforms('GET', itemPath, response);
      });
    });

    it(`answers 405 with Allow for other methods on ${path} and ${itemPath}, as documented`, async () => {
      for (const [template, url] of [[path, path], [itemPath, `${path}${uids[path]}/`]] as const) {
        const response = await app.inject({ method: 'DELETE', url, headers: { authorization: tenant.authorization } });
        expect(response.statusCode).toBe(405);
        expectConforms('DELETE', template, response);
      }
    });
  }

  it('answers /healthz, /readyz, /api/openapi.json and /docs without credentials, as documented', async () => {
    for (const path of ['/healthz', '/readyz', '/api/openapi.json', '/docs']) {
      const response = await get(path, null);
      expect(response.statusCode, path).toBe(200);
      expectConforms('GET', path, response);
    }
  });

  it('answers 405 with Allow for other methods on /api/openapi.json and /docs, as documented', async () => {
    for (const url of ['/api/openapi.json', '/docs']) {
      const response = await app.inject({ method: 'POST', url });
      expect(response.statusCode).toBe(405);
      expectConforms('POST', url, response);
    }
  });
});

describeEachStore('429 responses match the OpenAPI document', (store) => {
  let app: FastifyInstance;
  let tenant: Tenant;
  beforeAll(async () => {
    app = await buildApp({ store: store(), rateLimit: { perMinute: 2, authFailuresPerMinute: 2 } });
    tenant = await createTenant(store());
  });
  afterAll(async () => {
    await app.close();
  });

  it('answers 429 rate_limited with Retry-After and X-RateLimit-* once a key is over its budget', async () => {
    for (const path of collectionPaths) {
      const key = await createTenant(store());
      const statuses: number[] = [];
      for (let i = 0; i < 3; i += 1) {
        const response = await app.inject({ method: 'GET', url: path, headers: { authorization: key.authorization } });
        statuses.push(response.statusCode);
        if (response.statusCode === 429) expectConforms('GET', path, response);
      }
      expect(statuses).toEqual([200, 200, 429]);
    }
  });

  it('answers 429 to an address after repeated failed logins, as documented', async () => {
    const wrong = basicAuthorization(tenant.org.uid, 'lak_0123456789abcdef_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx');
    const path = collectionPaths[0]!;
    let last: LightMyRequestResponse | undefined;
    for (let i = 0; i < 3; i += 1) last = await app.inject({ method: 'GET', url: path, headers: { authorization: wrong }, remoteAddress: '203.0.113.9' });
    expect(last?.statusCode).toBe(429);
    expectConforms('GET', path, last!);
  });
});

describe('responses while the database is unreachable match the OpenAPI document', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildApp({ store: unreachableStore() });
  });
  afterAll(async () => {
    await app.close();
  });

  it('answers 503 with Retry-After on /readyz and on every documented GET', async () => {
    const authorization = basicAuthorization('org_x', 'lak_0123456789abcdef_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx');
    for (const [template, url] of [
      ['/readyz', '/readyz'],
      ...collectionPaths.flatMap((path) => [
        [path, path],
        [`${path}{uid}/`, `${path}some_uid/`],
      ]),
      ...nestedPaths.map((path) => [path, path.replace('{uid}', 'some_uid')]),
    ] as const) {
      const response = await app.inject({ method: 'GET', url, headers: { authorization } });
      expect(response.statusCode, `${url}: ${response.body}`).toBe(503);
      expect(contract.check('GET', template, response)).toEqual([]);
    }
  });
});

describe('GET /api/openapi.json', () => {
  it('serves the generated document without credentials', async () => {
    const app = await buildApp({ store: unreachableStore() });
    const response = await app.inject({ method: 'GET', url: '/api/openapi.json' });
    await app.close();
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json() as JsonObject).toEqual(document);
  });
});

/** The values after "for example" in a description: `a` or `b`. */
function examplesIn(description: string): string[] {
  const match = /for example ((?:`[^`]*`(?: or )?)+)/i.exec(description);
  return match?.[1] ? [...match[1].matchAll(/`([^`]*)`/g)].map((found) => found[1] ?? '') : [];
}
