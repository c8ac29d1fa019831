import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, expectTypeOf, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { LendingApiError, LendingClient, type FetchFunction, type Loan, type LoanCreated } from '../../packages/client/src/index.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { injectFetch } from '../helpers/inject-fetch.js';

const BASE_URL = 'http://lending.test:8080';

describeEachStore('LendingClient loans.create / repay / list / listAll / retrieve', (store) => {
  let app: FastifyInstance;
  let writer: Tenant;

  beforeAll(async () => {
    app = await buildApp({ store: store() });
    writer = await createTenant(store(), 'SDK lender', 'write');
    await insertCreditLimits(store(), writer.org.id, [creditLimit({ uid: 'cl_sdk_loans', capacity: '1000.00', outstanding: '0.00' })]);
    await insertPaymentMethods(store(), writer.org.id, [paymentMethod({ uid: 'pm_sdk_loans' })]);
  });
  afterAll(async () => {
    await app.close();
  });

  const clientWith = (fetch: FetchFunction) => new LendingClient({ baseUrl: BASE_URL, organizationId: writer.org.uid, apiKey: writer.apiKey, fetch, sleep: async () => {} });

  it('creates a loan (the limit moves), repays it to zero, and lists and retrieves it', async () => {
    const client = clientWith(injectFetch(app));
    const created = await client.loans.create({ credit_limit: 'cl_sdk_loans', payment_method: 'pm_sdk_loans', principal: '300.00', reference: 'sdk-1' });
    expectTypeOf(created).toEqualTypeOf<LoanCreated>();
    expect(created.loan).toMatchObject({ credit_limit: 'cl_sdk_loans', principal: 300, outstanding: 300, status: 'active', reference: 'sdk-1' });
    expect(created.limit).toMatchObject({ uid: 'cl_sdk_loans', outstanding: 300, balance: 700 });
    const repaid = await client.loans.repay(created.loan.uid, { amount: '300' });
    expect(repaid.loan).toMatchObject({ outstanding: 0, status: 'repaid' });
    expect(repaid.limit).toMatchObject({ outstanding: 0, balance: 1000 });
    expect(repaid.entry).toMatchObject({ kind: 'repayment', amount: 300, loan: created.loan.uid });
    expectTypeOf(await client.loans.retrieve(created.loan.uid)).toEqualTypeOf<Loan>();
    expect(await client.loans.retrieve(created.loan.uid)).toMatchObject({ status: 'repaid' });
    expect((await client.loans.list({ status: 'repaid', credit_limit: 'cl_sdk_loans' })).items.map((loan) => loan.uid)).toEqual([created.loan.uid]);
    const all: Loan[] = [];
    for await (const loan of client.loans.listAll({ entity: 'ent_1' })) all.push(loan);
    expect(all.map((loan) => loan.uid)).toContain(created.loan.uid);
  });

  it('sends one Idempotency-Key on every retry of a create whose answer was lost: one loan', async () => {
    const real = injectFetch(app);
    let loseNext = false;
    const fetch: FetchFunction = async (input, init) => {
      const answer = await real(input, init);
      // Served and recorded, then the connection drops before the answer arrives.
      if (loseNext) {
        loseNext = false;
        throw new TypeError('fetch failed');
      }
      return answer;
    };
    const client = clientWith(fetch);
    const before = (await client.loans.list({ credit_limit: 'cl_sdk_loans' })).count;
    loseNext = true;
    const created = await client.loans.create({ credit_limit: 'cl_sdk_loans', payment_method: 'pm_sdk_loans', principal: '10.00' });
    const keys = real.requests.filter((request) => request.url.endsWith('/api/loans/') && request.headers['idempotency-key']).map((request) => request.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(1);
    expect((await client.loans.list({ credit_limit: 'cl_sdk_loans' })).count).toBe(before + 1);
    expect(await client.loans.retrieve(created.loan.uid)).toMatchObject({ principal: 10 });
  });

  it('throws a LendingApiError for a refusal: 409 over the balance, nothing lent', async () => {
    const client = clientWith(injectFetch(app));
    const error = await client.loans.create({ credit_limit: 'cl_sdk_loans', payment_method: 'pm_sdk_loans', principal: '100000.00' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LendingApiError);
    expect(error).toMatchObject({ status: 409, code: 'insufficient_balance' });
  });
});
