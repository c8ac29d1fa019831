import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import {
  LendingApiError,
  LendingClient,
  type CreditLimit,
  type CreditLimitPage,
  type ErrorCode,
  type LedgerEntryPage,
  type Page,
  type PaymentMethod,
  type PaymentMethodPage,
} from '../../packages/client/src/index.js';
import { ApiError, ERROR_CODES } from '../../src/domain/errors.js';
import { applyLedgerEntry } from '../../src/ledger/index.js';
import { ledgerOf } from '../helpers/ledger.js';
import { problemDocument } from '../../src/http/problem.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { injectFetch } from '../helpers/inject-fetch.js';
import { unreachableStore } from '../helpers/unreachable-store.js';

const BASE_URL = 'http://lending.test:8080';

describe('SDK types', () => {
  it('match the generated types and the error table', () => {
    expectTypeOf<Page<PaymentMethod>>().toEqualTypeOf<PaymentMethodPage>();
    expectTypeOf<Page<CreditLimit>>().toEqualTypeOf<CreditLimitPage>();
    expectTypeOf<ErrorCode>().toEqualTypeOf<keyof typeof ERROR_CODES>();
    const client = new LendingClient({ baseUrl: BASE_URL, organizationId: 'org', apiKey: 'key', fetch: async () => new Response('{}') });
    expectTypeOf(globalThis.fetch).toExtend<NonNullable<ConstructorParameters<typeof LendingClient>[0]['fetch']>>();
    // Parameters are checked at compile time: these lines only type-check as errors.
    // @ts-expect-error uid is not an accepted ordering
    void client.paymentMethods.list({ order_by: 'uid' });
    // @ts-expect-error credit limits have no currency filter
    void client.creditLimits.list({ currency: 'USD' });
    expect(ERROR_CODES.invalid_parameter.status).toBe(422);
  });
});

