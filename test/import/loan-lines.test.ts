import { expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { ImportError } from '../../src/import/index.js';
import type { Store } from '../../src/store/store.js';
import { dumpAllTables, importLines } from '../helpers/import-lines.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

async function getJson(store: Store, tenant: Tenant, url: string) {
  const app = await buildApp({ store });
  const response = await app.inject({ method: 'GET', url, headers: { authorization: tenant.authorization } });
  await app.close();
  return { status: response.statusCode, body: response.json() };
}

const BOOK = [
  { object: 'payment_method', uid: 'pm_1', entity: 'ent_1', type: 'ACH', currency: 'USD', last_2: '42' },
  { object: 'payment_method', uid: 'pm_eur', entity: 'ent_1', type: 'SEPA', currency: 'EUR', last_2: '43' },
  { object: 'payment_method', uid: 'pm_other', entity: 'ent_2', type: 'ACH', currency: 'USD', last_2: '44' },
  { object: 'credit_limit', uid: 'cl_1', entity: 'ent_1', currency: 'USD', capacity: '10000.00', rate: '0.0005' },
];

describeEachStore('importJsonl: loan lines', (store) => {
  it('loads a loan: its outstanding (principal − repaid) draws on the limit, with an entry linked to the loan', async () => {
    const tenant = await createTenant(store());
    const summary = await importLines(store(), tenant.org.uid, [
      // Before the limit and method it names: the file defines them further on.
      { object: 'loan', uid: 'ln_1', credit_limit: 'cl_1', payment_method: 'pm_1', principal: '5000.00', repaid: 1000, reference: 'ext-1', created_at: '2024-05-01T10:00:00Z' },
      ...BOOK,
      { object: 'loan', uid: 'ln_paid', credit_limit: 'cl_1', payment_method: 'pm_1', principal: '300' , repaid: '300' },
    ]);
    expect(summary.collections.loans).toEqual({ inserted: 2, updated: 0, unchanged: 0 });
    expect((await getJson(store(), tenant, '/api/loans/ln_1/')).body).toEqual({
      uid: 'ln_1',
      entity: 'ent_1',
      credit_limit: 'cl_1',
      payment_method: 'pm_1',
      currency: 'USD',
      principal: 5000,
      outstanding: 4000,
      status: 'active',
      reference: 'ext-1',
      created_at: '2024-05-01T10:00:00.000000Z',
      updated_at: expect.any(String),
    });
    expect((await getJson(store(), tenant, '/api/loans/ln_paid/')).body).toMatchObject({ outstanding: 0, status: 'repaid', reference: null });
    expect((await getJson(store(), tenant, '/api/limits/cl_1/')).body).toMatchObject({ outstanding: 4000, balance: 6000 });
    const entries = (await getJson(store(), tenant, '/api/limits/cl_1/entries/')).body;
    expect(entries.items).toEqual([expect.objectContaining({ id: 'loan:ln_1', kind: 'drawdown', amount: 4000, loan: 'ln_1', at: '2024-05-01T10:00:00.000000Z' })]);
    expect((await getJson(store(), tenant, '/api/loans/?status=REPAID')).body.items.map((loan: { uid: string }) => loan.uid)).toEqual(['ln_paid']);

    // The same file again: nothing changes.
    const before = await dumpAllTables(store());
    const again = await importLines(store(), tenant.org.uid, [
      { object: 'loan', uid: 'ln_1', credit_limit: 'cl_1', payment_method: 'pm_1', principal: '5000.00', repaid: 1000, reference: 'ext-1', created_at: '2024-05-01T10:00:00Z' },
      ...BOOK,
    ]);
    expect(again.collections.loans).toEqual({ inserted: 0, updated: 0, unchanged: 1 });
    expect(await dumpAllTables(store())).toBe(before);
  });

  it('refuses every invalid loan line at once, naming the field, and writes nothing', async () => {
    const tenant = await createTenant(store());
    await importLines(store(), tenant.org.uid, [...BOOK, { object: 'loan', uid: 'ln_1', credit_limit: 'cl_1', payment_method: 'pm_1', principal: '100.00' }]);
    const before = await dumpAllTables(store());
    const error = (await importLines(store(), tenant.org.uid, [
      { object: 'loan', uid: 'ln_a', credit_limit: 'cl_none', payment_method: 'pm_1', principal: '1.00' },
      { object: 'loan', uid: 'ln_b', credit_limit: 'cl_1', payment_method: 'pm_none', principal: '1.00' },
      { object: 'loan', uid: 'ln_c', credit_limit: 'cl_1', payment_method: 'pm_other', principal: '1.00' },
      { object: 'loan', uid: 'ln_d', credit_limit: 'cl_1', payment_method: 'pm_eur', principal: '1.00' },
      { object: 'loan', uid: 'ln_e', credit_limit: 'cl_1', payment_method: 'pm_1', principal: '9950.00' },
      { object: 'loan', uid: 'ln_f', credit_limit: 'cl_1', payment_method: 'pm_1', principal: '10.00', repaid: '20.00' },
      { object: 'loan', uid: 'ln_1', credit_limit: 'cl_1', payment_method: 'pm_1', principal: '200.00' },
      { object: 'loan', uid: 'ln_g', credit_limit: 'cl_1', payment_method: 'pm_1', principal: '1.00', status: 'active', entity: 'ent_1' },
      { object: 'loan', uid: 'ln_ok', credit_limit: 'cl_1', payment_method: 'pm_1', principal: '1.00' },
    ]).catch((e: unknown) => e)) as ImportError;
    expect(error).toBeInstanceOf(ImportError);
    expect(error.errors).toEqual([
      { line: 1, reason: "credit_limit: no credit limit 'cl_none' in this organization or this file" },
      { line: 2, reason: "payment_method: no payment method 'pm_none' in this organization or this file" },
      { line: 3, reason: "payment_method 'pm_other' belongs to entity 'ent_2', credit limit 'cl_1' to entity 'ent_1'" },
      { line: 4, reason: "payment_method 'pm_eur' is in EUR, credit limit 'cl_1' in USD" },
      { line: 5, reason: 'drawdown of 9950.00 exceeds the balance of cl_1 at this point (balance 9900.00, capacity 10000.00)' },
      { line: 6, reason: 'repaid 20.00 exceeds the principal 10.00' },
      { line: 7, reason: "loan 'ln_1' already exists with different content (principal 100.00 on cl_1); an import does not change a loan" },
      {
        line: 8,
        reason: "status cannot be imported: a loan is active while outstanding > 0, then repaid; entity cannot be imported: a loan's entity is its credit limit's",
      },
    ]);
    expect(await dumpAllTables(store())).toBe(before);
  });
});