describeEachStore('LendingClient', (store) => {
  let app: FastifyInstance;
  let tenant: Tenant;
  const clientFor = (overrides: Partial<ConstructorParameters<typeof LendingClient>[0]> = {}) => {
    const fetch = injectFetch(app);
    const sleeps: number[] = [];
    const client = new LendingClient({
      baseUrl: BASE_URL,
      organizationId: tenant.org.uid,
      apiKey: tenant.apiKey,
      fetch,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      ...overrides,
    });
    return { client, requests: fetch.requests, sleeps };
  };

  beforeAll(async () => {
    app = await buildApp({ store: store() });
    tenant = await createTenant(store());
    await insertPaymentMethods(
      store(),
      tenant.org.id,
      Array.from({ length: 23 }, (_, i) =>
        paymentMethod({
          uid: `pm_sdk_${String(i).padStart(2, '0')}`,
          entity: i < 21 ? 'ent_many' : 'ent_few',
          currency: i % 2 ? 'EUR' : 'USD',
          created_at: `2024-05-01T10:00:${String(i).padStart(2, '0')}.000001Z`,
        }),
      ),
    );
    await insertCreditLimits(store(), tenant.org.id, [
      creditLimit({ uid: 'cl_sdk_usd', entity: 'ent_few', currency: 'USD', capacity: '50000.00', outstanding: '1234.56' }),
      creditLimit({ uid: 'cl_sdk_eur', entity: 'ent_few', currency: 'EUR', capacity: '1000.00', outstanding: '0.00' }),
    ]);
  });
  afterAll(async () => {
    await app.close();
  });

  describe('paymentMethods', () => {
    it('lists one page with filters, typed records and an absolute next link', async () => {
      const { client, requests } = clientFor();
      const page = await client.paymentMethods.list({ entity: 'ent_many', currency: 'usd', order_by: 'created_at' });
      expect(page.count).toBe(11);
      expect(page.items).toHaveLength(10);
      expect(page.items[0]).toMatchObject({ uid: 'pm_sdk_00', currency: 'USD', entity: 'ent_many' });
      expect(page.next).toBe(`${BASE_URL}/api/methods/?entity=ent_many&currency=usd&order_by=created_at&page=2`);
      expect(page.previous).toBeNull();
      expect(requests[0]?.headers.authorization).toBe(tenant.authorization);
    });

    it('retrieves one record by uid', async () => {
      const { client } = clientFor();
      const method = await client.paymentMethods.retrieve('pm_sdk_03');
      expect(method).toMatchObject({ uid: 'pm_sdk_03', currency: 'EUR', last_2: '42', created_at: '2024-05-01T10:00:03.000001Z' });
    });

    it('listAll yields every matching record once, walking cursor pages', async () => {
      const { client, requests } = clientFor();
      const uids: string[] = [];
      for await (const method of client.paymentMethods.listAll({ entity: 'ent_many', order_by: '-created_at' })) uids.push(method.uid);
      expect(uids).toEqual(Array.from({ length: 21 }, (_, i) => `pm_sdk_${String(20 - i).padStart(2, '0')}`));
      const queries = requests.map((request) => new URL(request.url).searchParams);
      expect(queries).toHaveLength(3);
      expect(queries[0]?.toString()).toBe('entity=ent_many&order_by=-created_at&cursor=');
      for (const query of queries.slice(1)) {
        expect(query.get('cursor')).toMatch(/.+/);
        expect(query.has('page')).toBe(false);
      }
    });

    it('listAll of an empty result yields nothing', async () => {
      const { client } = clientFor();
      const all = [];
      for await (const method of client.paymentMethods.listAll({ entity: 'nobody' })) all.push(method);
      expect(all).toEqual([]);
    });

    it('throws a LendingApiError with every invalid parameter for a 422', async () => {
      const { client } = clientFor();
      const error = await client.paymentMethods.list({ created_from: 'yesterday', currency: 'XYZ' }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(LendingApiError);
      const apiError = error as LendingApiError;
      expect(apiError).toMatchObject({ status: 422, code: 'invalid_parameter', title: 'Invalid query parameter' });
      expect(apiError.type).toBe('https://lending-api.dev/problems/invalid-parameter');
      expect(apiError.errors.map((item) => item.param).sort()).toEqual(['created_from', 'currency']);
      expect(apiError.requestId).toMatch(/.+/);
    });

    it('throws not_found for another organization’s record', async () => {
      const other = await createTenant(store(), 'Other Lender');
      const { client } = clientFor({ organizationId: other.org.uid, apiKey: other.apiKey });
      await expect(client.paymentMethods.retrieve('pm_sdk_03')).rejects.toMatchObject({ status: 404, code: 'not_found' });
    });

    it('throws page_out_of_range with the last page past the end', async () => {
      const { client } = clientFor();
      const error = (await client.paymentMethods.list({ entity: 'ent_many', page: 9 }).catch((caught: unknown) => caught)) as LendingApiError;
      expect(error).toMatchObject({ status: 404, code: 'page_out_of_range' });
      expect(error.problem?.last_page).toBe(3);
    });

    it('throws unauthorized for a wrong key, without retrying', async () => {
      const { client, requests } = clientFor({ apiKey: 'lak_0000000000000000_wrong' });
      await expect(client.paymentMethods.list()).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
      expect(requests).toHaveLength(1);
    });
  });

  describe('creditLimits', () => {
    it('lists, retrieves and iterates with decimals as numbers', async () => {
      const { client } = clientFor();
      const page = await client.creditLimits.list({ entity: 'ent_few', order_by: '-balance' });
      expect(page.items.map((limit) => [limit.uid, limit.balance])).toEqual([
        ['cl_sdk_usd', 48765.44],
        ['cl_sdk_eur', 1000],
      ]);
      expect(await client.creditLimits.retrieve('cl_sdk_usd')).toMatchObject({ capacity: 50000, outstanding: 1234.56, rate: 0.0005 });
      const all = [];
      for await (const limit of client.creditLimits.listAll({ entity: 'ent_few' })) all.push(limit.uid);
      expect(all.sort()).toEqual(['cl_sdk_eur', 'cl_sdk_usd']);
    });

    it("lists and walks one limit's entries, typed, through creditLimits.entries(uid)", async () => {
      for (let i = 0; i < 13; i += 1) {
        await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: 'drawdown', id: `sdk_dd_${String(i).padStart(2, '0')}`, limit: 'cl_sdk_eur', amount: '10.25' });
      }
      const { client, requests } = clientFor();
      const page = await client.creditLimits.entries('cl_sdk_eur').list({ order_by: 'at' });
      expectTypeOf(page).toEqualTypeOf<LedgerEntryPage>();
      expect(page.count).toBe(13);
      expect(page.items[0]).toMatchObject({ id: 'sdk_dd_00', kind: 'drawdown', amount: 10.25, key_id: null, reference: null });
      const ids: string[] = [];
      for await (const entry of client.creditLimits.entries('cl_sdk_eur').listAll()) ids.push(entry.id);
      expect(ids).toEqual(Array.from({ length: 13 }, (_, i) => `sdk_dd_${String(12 - i).padStart(2, '0')}`));
      expect(requests.at(-1)?.url).toMatch(/^http:\/\/lending\.test:8080\/api\/limits\/cl_sdk_eur\/entries\/\?cursor=./);
      await expect(client.creditLimits.entries('cl_nowhere').list()).rejects.toMatchObject({ status: 404, code: 'not_found' });
    });
  });

  it('sends credentials only to its base URL, even when next links name another host', async () => {
    const publicApp = await buildApp({ store: store(), publicUrl: 'https://elsewhere.example' });
    try {
      const fetch = injectFetch(publicApp);
      const client = new LendingClient({ baseUrl: `${BASE_URL}/`, organizationId: tenant.org.uid, apiKey: tenant.apiKey, fetch });
      const first = await client.paymentMethods.list({ entity: 'ent_many' });
      expect(first.next).toMatch(/^https:\/\/elsewhere\.example\/api\/methods\//);
      let count = 0;
      for await (const _ of client.paymentMethods.listAll({ entity: 'ent_many' })) count += 1;
      expect(count).toBe(21);
      expect(fetch.requests.every((request) => request.url.startsWith(`${BASE_URL}/api/methods/`))).toBe(true);
    } finally {
      await publicApp.close();
    }
  });

  describe('retries', () => {
    let downApp: FastifyInstance;
    beforeAll(async () => {
      downApp = await buildApp({ store: unreachableStore() });
    });
    afterAll(async () => {
      await downApp.close();
    });

    it('retries a 503 after its Retry-After and succeeds once the database is back', async () => {
      let calls = 0;
      const fetch = injectFetch(() => (++calls <= 2 ? downApp : app));
      const { client, sleeps } = clientFor({ fetch });
      const method = await client.paymentMethods.retrieve('pm_sdk_01');
      expect(method.uid).toBe('pm_sdk_01');
      expect(sleeps).toEqual([1000, 1000]);
      expect(fetch.requests).toHaveLength(3);
    });

    // The rate limiter has its own suite; here a 429 exactly as the server
    // writes it (problemDocument) stands in front of the real app.
    const rateLimitedThen = (retryAfter: string | undefined, times = 1) => {
      const real = injectFetch(app);
      let calls = 0;
      const fetch = async (input: string, init: { method: string; headers: Record<string, string> }) => {
        calls += 1;
        if (calls > times) return real(input, init);
        const problem = problemDocument(new ApiError('rate_limited', 'too many requests for this API key'), `req-429-${calls}`);
        const headers: Record<string, string> = { 'content-type': 'application/problem+json', 'x-request-id': problem.request_id };
        if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
        return new Response(JSON.stringify(problem), { status: 429, headers });
      };
      return Object.assign(fetch, { calls: () => calls });
    };
    it('waits the Retry-After of a 429 before retrying', async () => {
      const fetch = rateLimitedThen('7');
      const { client, sleeps } = clientFor({ fetch });
      const page = await client.creditLimits.list({ entity: 'ent_few' });
      expect(page.count).toBe(2);
      expect(sleeps).toEqual([7000]);
      expect(fetch.calls()).toBe(2);
    });

    it('backs off with growing waits when a 429 has no Retry-After', async () => {
      const fetch = rateLimitedThen(undefined, 2);
      const { client, sleeps } = clientFor({ fetch });
      await client.paymentMethods.retrieve('pm_sdk_01');
      expect(sleeps).toHaveLength(2);
      expect(sleeps[0]).toBeGreaterThanOrEqual(250);
      expect(sleeps[0]).toBeLessThanOrEqual(500);
      expect(sleeps[1]).toBeGreaterThanOrEqual(500);
      expect(sleeps[1]).toBeLessThanOrEqual(1000);
    });

    it('throws at once when the Retry-After is longer than it may wait', async () => {
      const fetch = rateLimitedThen('120');
      const { client, sleeps } = clientFor({ fetch });
      const error = (await client.paymentMethods.list().catch((caught: unknown) => caught)) as LendingApiError;
      expect(error).toMatchObject({ status: 429, code: 'rate_limited', retryAfterSeconds: 120, requestId: 'req-429-1' });
      expect(sleeps).toEqual([]);
      expect(fetch.calls()).toBe(1);
    });

    it('gives up after maxAttempts and throws the 503', async () => {
      const fetch = injectFetch(downApp);
      const { client, sleeps } = clientFor({ fetch, retry: { maxAttempts: 3 } });
      const error = (await client.creditLimits.list().catch((caught: unknown) => caught)) as LendingApiError;
      expect(error).toMatchObject({ status: 503, code: 'service_unavailable', retryAfterSeconds: 1 });
      expect(fetch.requests).toHaveLength(3);
      expect(sleeps).toEqual([1000, 1000]);
    });
  });
});

describeEachStore('LendingClient against the real rate limiter', (store) => {
  let app: FastifyInstance;
  let tenant: Tenant;
  beforeAll(async () => {
    app = await buildApp({ store: store(), rateLimit: { perMinute: 1, authFailuresPerMinute: 0 } });
    tenant = await createTenant(store());
  });
  afterAll(async () => {
    await app.close();
  });

  it('surfaces a real 429 with its Retry-After instead of waiting most of a minute', async () => {
    const sleeps: number[] = [];
    const client = new LendingClient({
      baseUrl: BASE_URL,
      organizationId: tenant.org.uid,
      apiKey: tenant.apiKey,
      fetch: injectFetch(app),
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
    expect((await client.paymentMethods.list()).count).toBe(0);
    const error = (await client.creditLimits.list().catch((caught: unknown) => caught)) as LendingApiError;
    expect(error).toBeInstanceOf(LendingApiError);
    expect(error).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(error.retryAfterSeconds).toBeGreaterThan(30);
    expect(error.retryAfterSeconds).toBeLessThanOrEqual(60);
    expect(sleeps).toEqual([]);
  });
});
